// axon: the whole C++ host API.
#pragma once

#include "axon/collectives.hpp"
#include "axon/error.hpp"
#include "axon/gpu.hpp"
#include "axon/memory.hpp"
#include "axon/onesided.hpp"
#include "axon/p2p.hpp"
#include "axon/runtime.hpp"
#include "axon/team.hpp"
