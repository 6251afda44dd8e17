// A staging-space client that speaks the protocol raw over rpc::Node, one request at a time, for
// tests of what a server does with requests the real client never sends: another client's
// reservation, messages before the key is proved, a wrong proof, a replayed one.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "axon/space_server.hpp"
#include "core/build_version.hpp"
#include "space/handshake.hpp"
#include "space/protocol.hpp"
#include "transport/rpc.hpp"

namespace axon::space::test {

struct Answer {
  int status = -1;
  std::string message;
  std::string rest;  // the reply's fields after status and message
  bool closed = false;  // the server closed the connection instead of answering
  bool none = false;    // neither an answer nor a close within the wait
};

class RawClient {
 public:
  // Connects and waits for the server's greeting; `hello` (with `keyHex`) then proves the key.
  explicit RawClient(const std::string& address) : node_(rpc::makeNode("test client")) {
    node_->setHandlers({[this](rpc::ConnId, std::string header, rpc::Payload p) {
                          node_->drop(p);
                          if (auto n = handshake::readGreeting(header)) {
                            greeting_ = *n;
                            return;
                          }
                          wire::ByteReader r(header);
                          const protocol::Head h = protocol::readHead(r);
                          Answer a;
                          a.status = r.i32();
                          a.message = r.str();
                          a.rest = std::string(r.rest());
                          answers_[h.id] = a;
                        },
                        [this](rpc::ConnId, const std::string&) { closed_ = true; }, nullptr});
    conn_ = node_->connect(address);
    progressUntil([this] { return greeting_.has_value(); }, std::chrono::seconds(10));
  }

  // Connects and proves `keyHex`; the server's answer must prove it too.
  static std::unique_ptr<RawClient> introduced(const std::string& address, const std::string& keyHex) {
    auto c = std::make_unique<RawClient>(address);
    const Answer a = c->hello(Secret::fromHex(keyHex, "test key"));
    EXPECT_EQ(a.status, 0) << a.message;
    return c;
  }

  const std::optional<Nonce>& greeting() const { return greeting_; }
  bool closed() const { return closed_; }

  // A Hello proved with `key` over the greeting's nonce (or `nonce`, to replay an old one).
  Answer hello(const Secret& key, std::optional<Nonce> nonce = std::nullopt) {
    wire::ByteWriter claims;
    claims.str(buildVersion()).str("test-node").u32(static_cast<std::uint32_t>(::getpid()));
    Digest expect{};
    std::string opening = handshake::opening(protocol::Op::Hello, key, nonce ? *nonce : greeting_.value_or(Nonce{}),
                                             claims.bytes(), expect);
    Answer a = callRaw(std::move(opening));
    if (a.status == 0) {
      wire::ByteReader r(a.rest);
      serverProved_ = handshake::sameProof(expect, handshake::readProof(r));
    }
    return a;
  }
  // Whether the server's answer to hello() carried its proof of the key.
  bool serverProved() const { return serverProved_; }

  Answer call(const wire::ByteWriter& w, const void* data = nullptr, std::size_t bytes = 0,
              std::chrono::milliseconds wait = std::chrono::seconds(10)) {
    return callRaw(w.bytes(), data, bytes, wait);
  }

  Answer callRaw(std::string header, const void* data = nullptr, std::size_t bytes = 0,
                 std::chrono::milliseconds wait = std::chrono::seconds(10)) {
    const std::uint64_t id = ++lastId_;
    std::memcpy(header.data() + 8, &id, 8);
    node_->send(conn_, std::move(header), data, bytes, rpc::Memory::Host, [](const std::string&) {});
    progressUntil([&] { return answers_.count(id) || closed_; }, wait);
    if (!answers_.count(id)) {
      Answer a;
      a.closed = closed_;
      a.none = !closed_;
      return a;
    }
    Answer a = answers_[id];
    answers_.erase(id);
    return a;
  }

  // Lets UCX deliver until the server closes the connection, or `d` has passed; whether it did.
  bool waitClosed(std::chrono::milliseconds d) {
    progressUntil([this] { return closed_; }, d);
    return closed_;
  }

  std::uint64_t reserve(const std::string& name, std::int64_t version, const Box& box) {
    wire::ByteWriter w = protocol::begin(protocol::Op::Reserve, 0);
    w.str(name).i64(version);
    protocol::writeBox(w, box);
    w.u64(1000);
    const Answer a = call(w);
    EXPECT_EQ(a.status, 0) << a.message;
    wire::ByteReader r(a.rest);
    return a.status == 0 ? r.u64() : 0;
  }

  Answer write(std::uint64_t reservation, std::uint64_t at, const void* data, std::size_t bytes) {
    wire::ByteWriter w = protocol::begin(protocol::Op::Write, 0);
    w.u64(reservation).u64(at);
    return call(w, data, bytes);
  }

  Answer commit(std::uint64_t reservation) {
    wire::ByteWriter w = protocol::begin(protocol::Op::Commit, 0);
    w.u64(reservation);
    return call(w);
  }

 private:
  template <class F>
  void progressUntil(F done, std::chrono::milliseconds wait) {
    const auto end = std::chrono::steady_clock::now() + wait;
    while (!done() && std::chrono::steady_clock::now() < end) {
      if (!node_->progress()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::unique_ptr<rpc::Node> node_;
  rpc::ConnId conn_ = 0;
  std::uint64_t lastId_ = 0;
  std::map<std::uint64_t, Answer> answers_;
  std::optional<Nonce> greeting_;
  bool closed_ = false;
  bool serverProved_ = false;
};

}  // namespace axon::space::test
