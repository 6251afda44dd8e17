// Small nonblocking puts, gathered per server into one message (a PutBatch) instead of one each:
// a batch goes out when it is full or its item list nears what a message header may hold, and
// every batch goes out before anything waits (a get, a request's wait, close), so that waiting
// never depends on more puts coming. AXON_SPACE_BATCH (or ConnectOptions::batchBytes) sizes it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "axon/space.hpp"
#include "space/box.hpp"
#include "space/client_connection.hpp"

namespace axon::space {

class StatsBook;

struct Batch {
  wire::ByteWriter items;
  std::uint32_t count = 0;
  std::vector<char> data;
  std::shared_ptr<Call> call;  // set once sent
  Clock::time_point deadline;  // the earliest of its puts'
};

class Batcher {
 public:
  Batcher(Connection& conn, StatsBook& stats, std::uint64_t batchBytes)
      : conn_(conn), stats_(stats), batchBytes_(batchBytes) {}

  // Whether a part of `bytes` of a nonblocking put travels in a batch (batchBytes 0: never).
  bool takes(std::uint64_t bytes) const { return batchBytes_ > 0 && bytes <= batchBytes_; }
  // Copies the part into server s's batch; the request remembers the batch, to wait for it.
  void add(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
           const char* data, std::uint64_t bytes);
  // Sends every batch that has not gone yet.
  void flush();

 private:
  void send(int s, const std::shared_ptr<Batch>& b);

  Connection& conn_;
  StatsBook& stats_;
  const std::uint64_t batchBytes_;
  std::mutex mu_;  // batches_
  std::map<int, std::shared_ptr<Batch>> batches_;
};

}  // namespace axon::space
