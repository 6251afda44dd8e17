// Argument checks shared by the host one-sided API and its stream-ordered forms: each throws
// InvalidArgument naming the call (`api`) and the argument.
#pragma once

#include <cstddef>
#include <cstdint>

#include "axon/onesided.hpp"
#include "transport/transport.hpp"

namespace axon {

class PeContext;

// The local side of a transfer: null only when nothing is moved.
void checkLocal(const void* p, std::size_t bytes, const char* api, const char* role);
void checkSignalOp(SignalOp op, const char* api);
void checkCmp(Cmp cmp, const char* api);
// A signal word of PE `pe`: symmetric, inside an allocation, 8-byte aligned.
RemoteRef resolveSignal(PeContext& rt, const std::uint64_t* sig, int pe, const char* api);

}  // namespace axon
