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
#include "axon/space_server.hpp"
#include "space/protocol.hpp"
#include "space_raw_client.hpp"

namespace axon::space {
namespace {

using protocol::Op;

using test::Answer;
using test::RawClient;

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
  o.key = server->key();
  Client reader(o);
  reader.define("w", {64}, DataType::Float64, 2);

  auto pa = RawClient::introduced(server->address(), server->key());
  auto pb = RawClient::introduced(server->address(), server->key());
  RawClient &a = *pa, &b = *pb;
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
