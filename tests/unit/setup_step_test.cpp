// SetupStep, the one "everyone contributes, the first failure wins" exchange of the runtime's
// set-up: over a real store with one Bootstrap per rank (threads standing in for PEs). Every rank
// must get the same payloads, or the same error naming the failing PE, and a failure posted
// mid-step must stop the others' waits at once.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/blob.hpp"
#include "bootstrap/bootstrap.hpp"
#include "bootstrap/setup_step.hpp"
#include "core/net.hpp"
#include "expect_error.hpp"

namespace axon {
namespace {

using test::contains;
using test::errorMessageOf;

// `n` ranks, each a Bootstrap on its own thread running `body(rank, boot)`; returns what each
// threw ("" for nothing).
std::vector<std::string> runRanks(int n, const std::function<void(int, Bootstrap&)>& body,
                                  std::vector<ErrorCode>* codes = nullptr) {
  const std::string addr = "127.0.0.1:" + std::to_string(net::freeLoopbackPort());
  std::vector<std::string> errors(n);
  std::vector<ErrorCode> got(n, ErrorCode::Internal);
  std::vector<std::thread> threads;
  // The job's key, as AXON_JOB_KEY gives it to every PE.
  JobKeyConfig keys;
  keys.key = Secret::generate();
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      LaunchInfo launch;
      launch.rank = r;
      launch.worldSize = n;
      launch.storeAddr = addr;
      launch.storeHint = "test";
      Bootstrap boot(launch, 10.0, keys);
      try {
        body(r, boot);
      } catch (const Error& e) {
        errors[r] = e.what();
        got[r] = e.code();
      }
      boot.finalize();
    });
  }
  for (auto& t : threads) t.join();
  if (codes) *codes = got;
  return errors;
}

TEST(SetupStep, ContributionsRoundTrip) {
  StepContribution ok{std::nullopt, "payload"};
  StepContribution back = decodeStepContribution(encodeStepContribution(ok), "test");
  EXPECT_FALSE(back.failure);
  EXPECT_EQ(back.payload, "payload");
  StepContribution bad{StepFailure{-1, ErrorCode::OutOfMemory, "no room"}, ""};
  back = decodeStepContribution(encodeStepContribution(bad), "test");
  ASSERT_TRUE(back.failure);
  EXPECT_EQ(back.failure->code, ErrorCode::OutOfMemory);
  EXPECT_EQ(back.failure->message, "no room");
}

TEST(SetupStep, CorruptContributionsNameWhoWroteThem) {
  std::string blob = encodeStepContribution({StepFailure{-1, ErrorCode::Timeout, "x"}, ""});
  // The error code sits after the header (8 bytes) and the failure flag (1 byte).
  const std::int32_t notACode = 12345;
  std::memcpy(blob.data() + 9, &notACode, 4);
  std::string msg = errorMessageOf([&] { decodeStepContribution(blob, "PE 2's contribution to 'heap' (round 4)"); },
                                   ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "PE 2's contribution to 'heap' (round 4)"));
  EXPECT_TRUE(contains(msg, "error code of 12345"));
  EXPECT_THROW(decodeStepContribution(wire::wordBlob(1), "w"), Error);
}

TEST(SetupStep, EveryRankGetsEveryPayloadInRankOrder) {
  std::vector<std::vector<std::string>> seen(4);
  auto errors = runRanks(4, [&](int r, Bootstrap& boot) {
    for (int round = 0; round < 3; ++round) {
      SetupStep step(boot, "t", boot.worldRanks(), "a test step");
      seen[r] = step.finish("r" + std::to_string(r) + "." + std::to_string(round));
    }
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(errors[r], "") << r;
    EXPECT_EQ(seen[r], (std::vector<std::string>{"r0.2", "r1.2", "r2.2", "r3.2"})) << r;
  }
}

TEST(SetupStep, TheFirstFailingRankWinsOnEveryRank) {
  std::vector<ErrorCode> codes;
  auto errors = runRanks(4, [&](int r, Bootstrap& boot) {
    SetupStep step(boot, "t", boot.worldRanks(), "the widget");
    if (r == 2) step.fail(ErrorCode::OutOfMemory, "PE 2: no room for the widget");
    if (r == 3) step.fail(ErrorCode::Timeout, "PE 3: too slow");
    step.finish("fine");
  }, &codes);
  EXPECT_EQ(errors[2], "PE 2: the widget failed: no room for the widget");
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(codes[r], ErrorCode::OutOfMemory) << r;
    EXPECT_EQ(errors[r], "PE " + std::to_string(r) + ": the widget failed on PE 2: no room for the widget");
  }
}

TEST(SetupStep, SettleReturnsTheFailureInsteadOfThrowing) {
  std::vector<std::optional<StepFailure>> seen(3);
  auto errors = runRanks(3, [&](int r, Bootstrap& boot) {
    SetupStep step(boot, "t", boot.worldRanks(), "a fallback step");
    if (r == 1) step.fail(ErrorCode::Unsupported, "cannot map");
    seen[r] = step.settle("x").failure;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(errors[r], "");
    ASSERT_TRUE(seen[r]) << r;
    EXPECT_EQ(seen[r]->pe, 1);
    EXPECT_EQ(seen[r]->message, "cannot map");
  }
}

TEST(SetupStep, AFailurePostedMidStepStopsTheOthersWaitsAtOnce) {
  // Rank 1 fails before sending what the others wait for (file descriptors, in the runtime);
  // they poll checkPeers() and stop within a check instead of running into their timeout.
  const auto start = std::chrono::steady_clock::now();
  auto errors = runRanks(3, [&](int r, Bootstrap& boot) {
    SetupStep step(boot, "t", boot.worldRanks(), "the handle exchange");
    try {
      if (r == 1) throw Error(ErrorCode::Cuda, "PE 1: cuMemExportToShareableHandle failed");
      for (int i = 0; i < 1000; ++i) {  // up to 20 s of waiting for rank 1
        step.checkPeers();
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    } catch (const Error& e) {
      step.fail(e);
    }
    step.finish();
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  for (int r : {0, 2}) EXPECT_TRUE(contains(errors[r], "failed on PE 1: cuMemExportToShareableHandle failed")) << errors[r];
  EXPECT_EQ(errors[1], "PE 1: the handle exchange failed: cuMemExportToShareableHandle failed");
}

TEST(SetupStep, StepsOfOneTagOnTwoTeamsDoNotMix) {
  // Team {0,1} and team {2,3} run steps of their own tags at the same time.
  std::vector<std::vector<std::string>> seen(4);
  auto errors = runRanks(4, [&](int r, Bootstrap& boot) {
    std::vector<int> team = r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
    SetupStep step(boot, r < 2 ? "split-a" : "split-b", team, "a split");
    seen[r] = step.finish(std::to_string(r));
  });
  EXPECT_EQ(seen[0], (std::vector<std::string>{"0", "1"}));
  EXPECT_EQ(seen[3], (std::vector<std::string>{"2", "3"}));
}

}  // namespace
}  // namespace axon

namespace axon {
namespace {

TEST(BootstrapThreads, TwoThreadsOfEachRankRendezvousOnTheirOwnTagsAtOnce) {
  // Bootstrap's rounds per tag and its store connection are shared by the threads of a rank
  // (ThreadSanitizer checks this in `make tsan-test`).
  std::vector<std::string> wrong(2);
  auto errors = runRanks(2, [&](int r, Bootstrap& boot) {
    std::vector<std::thread> threads;
    for (const char* tag : {"a", "b"}) {
      threads.emplace_back([&, tag] {
        for (int round = 0; round < 50; ++round) {
          auto all = boot.allgather(tag, boot.worldRanks(), std::string(tag) + std::to_string(round));
          const std::string want = std::string(tag) + std::to_string(round);
          if (all != std::vector<std::string>{want, want}) wrong[r] = "round " + std::to_string(round) + " of " + tag;
        }
      });
    }
    for (auto& t : threads) t.join();
  });
  EXPECT_EQ(errors, (std::vector<std::string>{"", ""}));
  EXPECT_EQ(wrong, (std::vector<std::string>{"", ""}));
}

}  // namespace
}  // namespace axon
