// Who may speak to a staging server (server_gate.hpp).
#include "space/server_gate.hpp"

#include <algorithm>
#include <cstdio>

#include "axon/error.hpp"
#include "core/log.hpp"
#include "space/protocol.hpp"

namespace axon::space {

namespace {
// A refused connection stays open this long, so that its PermissionDenied reaches the client
// before the close (a forced close drops what is still queued).
constexpr auto kRefusalLinger = std::chrono::milliseconds(250);
constexpr auto kReportEvery = std::chrono::seconds(1);
}  // namespace

Gate::Gate(rpc::Node& node, std::string address, Secret key, double timeoutSec)
    : node_(node),
      address_(std::move(address)),
      key_(std::move(key)),
      handshake_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(std::clamp(timeoutSec, 0.001, kHandshakeSec)))) {}

void Gate::accepted(rpc::ConnId c) {
  if (waiting_.size() >= kMaxWaiting) {
    ++refusals_;
    report(node_.describe(c) + ": " + std::to_string(kMaxWaiting) +
           " connections are already waiting to prove the space's key; closed at once");
    node_.close(c);
    return;
  }
  Waiting w;
  w.nonce = makeNonce();
  w.deadline = Clock::now() + handshake_;
  waiting_[c] = w;
  node_.send(c, handshake::greeting(w.nonce), nullptr, 0, rpc::Memory::Host, [](const std::string&) {});
}

std::optional<Gate::Admission> Gate::admit(rpc::ConnId c, std::string_view header) {
  auto it = waiting_.find(c);
  if (it == waiting_.end()) {
    // Refused already (its later messages are dropped unread), or never greeted (too many waited).
    if (!refused_.count(c)) refuse(c, 0, "it was not greeted (too many connections waited)");
    return std::nullopt;
  }
  const Nonce serverNonce = it->second.nonce;
  waiting_.erase(it);
  // The head first (fixed size), so that a refusal reaches a request that asked for an answer.
  protocol::Head head;
  try {
    wire::ByteReader r(header);
    head = protocol::readHead(r);
  } catch (const wire::Malformed& e) {
    refuse(c, 0, std::string("its first message is not a staging-space request (") + e.what() + ")");
    return std::nullopt;
  }
  if (head.op != protocol::Op::Hello && head.op != protocol::Op::Join) {
    refuse(c, head.id, std::string("its first message is a ") + protocol::opName(head.op) +
                           " request, not a Hello or a Join that proves the space's key");
    return std::nullopt;
  }
  handshake::Opening o;
  try {
    o = handshake::readOpening(header);
  } catch (const wire::Malformed& e) {
    refuse(c, head.id, std::string("its ") + protocol::opName(head.op) + " carries no proof of the space's key (" +
                           e.what() + ")");
    return std::nullopt;
  }
  // The proof first: no claim of a connection that did not prove the key is ever read.
  const handshake::Proofs p = handshake::prove(key_, o.head.op, serverNonce, o.clientNonce, o.claims);
  if (!handshake::sameProof(p.client, o.proof)) {
    refuse(c, o.head.id, "it did not prove the space's key");
    return std::nullopt;
  }
  admitted_.insert(c);
  return Admission{o, p.server};
}

void Gate::refuse(rpc::ConnId c, std::uint64_t id, const std::string& why) {
  ++refusals_;
  waiting_.erase(c);
  report(node_.describe(c) + ": " + why);
  if (id) {
    const std::string message = "staging server " + address_ + " refused the connection: " + why;
    node_.send(c, protocol::beginReply(id, static_cast<int>(ErrorCode::PermissionDenied), message).bytes(), nullptr,
               0, rpc::Memory::Host, [](const std::string&) {});
  }
  refused_[c] = Clock::now() + kRefusalLinger;
}

void Gate::expire(Clock::time_point now) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (now < it->second.deadline) {
      ++it;
      continue;
    }
    const rpc::ConnId c = it->first;
    it = waiting_.erase(it);
    ++refusals_;
    report(node_.describe(c) + ": it did not prove the space's key within " +
           secondsText(std::chrono::duration<double>(handshake_).count()));
    close(c);
  }
  for (auto it = refused_.begin(); it != refused_.end();) {
    if (now < it->second) {
      ++it;
      continue;
    }
    const rpc::ConnId c = it->first;
    it = refused_.erase(it);
    node_.close(c);
  }
}

void Gate::forget(rpc::ConnId c) {
  waiting_.erase(c);
  refused_.erase(c);
  admitted_.erase(c);
}

void Gate::close(rpc::ConnId c) {
  forget(c);
  node_.close(c);
}

void Gate::report(const std::string& line) {
  const auto now = Clock::now();
  if (lastReport_ != Clock::time_point{} && now - lastReport_ < kReportEvery) {
    ++unreported_;
    return;
  }
  std::string text = "staging server " + address_ + " refused " + line;
  if (unreported_) text += " (and " + std::to_string(unreported_) + " more refusals since the last such line)";
  unreported_ = 0;
  lastReport_ = now;
  if (logThreshold() >= static_cast<int>(LogLevel::Warn)) std::fprintf(stderr, "axon space: warn: %s\n", text.c_str());
}

}  // namespace axon::space
