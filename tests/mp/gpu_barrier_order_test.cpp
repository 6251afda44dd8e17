// A team barrier's place among the GPU collectives (coll/gpu_call_order.hpp), on the host backend:
// the call logs and their comparison are host code over the members' control blocks, so they run
// here without a GPU. The workspace is a recording double: on a GPU machine its raise() stops the
// members' kernels (tests/gpu/coll_gpu_test.cu checks that end); here it records the report.
// Every PE must return from the barrier's check when the members issued the same GPU collectives
// before it, and throw CollectiveMismatch naming both calls, well before AXON_TIMEOUT, otherwise.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "coll/gpu_call_order.hpp"
#include "core/team_state.hpp"
#include "gpu/gpu_backend.hpp"
#include "runtime/runtime.hpp"

namespace {

using axon::ErrorCode;

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }
bool lowerHalf() { return me() < np() / 2; }

class RecordingWorkspace final : public axon::GpuTeamWorkspace {
 public:
  const axon::device::CollHandle& handle() const override { return handle_; }
  void enqueue(const axon::kernels::CollLaunch&, void*) override { unused(); }
  void run(const axon::kernels::CollLaunch&) override { unused(); }
  axon::kernels::CollOccupancy occupancy(const axon::kernels::CollLaunch&) const override { unused(); }
  void setTimeoutNs(unsigned long long ns) override { handle_.timeoutNs = ns; }
  void* scratch(int, std::size_t) override { unused(); }
  void copy(void*, const void*, std::size_t) override { unused(); }
  const axon::device::CollError* error() const override { return raises_ ? &report_ : nullptr; }
  void raise(const axon::device::CollError& e) override {
    if (raises_++ == 0) report_ = e;
  }
  int raises() const { return raises_; }
  const axon::device::CollError& report() const { return report_; }

 private:
  [[noreturn]] static void unused() {
    throw axon::Error(ErrorCode::Internal, "the barrier's check launches no kernel");
  }
  axon::device::CollHandle handle_{};
  axon::device::CollError report_{};
  int raises_ = 0;
};

axon::device::CollRecord allreduceRecord(unsigned long long count) {
  axon::device::CollRecord r{};
  r.collective = static_cast<unsigned>(axon::Collective::Allreduce);
  r.dtype = static_cast<unsigned>(axon::DataType::Float32);
  r.op = static_cast<unsigned>(axon::ReduceOp::Sum);
  r.root = -1;
  r.channels = 1;
  r.count = count;
  return r;
}

// The check on `team` with `calls` GPU collectives logged first; "" when it passed, else the
// message of the CollectiveMismatch it threw (any other error fails the test).
std::string checkAfter(const axon::Team& team, int calls, RecordingWorkspace& ws, double& seconds) {
  auto& rt = axon::runtime("test");
  const auto& state = axon::detail::requireValidTeam(team, "test");
  for (int i = 0; i < calls; ++i) axon::coll::logGpuCall(rt, state, allreduceRecord(1024));
  const auto t0 = std::chrono::steady_clock::now();
  std::string text;
  try {
    axon::coll::enterGpuTeamBarrier(rt, state, ws, "barrier");
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::CollectiveMismatch) << e.what();
    text = e.what();
  }
  seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return text;
}

TEST(GpuBarrierOrder, TheSameCallsBeforeEveryBarrierPass) {
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  RecordingWorkspace ws;
  for (int round = 0; round < 50; ++round) {
    double sec = 0;
    EXPECT_EQ(checkAfter(team, round % 3, ws, sec), "") << "round " << round;
    team.barrier();  // the rest of the team barrier; the next check is for the next barrier
  }
  EXPECT_EQ(ws.raises(), 0);
  team.destroy();
}

// The blocking form: the upper half issued an allreduce (whose kernel would wait for the lower
// half) and does not come to the barrier for a while; the lower half finds it meanwhile.
TEST(GpuBarrierOrder, ACollectiveInsteadOfTheBarrierFailsTheBarrierAtOnce) {
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  RecordingWorkspace ws;
  double sec = 0;
  if (lowerHalf()) {
    const std::string text = checkAfter(team, 0, ws, sec);
    EXPECT_NE(text.find("Team::barrier()"), std::string::npos) << text;
    EXPECT_NE(text.find("allreduce(count 1024"), std::string::npos) << text;
    EXPECT_NE(text.find("instead"), std::string::npos) << text;
    EXPECT_LT(sec, 2.0) << text;
    ASSERT_EQ(ws.raises(), 1);
    EXPECT_EQ(ws.report().code, static_cast<int>(axon::device::CollErrorCode::Mismatch));
    EXPECT_EQ(ws.report().pe, me());
    EXPECT_GE(ws.report().peer, np() / 2);
    EXPECT_EQ(ws.report().theirs.collective, static_cast<unsigned>(axon::Collective::Allreduce));
  } else {
    auto& rt = axon::runtime("test");
    axon::coll::logGpuCall(rt, axon::detail::requireValidTeam(team, "test"), allreduceRecord(1024));
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // Its kernel would have been stopped by the report; its next barrier fails too.
    const std::string text = checkAfter(team, 0, ws, sec);
    EXPECT_NE(text.find("Team::barrier()"), std::string::npos) << text;
    EXPECT_LT(sec, 2.0) << text;
  }
  team.destroy();  // the check signalled nothing: the team's barrier counters agree
}

// The stream form: the upper half enqueued one more collective before the same barrier; every PE
// enters, and every PE finds the counts differ.
TEST(GpuBarrierOrder, ADifferentNumberOfCollectivesBeforeTheBarrierFailsOnEveryPe) {
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  RecordingWorkspace ws;
  double sec = 0;
  const int calls = lowerHalf() ? 2 : 3;
  const std::string text = checkAfter(team, calls, ws, sec);
  EXPECT_NE(text.find("Team::barrier()"), std::string::npos) << text;
  EXPECT_TRUE(text.find("entered it after") != std::string::npos || text.find("instead") != std::string::npos) << text;
  EXPECT_LT(sec, 2.0) << text;
  EXPECT_EQ(ws.raises(), 1);
  team.destroy();
}

}  // namespace

namespace {

// Runs only with a short AXON_TIMEOUT (its own ctest entry): PE 0 comes to the barrier, the others
// never do and issue nothing. PE 0's check ends at AXON_TIMEOUT naming the member it waits for.
TEST(GpuBarrierOrderTimeout, AMemberThatNeverComesIsNamed) {
  const char* t = std::getenv("AXON_TIMEOUT");
  if (!t || std::atof(t) > 5) GTEST_SKIP() << "needs AXON_TIMEOUT <= 5";
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  RecordingWorkspace ws;
  if (me() == 0) {
    auto& rt = axon::runtime("test");
    try {
      axon::coll::enterGpuTeamBarrier(rt, axon::detail::requireValidTeam(team, "test"), ws, "barrier");
      ADD_FAILURE() << "the check passed without the other members";
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::Timeout) << e.what();
      const std::string text = e.what();
      EXPECT_NE(text.find("on PE 1"), std::string::npos) << text;
      EXPECT_NE(text.find("GPU call log"), std::string::npos) << text;
      EXPECT_EQ(text.find("round -1"), std::string::npos) << text;
    }
    EXPECT_EQ(ws.raises(), 0);
  } else {
    // Past PE 0's timeout, well within its destroy's.
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(t) * 2 / 3));
  }
  team.destroy();
}

}  // namespace
