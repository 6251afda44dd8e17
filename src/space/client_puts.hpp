// A staging-space client's puts: a block is checked against its variable, split by placement into
// one row range per server, and each part takes the cheapest path to its server: a copy into the
// mapped arena of a server on this node (reserve, copy, commit), a batch (small nonblocking host
// puts, client_batches), one message, or, for large GPU parts to another node with
// GpuPath::Direct, a pipeline of chunks through pinned host buffers into one reservation.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "axon/space.hpp"
#include "space/box.hpp"
#include "space/client_parts.hpp"

namespace axon::space {

class Puts {
 public:
  explicit Puts(const ClientParts& parts) : parts_(parts) {}

  // put (blocking: nullptr back once stored) and iput (the request to wait for).
  std::shared_ptr<Request::State> iput(const std::string& name, std::int64_t version, const Index& offset,
                                       const Index& count, const void* data, double timeoutSec, bool blocking);

 private:
  void putPart(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
               const char* data, std::uint64_t bytes, bool device, bool mayBatch);
  void putPipelined(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
                    const char* data, std::uint64_t bytes);
  // Reserves room for the part on server s (waiting up to timeoutMs there for memory): the
  // reservation, and where it lies in the server's arena.
  std::pair<std::uint64_t, std::uint64_t> reserve(Request::State& st, int s, const std::string& name,
                                                  std::int64_t version, const Box& part, std::uint64_t timeoutMs);
  // Makes the filled reservation visible; the request waits for the answer.
  void commit(Request::State& st, int s, std::uint64_t reservation);
  // Tells server s that the reservation will not be filled (its memory goes back).
  void abort(int s, std::uint64_t reservation);

  const ClientParts parts_;
};

}  // namespace axon::space
