// The public two-sided API (axon/p2p.hpp): argument checks and the engine of this PE.
#include "axon/p2p.hpp"

#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "p2p/engine.hpp"

namespace axon {
namespace {

p2p::Engine& engine(const char* api) { return peContext(api).messages(); }

}  // namespace

bool Request::test(Status* status) {
  if (!op_) throw Error(ErrorCode::InvalidArgument, "axon: test on an invalid (empty) request");
  if (!op_->done()) peContext("test").progress();
  if (!op_->done()) return false;
  op_->rethrow();
  if (status) *status = op_->status;
  return true;
}

Status Request::wait() {
  if (!op_) throw Error(ErrorCode::InvalidArgument, "axon: wait on an invalid (empty) request");
  return engine("wait").wait(*op_);
}

void send(const void* buf, std::size_t bytes, int dest, int tag, const Team& team) {
  p2p::Engine& e = engine("send");
  auto op = e.isend(detail::requireValidTeam(team, "send"), buf, bytes, dest, tag, "send");
  e.wait(*op);
}

Status recv(void* buf, std::size_t capacity, int source, int tag, const Team& team) {
  p2p::Engine& e = engine("recv");
  auto op = e.irecv(detail::requireValidTeam(team, "recv"), buf, capacity, source, tag, "recv");
  return e.wait(*op);
}

Request isend(const void* buf, std::size_t bytes, int dest, int tag, const Team& team) {
  return Request(engine("isend").isend(detail::requireValidTeam(team, "isend"), buf, bytes, dest, tag, "isend"));
}

Request irecv(void* buf, std::size_t capacity, int source, int tag, const Team& team) {
  return Request(engine("irecv").irecv(detail::requireValidTeam(team, "irecv"), buf, capacity, source, tag, "irecv"));
}

void waitAll(Request* requests, std::size_t count) {
  p2p::Engine& e = engine("wait_all");
  std::optional<Error> first;
  for (std::size_t i = 0; i < count; ++i) {
    Request& r = requests[i];
    if (!r.valid()) continue;
    try {
      e.wait(*r.operation());
    } catch (const Error& err) {
      if (!first) first = err;
    }
  }
  if (first) throw *first;
}

std::size_t waitAny(Request* requests, std::size_t count, Status* status) {
  p2p::Engine& e = engine("wait_any");
  std::vector<p2p::Operation*> ops;
  for (std::size_t i = 0; i < count; ++i) ops.push_back(requests[i].valid() ? requests[i].operation().get() : nullptr);
  const std::size_t i = e.waitAny(ops);
  ops[i]->rethrow();
  if (status) *status = ops[i]->status;
  return i;
}

Status probe(int source, int tag, const Team& team) {
  return engine("probe").probe(detail::requireValidTeam(team, "probe"), source, tag, "probe");
}

std::optional<Status> iprobe(int source, int tag, const Team& team) {
  return engine("iprobe").iprobe(detail::requireValidTeam(team, "iprobe"), source, tag, "iprobe");
}

MessageStats messageStats() { return engine("message_stats").stats(); }

std::string explainMessage(std::size_t bytes, int dest, bool onDevice, const Team& team) {
  return engine("explain_message").explain(detail::requireValidTeam(team, "explain_message"), bytes, dest, onDevice);
}

}  // namespace axon
