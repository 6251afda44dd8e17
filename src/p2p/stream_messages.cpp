// Stream-ordered two-sided messages (axon/p2p.hpp: sendOnStream, recvOnStream, groupStart,
// groupEnd). Each call is checked and numbered when the program makes it (the number pairs it
// with the peer's call, p2p/engine.hpp), then handed to the GPU backend's stream-ordered host
// worker: when the stream gets there the worker posts the sends and receives and polls them,
// serving other streams meanwhile, and the stream goes on once all have ended.
#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "axon/p2p.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "core/wait.hpp"
#include "p2p/engine.hpp"
#include "transport/message_operation.hpp"
#include "core/env.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon {
namespace {

struct StreamCall {
  bool send;
  void* buf;
  std::uint64_t bytes;
  int peer;
  int number;  // the pairing tag
  Team team;
};

// The calls of the thread's open group. A group's calls share one stream.
struct Group {
  int depth = 0;
  Stream stream = nullptr;
  std::vector<StreamCall> calls;
};
thread_local Group group;

std::string me(PeContext& rt) { return "PE " + std::to_string(rt.myPe()) + ": "; }

std::string describe(const std::vector<StreamCall>& calls) {
  if (calls.size() == 1) {
    const StreamCall& c = calls[0];
    return std::string(c.send ? "send_on_stream of " : "recv_on_stream of up to ") + std::to_string(c.bytes) +
           " B " + (c.send ? "to " : "from ") + std::to_string(c.peer) + " (call " + std::to_string(c.number) + ")";
  }
  std::size_t sends = 0;
  for (const StreamCall& c : calls) sends += c.send;
  return "group of " + std::to_string(sends) + " send_on_stream and " + std::to_string(calls.size() - sends) +
         " recv_on_stream calls";
}

// Enqueues `calls` on `stream` as one step: posted together, ended together.
void enqueue(PeContext& rt, std::vector<StreamCall> calls, Stream stream) {
  double timeoutSec = 0;  // the longest of the calls' teams' bounds
  for (const StreamCall& c : calls) timeoutSec = std::max(timeoutSec, waitBound(rt, c.team.valid() ? c.team.state()->ownTimeout() : 0));
  const std::string what = describe(calls);
  auto start = [calls = std::move(calls), timeoutSec]() -> GpuBackend::HostCompletion {
    p2p::Engine& e = peContext("stream-ordered message").messages();
    auto ops = std::make_shared<std::vector<std::shared_ptr<p2p::Operation>>>();
    for (const StreamCall& c : calls) {
      const char* api = c.send ? "send_on_stream" : "recv_on_stream";
      const detail::TeamState& team = detail::requireValidTeam(c.team, api);
      ops->push_back(c.send ? e.isend(team, c.buf, c.bytes, c.peer, c.number, api, true)
                            : e.irecv(team, c.buf, c.bytes, c.peer, c.number, api, true));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                                 std::chrono::duration<double>(timeoutSec));
    // Ended once every call has: a call that failed on its own (Truncated) leaves the others to
    // end before the stream goes on, so none writes a buffer the stream's later work uses. A
    // timeout or a dead PE ends the wait at once.
    auto failure = std::make_shared<std::optional<Error>>();
    return [&e, ops, deadline, failure]() {
      bool all = true;
      for (const auto& op : *ops) {
        try {
          all = e.ended(*op, deadline) && all;
        } catch (const Error& err) {
          if (err.code() == ErrorCode::Timeout || err.code() == ErrorCode::PeerDead) throw;
          if (!*failure) *failure = err;
        }
      }
      if (all && *failure) throw **failure;
      return all;
    };
  };
  rt.gpu()->enqueueHostOp(stream, std::move(start), what);
}

void call(bool send, void* buf, std::size_t bytes, int peer, Stream stream, const Team& team) {
  const char* api = send ? "send_on_stream" : "recv_on_stream";
  PeContext& rt = peContext(api);
  const detail::TeamState& state = detail::requireValidTeam(team, api);
  if (!rt.gpu()) {
    throw Error(ErrorCode::Unsupported, me(rt) + api + ": stream-ordered messages need the GPU backend, which is off (" +
                                            rt.gpuUnavailableReason() + "); use send/recv");
  }
  const int n = static_cast<int>(state.members.size());
  if (peer < 0 || peer >= n) {
    throw Error(ErrorCode::InvalidPe, me(rt) + api + ": " + (send ? "dest " : "source ") + std::to_string(peer) +
                                          " is outside team " + state.name + " [0, " + std::to_string(n) +
                                          ") (stream-ordered receives name their source)");
  }
  if (!buf && bytes) {
    throw Error(ErrorCode::InvalidArgument, me(rt) + api + ": buf is null with " + std::to_string(bytes) + " bytes");
  }
  if (group.depth > 0 && !group.calls.empty() && group.stream != stream) {
    throw Error(ErrorCode::InvalidArgument, me(rt) + api + ": a group's calls share one stream; this one names another " +
                                                "stream than the group's first call");
  }
  StreamCall c{send, buf, bytes, peer, rt.messages().streamCallNumber(state, peer, send), team};
  if (group.depth > 0) {
    group.stream = stream;
    group.calls.push_back(std::move(c));
    return;
  }
  enqueue(rt, {std::move(c)}, stream);
}

}  // namespace

void sendOnStream(const void* buf, std::size_t bytes, int dest, Stream stream, const Team& team) {
  call(true, const_cast<void*>(buf), bytes, dest, stream, team);
}

void recvOnStream(void* buf, std::size_t capacity, int source, Stream stream, const Team& team) {
  call(false, buf, capacity, source, stream, team);
}

void groupStart() {
  peContext("group_start");
  ++group.depth;
}

void groupEnd() {
  PeContext& rt = peContext("group_end");
  if (group.depth == 0) {
    throw Error(ErrorCode::InvalidArgument, me(rt) + "group_end without a group_start on this thread");
  }
  if (--group.depth > 0) return;
  std::vector<StreamCall> calls;
  calls.swap(group.calls);
  if (calls.empty()) return;
  enqueue(rt, std::move(calls), group.stream);
}

}  // namespace axon
