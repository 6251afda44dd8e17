// The staging server's Write request (the chunks of a pipelined GPU put), spoken raw over
// rpc::Node against a server on a thread of this process: chunks land at their offsets in the
// writer's reservation and are visible only at its commit; a write into another client's
// reservation or past the reservation's end, and a commit by another client, are refused with
// words, and the server goes on serving.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "axon/error.hpp"
#include "axon/space.hpp"
#include "core/build_version.hpp"
#include "space/protocol.hpp"
#include "axon/space_server.hpp"
#include "transport/rpc.hpp"

namespace axon::space {
namespace {

using protocol::Op;

struct Answer {
  int status = -1;
  std::string message;
  std::string rest;  // the reply's fields after status and message
};

// One connection to a server, one request at a time.
class RawClient {
 public:
  explicit RawClient(const std::string& address) : node_(rpc::makeNode("test client")) {
    node_->setHandlers({[this](rpc::ConnId, std::string header, rpc::Payload p) {
                          node_->drop(p);
                          wire::ByteReader r(header);
                          const protocol::Head h = protocol::readHead(r);
                          Answer a;
                          a.status = r.i32();
                          a.message = r.str();
                          a.rest = std::string(r.rest());
                          answers_[h.id] = a;
                        },
                        [](rpc::ConnId, const std::string&) {}, nullptr});
    conn_ = node_->connect(address);
    wire::ByteWriter w = protocol::begin(Op::Hello, 0);
    w.str(buildVersion()).str("test-node").u32(static_cast<std::uint32_t>(::getpid()));
    const Answer a = call(w);
    EXPECT_EQ(a.status, 0) << a.message;
  }

  Answer call(wire::ByteWriter& w, const void* data = nullptr, std::size_t bytes = 0) {
    const std::uint64_t id = ++lastId_;
    std::string header = w.bytes();
    std::memcpy(header.data() + 8, &id, 8);
    node_->send(conn_, std::move(header), data, bytes, rpc::Memory::Host, [](const std::string&) {});
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!answers_.count(id)) {
      if (std::chrono::steady_clock::now() > end) {
        ADD_FAILURE() << "no answer to request " << id;
        return {};
      }
      if (!node_->progress()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    Answer a = answers_[id];
    answers_.erase(id);
    return a;
  }

  std::uint64_t reserve(const std::string& name, std::int64_t version, const Box& box) {
    wire::ByteWriter w = protocol::begin(Op::Reserve, 0);
    w.str(name).i64(version);
    protocol::writeBox(w, box);
    w.u64(1000);
    const Answer a = call(w);
    EXPECT_EQ(a.status, 0) << a.message;
    wire::ByteReader r(a.rest);
    return a.status == 0 ? r.u64() : 0;
  }

  Answer write(std::uint64_t reservation, std::uint64_t at, const void* data, std::size_t bytes) {
    wire::ByteWriter w = protocol::begin(Op::Write, 0);
    w.u64(reservation).u64(at);
    return call(w, data, bytes);
  }

  Answer commit(std::uint64_t reservation) {
    wire::ByteWriter w = protocol::begin(Op::Commit, 0);
    w.u64(reservation);
    return call(w);
  }

 private:
  std::unique_ptr<rpc::Node> node_;
  rpc::ConnId conn_ = 0;
  std::uint64_t lastId_ = 0;
  std::map<std::uint64_t, Answer> answers_;
};

TEST(SpaceWrite, ChunksLandInTheReservationAndShowOnlyAtCommit) {
  ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.memBytes = 8 << 20;
  so.policy = Policy::Reject;
  std::unique_ptr<Server> server;
  try {
    server = std::make_unique<Server>(so);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Unsupported) GTEST_SKIP() << e.what();
    throw;
  }
  server->start();
  ConnectOptions o;
  o.address = server->address();
  o.timeoutSec = 10;
  o.sharedMemory = false;
  Client reader(o);
  reader.define("w", {64}, DataType::Float64, 2);

  RawClient a(server->address()), b(server->address());
  const std::uint64_t r = a.reserve("w", 0, Box::of({0}, {64}));
  ASSERT_NE(r, 0u);
  std::vector<double> data(64);
  for (int i = 0; i < 64; ++i) data[i] = 0.25 * i;

  Answer first = a.write(r, 0, data.data(), 256);
  EXPECT_EQ(first.status, 0) << first.message;
  Answer overrun = a.write(r, 256, data.data() + 32, 512);
  EXPECT_EQ(overrun.status, static_cast<int>(ErrorCode::InvalidArgument));
  EXPECT_NE(overrun.message.find("overruns reservation"), std::string::npos) << overrun.message;
  Answer farOff = a.write(r, 1 << 20, data.data(), 8);
  EXPECT_EQ(farOff.status, static_cast<int>(ErrorCode::InvalidArgument)) << farOff.message;
  Answer notMine = b.write(r, 256, data.data() + 32, 256);
  EXPECT_EQ(notMine.status, static_cast<int>(ErrorCode::InvalidArgument));
  EXPECT_NE(notMine.message.find("does not hold"), std::string::npos) << notMine.message;
  Answer commitNotMine = b.commit(r);
  EXPECT_EQ(commitNotMine.status, static_cast<int>(ErrorCode::InvalidArgument)) << commitNotMine.message;

  // Half written, not committed: nothing is visible.
  std::vector<double> back(64, -1.0);
  try {
    reader.get("w", 0, {0}, {64}, back.data(), back.size() * 8, 0.2);
    ADD_FAILURE() << "a get saw an uncommitted reservation";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Incomplete) << e.what();
  }

  Answer second = a.write(r, 256, data.data() + 32, 256);
  EXPECT_EQ(second.status, 0) << second.message;
  Answer done = a.commit(r);
  EXPECT_EQ(done.status, 0) << done.message;
  reader.get("w", 0, {0}, {64}, back.data(), back.size() * 8);
  EXPECT_EQ(back, data);
  // A committed reservation takes no more writes.
  Answer late = a.write(r, 0, data.data(), 8);
  EXPECT_EQ(late.status, static_cast<int>(ErrorCode::InvalidArgument)) << late.message;
  server->stop();
}

}  // namespace
}  // namespace axon::space
