// The staging space's C API against a server on a thread of this process: every call, its error
// codes, and axon_last_error's words.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "axon/axon.h"
#include "axon/space_server.hpp"

namespace {

// A server of 8 MiB on loopback, with `policy`.
axon::space::ServerOptions loopbackServer(axon::space::Policy policy) {
  axon::space::ServerOptions so;
  so.listen = "127.0.0.1:0";
  so.memBytes = 8 << 20;
  so.policy = policy;
  return so;
}

TEST(SpaceCApi, PutGetWaitReleaseAndErrors) {
  axon::space::Server server(loopbackServer(axon::space::Policy::Reject));
  server.start();

  axon_space_t s = nullptr;
  // A wrong key: refused, in words naming the server and where the key came from.
  const std::string wrong(64, '7');
  EXPECT_EQ(axon_space_connect_key(server.address().c_str(), wrong.c_str(), 5, &s), AXON_ERR_PERMISSION_DENIED);
  EXPECT_EQ(s, nullptr);
  EXPECT_NE(std::string(axon_last_error()).find(server.address()), std::string::npos) << axon_last_error();
  EXPECT_NE(std::string(axon_last_error()).find("the key given to connect"), std::string::npos) << axon_last_error();
  ASSERT_EQ(axon_space_connect_key(server.address().c_str(), server.key().c_str(), 5, &s), AXON_SUCCESS)
      << axon_last_error();
  const int64_t shape[2] = {6, 5};
  ASSERT_EQ(axon_space_define(s, "grid", 2, shape, AXON_INT32, 2), AXON_SUCCESS) << axon_last_error();
  std::vector<int32_t> data(30);
  for (int i = 0; i < 30; ++i) data[i] = i * 3;
  const int64_t off0[2] = {0, 0}, cnt0[2] = {4, 5}, off1[2] = {4, 0}, cnt1[2] = {2, 5};
  ASSERT_EQ(axon_space_put(s, "grid", 7, 2, off0, cnt0, data.data(), 0), AXON_SUCCESS) << axon_last_error();
  axon_space_request_t req = nullptr;
  ASSERT_EQ(axon_space_iput(s, "grid", 7, 2, off1, cnt1, data.data() + 20, 0, &req), AXON_SUCCESS);
  ASSERT_EQ(axon_space_wait(&req), AXON_SUCCESS) << axon_last_error();
  EXPECT_EQ(req, nullptr);
  int64_t v = -1;
  ASSERT_EQ(axon_space_wait_version(s, "grid", 7, 5, &v), AXON_SUCCESS) << axon_last_error();
  EXPECT_EQ(v, 7);

  const int64_t lo[2] = {1, 2}, hi[2] = {5, 4};
  int32_t out[8] = {};
  ASSERT_EQ(axon_space_iget(s, "grid", 7, 2, lo, hi, out, sizeof out, 0, &req), AXON_SUCCESS) << axon_last_error();
  axon_status_t rc;
  while ((rc = axon_space_test(&req)) == AXON_IN_PROGRESS) {
  }
  ASSERT_EQ(rc, AXON_SUCCESS) << axon_last_error();
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 2; ++c) EXPECT_EQ(out[r * 2 + c], data[(1 + r) * 5 + 2 + c]);

  axon_space_stats_t st;
  ASSERT_EQ(axon_space_stats(s, &st), AXON_SUCCESS);
  EXPECT_EQ(st.servers, 1u);
  EXPECT_EQ(st.pieces, 2u);
  EXPECT_EQ(st.puts, 2u);
  EXPECT_EQ(st.gets, 1u);

  // Errors, each with its code and words.
  EXPECT_EQ(axon_space_get(s, "grid", 7, 2, lo, hi, out, 4, 0), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(axon_last_error()).find("holds 4 bytes"), std::string::npos) << axon_last_error();
  EXPECT_EQ(axon_space_get(s, "grid", 7, 9, lo, hi, out, sizeof out, 0), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(axon_space_get(s, "nope", 7, 2, lo, hi, out, sizeof out, 0), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(axon_space_get(s, "grid", 8, 2, lo, hi, out, sizeof out, 0.2), AXON_ERR_INCOMPLETE);
  EXPECT_NE(std::string(axon_last_error()).find("[1:5, 2:4)"), std::string::npos) << axon_last_error();
  EXPECT_EQ(axon_space_put(s, "grid", 7, 2, off0, cnt0, data.data(), 0), AXON_ERR_INVALID_ARGUMENT);  // overlap
  EXPECT_EQ(axon_space_put(s, nullptr, 7, 2, off0, cnt0, data.data(), 0), AXON_ERR_INVALID_ARGUMENT);
  const int64_t huge[1] = {4 << 20};
  ASSERT_EQ(axon_space_define(s, "huge", 1, huge, AXON_FLOAT64, 1), AXON_SUCCESS);
  const int64_t z[1] = {0};
  std::vector<double> big(4 << 20);
  EXPECT_EQ(axon_space_put(s, "huge", 0, 1, z, huge, big.data(), 0), AXON_ERR_SPACE_FULL);  // 32 MiB > 8 MiB
  // A negative version: refused by every write path and by gets, naming it; nothing is stored.
  EXPECT_EQ(axon_space_put(s, "grid", -1, 2, off0, cnt0, data.data(), 0), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(axon_last_error()).find("version -1 is negative"), std::string::npos) << axon_last_error();
  EXPECT_EQ(axon_space_iput(s, "grid", -2, 2, off0, cnt0, data.data(), 0, &req), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(axon_last_error()).find("version -2"), std::string::npos) << axon_last_error();
  EXPECT_EQ(axon_space_get(s, "grid", -1, 2, lo, hi, out, sizeof out, 0), AXON_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(axon_space_stats(s, &st), AXON_SUCCESS);
  EXPECT_EQ(st.pieces, 2u);
  // wait_version's bound is no version: below 0, any.
  ASSERT_EQ(axon_space_wait_version(s, "grid", -1, 5, &v), AXON_SUCCESS) << axon_last_error();
  EXPECT_EQ(v, 7);
  ASSERT_EQ(axon_space_release(s, "grid", 7), AXON_SUCCESS);
  // Removed: its memory goes back, the name is free for another shape.
  ASSERT_EQ(axon_space_stats(s, &st), AXON_SUCCESS);
  const uint64_t inUse = st.bytes_in_use;
  ASSERT_EQ(axon_space_remove(s, "grid"), AXON_SUCCESS) << axon_last_error();
  ASSERT_EQ(axon_space_stats(s, &st), AXON_SUCCESS);
  EXPECT_EQ(st.pieces, 0u);
  EXPECT_LT(st.bytes_in_use, inUse);
  EXPECT_EQ(axon_space_get(s, "grid", 7, 2, lo, hi, out, sizeof out, 0), AXON_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(axon_last_error()).find("not defined"), std::string::npos) << axon_last_error();
  EXPECT_EQ(axon_space_remove(s, "grid"), AXON_ERR_INVALID_ARGUMENT);
  const int64_t other[1] = {3};
  ASSERT_EQ(axon_space_define(s, "grid", 1, other, AXON_FLOAT64, 1), AXON_SUCCESS) << axon_last_error();
  ASSERT_EQ(axon_space_close(s), AXON_SUCCESS);

  // Never reached: ServerUnreachable (not ServerLost), naming the address and what to check.
  EXPECT_EQ(axon_space_connect_key("127.0.0.1:1", server.key().c_str(), 1, &s), AXON_ERR_SERVER_UNREACHABLE);
  EXPECT_NE(std::string(axon_last_error()).find("127.0.0.1:1"), std::string::npos) << axon_last_error();
  EXPECT_NE(std::string(axon_last_error()).find("axon space serve"), std::string::npos) << axon_last_error();
  EXPECT_STREQ(axon_status_name(AXON_ERR_SERVER_UNREACHABLE), "ServerUnreachable");
  EXPECT_STREQ(axon_status_name(AXON_ERR_EVICTED), "Evicted");
  server.stop();
}

// The embedded server's own report (axon/space_server.hpp) agrees with what a client is told.
TEST(SpaceServer, StatsNameThePolicyAndCountWhatArrived) {
  axon::space::Server server(loopbackServer(axon::space::Policy::Evict));
  server.start();
  axon::space::ServerStats before = server.stats();
  EXPECT_EQ(before.address, server.address());
  EXPECT_EQ(before.policy, "evict");
  EXPECT_EQ(before.capacity, 8u << 20);
  EXPECT_EQ(before.putsCommitted, 0u);

  axon_space_t s = nullptr;
  ASSERT_EQ(axon_space_connect_key(server.address().c_str(), server.key().c_str(), 5, &s), AXON_SUCCESS)
      << axon_last_error();
  const int64_t shape[1] = {64};
  ASSERT_EQ(axon_space_define(s, "v", 1, shape, AXON_FLOAT64, 2), AXON_SUCCESS) << axon_last_error();
  std::vector<double> data(64, 1.5);
  const int64_t off[1] = {0}, cnt[1] = {64};
  ASSERT_EQ(axon_space_put(s, "v", 1, 1, off, cnt, data.data(), 0), AXON_SUCCESS) << axon_last_error();
  ASSERT_EQ(axon_space_close(s), AXON_SUCCESS) << axon_last_error();
  // The server's numbers are a snapshot its thread takes between requests: wait for the put.
  axon::space::ServerStats after{};
  for (int i = 0; i < 200 && after.putsCommitted == 0; ++i) {
    after = server.stats();
    if (after.putsCommitted == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(after.putsCommitted, 1u);
  EXPECT_GE(after.bytesInUse, 64u * sizeof(double));
  EXPECT_EQ(after.variables, 1u);
  EXPECT_EQ(axon::space::parsePolicy("block"), axon::space::Policy::Block);
  EXPECT_STREQ(axon::space::policyName(axon::space::Policy::Reject), "reject");
  server.stop();
}

}  // namespace
