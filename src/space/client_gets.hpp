// A staging-space client's gets, in one direction: the box is checked and cut by placement, each
// server is asked for its parts (a query, which waits there for parts still being written and
// answers with the fragments and a lease that pins them), then, once every answer is in, the
// reassembly is planned (assembly.hpp) and run: fragments fetched over UCX or read from mapped
// arenas, copied into the caller's buffer by host threads or one fused kernel for GPU memory,
// and the leases ended.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "axon/space.hpp"
#include "space/box.hpp"
#include "space/client_parts.hpp"

namespace axon::space {

struct Call;

class Gets {
 public:
  explicit Gets(const ClientParts& parts) : parts_(parts) {}

  // get (blocking: nullptr back once `out` holds the box) and iget (the request to wait for).
  std::shared_ptr<Request::State> iget(const std::string& name, std::int64_t version, const Index& lo,
                                       const Index& hi, void* out, std::size_t outBytes, double timeoutSec,
                                       bool blocking);

 private:
  using Queries = std::vector<std::pair<int, std::shared_ptr<Call>>>;  // (server, its query)
  // Every query answered: fetch the fragments (or read them from mapped arenas) and copy the box.
  void assemble(Request::State& st, const Queries& queries, const Box& box, std::size_t elem, unsigned char* out,
                bool device);

  const ClientParts parts_;
};

}  // namespace axon::space
