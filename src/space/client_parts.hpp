// What a client's puts and gets (client_puts, client_gets) work with: the parts of the client
// they share, made and owned by Client::Impl (client.cpp), which outlives them.
#pragma once

#include "axon/space.hpp"

namespace axon::space {

class Batcher;
class Catalog;
class Connection;
class GpuSide;
class Requests;
class StatsBook;

struct ClientParts {
  GpuPath gpuPath;
  Connection& conn;
  GpuSide* gpu;  // nullptr where there is no GPU
  Catalog& catalog;
  Requests& requests;
  Batcher& batches;
  StatsBook& stats;
};

}  // namespace axon::space
