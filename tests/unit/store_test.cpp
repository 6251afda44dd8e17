// The key-value store over loopback: a StoreServer in this process and StoreClients as "ranks",
// each used from its own thread as the PEs of a job would. Checks the semantics the runtime's
// rendezvous rely on: values are shared, get waits for keys, and a get that cannot complete
// fails with the right code and says who is missing or gone.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store_client.hpp"
#include "bootstrap/store_server.hpp"
#include "expect_error.hpp"
#include "store_support.hpp"

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;
using Strings = std::vector<std::string>;
using test::contains;
using test::errorMessageOf;
using test::secondsSince;

// Generous: a passing test never waits this long, a failing one does not hang the suite.
constexpr double kClientTimeoutSec = 10.0;
constexpr auto kStillPending = std::chrono::milliseconds(200);

class StoreLoopback : public ::testing::Test {
 protected:
  net::HostPort addr() const { return {"127.0.0.1", server.port()}; }

  std::unique_ptr<StoreClient> connect(int rank, double timeoutSec = kClientTimeoutSec) {
    return std::make_unique<StoreClient>(addr(), "test", rank, timeoutSec, test::jobKey(), test::kKeySource);
  }

  // Ranks 0 and 1 connect at the same time, as PEs do at init.
  void connectBoth() {
    auto first = std::async(std::launch::async, [this] { return connect(0); });
    auto second = std::async(std::launch::async, [this] { return connect(1); });
    rank0 = first.get();
    rank1 = second.get();
  }

  // Declared first so that it outlives the clients.
  StoreServer server{net::HostPort{"127.0.0.1", 0}, test::storeOptions()};
  std::unique_ptr<StoreClient> rank0, rank1;
};

TEST_F(StoreLoopback, ServerPicksAFreePort) {
  EXPECT_GT(server.port(), 0);
  EXPECT_LE(server.port(), 65535);
}

TEST_F(StoreLoopback, SetGetCheckAddDel) {
  connectBoth();
  const std::string binary("\0\x01\xff", 3);

  rank0->set("name", "axon");
  rank0->set("blob", binary);
  // What one rank sets, the other reads; values come back in the order of the keys.
  EXPECT_EQ(rank1->get({"blob", "name"}, "read"), (Strings{binary, "axon"}));
  rank1->set("name", "renamed");  // set overwrites
  EXPECT_EQ(rank0->get({"name"}, "read"), Strings{"renamed"});

  EXPECT_EQ(rank0->check({"name", "missing", "blob"}), (std::vector<bool>{true, false, true}));
  EXPECT_EQ(rank0->check({}), std::vector<bool>{});

  // add starts from 0 and returns the new value; both ranks add to the same counter.
  EXPECT_EQ(rank0->add("counter", 5), 5);
  EXPECT_EQ(rank1->add("counter", 10), 15);
  EXPECT_EQ(rank0->add("counter", -20), -5);
  EXPECT_EQ(rank1->add("counter", 0), -5);

  rank1->del("name");
  EXPECT_EQ(rank0->check({"name", "blob"}), (std::vector<bool>{false, true}));
  rank1->del("never-set");  // deleting what is not there is harmless
  // A deleted counter starts over.
  rank0->del("counter");
  EXPECT_EQ(rank1->add("counter", 3), 3);

  rank0->bye();
  rank1->bye();
  auto start = Clock::now();
  server.shutdownAfterGoodbyes(2, 5.0);
  EXPECT_LT(secondsSince(start), 2.0) << "both ranks said goodbye: shutdown must not wait";
}

TEST_F(StoreLoopback, GetWaitsUntilEveryKeyIsSet) {
  connectBoth();
  auto pending = std::async(std::launch::async,
                            [this] { return rank1->get({"first", "second"}, "wait for keys"); });
  EXPECT_EQ(pending.wait_for(kStillPending), std::future_status::timeout);
  rank0->set("first", "1");
  EXPECT_EQ(pending.wait_for(kStillPending), std::future_status::timeout)
      << "get returned with one of its two keys missing";
  rank0->set("second", "2");
  ASSERT_EQ(pending.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(pending.get(), (Strings{"1", "2"}));

  rank0->bye();
  rank1->bye();
  server.shutdownAfterGoodbyes(2, 5.0);
}

TEST_F(StoreLoopback, AddWakesAGetOfTheCounter) {
  connectBoth();
  auto pending = std::async(std::launch::async, [this] { return rank1->get({"n"}, "wait"); });
  EXPECT_EQ(pending.wait_for(kStillPending), std::future_status::timeout);
  EXPECT_EQ(rank0->add("n", 42), 42);
  ASSERT_EQ(pending.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  // Counters are stored as 8 native-endian bytes.
  std::int64_t value = 42;
  EXPECT_EQ(pending.get(), Strings{std::string(reinterpret_cast<const char*>(&value), 8)});

  rank0->bye();
  rank1->bye();
  server.shutdownAfterGoodbyes(2, 5.0);
}

TEST_F(StoreLoopback, GetTimeoutNamesWhatIsStillMissing) {
  auto impatient = connect(0, 0.3);
  auto other = connect(1);
  other->set("from-pe-2", "here");

  auto start = Clock::now();
  std::string msg = errorMessageOf(
      [&] { impatient->get({"from-pe-2", "from-pe-1"}, "rendezvous", {"PE 2", "PE 1"}); },
      ErrorCode::Timeout);
  const double waited = secondsSince(start);
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 3.0);
  EXPECT_TRUE(contains(msg, "rendezvous"));
  EXPECT_TRUE(contains(msg, "still missing: PE 1"));
  EXPECT_FALSE(contains(msg, "PE 2")) << "PE 2's key is there: it must not be blamed";

  // Without labels the key itself is named.
  std::string unlabelled =
      errorMessageOf([&] { impatient->get({"absent-key"}, "lookup"); }, ErrorCode::Timeout);
  EXPECT_TRUE(contains(unlabelled, "'absent-key'"));

  // A timed-out get leaves the connection usable: its late reply must not be mistaken for the
  // answer to the next request.
  other->set("absent-key", "finally");
  EXPECT_EQ(impatient->get({"absent-key"}, "lookup"), Strings{"finally"});

  impatient->bye();
  other->bye();
  server.shutdownAfterGoodbyes(2, 5.0);
}

TEST_F(StoreLoopback, RankThatLeavesWithoutGoodbyeFailsPendingGetsWithPeerDead) {
  connectBoth();
  auto start = Clock::now();
  auto pending = std::async(std::launch::async, [this] { return rank0->get({"never"}, "barrier"); });
  EXPECT_EQ(pending.wait_for(kStillPending), std::future_status::timeout);
  rank1.reset();  // closes its socket without bye(), as a crashed PE would

  ASSERT_EQ(pending.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  std::string msg = errorMessageOf([&] { pending.get(); }, ErrorCode::PeerDead);
  EXPECT_TRUE(contains(msg, "PE 1"));
  EXPECT_TRUE(contains(msg, "barrier"));
  EXPECT_LT(secondsSince(start), kClientTimeoutSec / 2) << "PeerDead must not wait for the timeout";

  // Later gets fail the same way at once: the dead rank will never set its keys.
  start = Clock::now();
  errorMessageOf([&] { rank0->get({"other"}, "barrier"); }, ErrorCode::PeerDead);
  EXPECT_LT(secondsSince(start), 2.0);

  rank0->bye();
  start = Clock::now();
  // Rank 1's lost connection counts as its goodbye.
  server.shutdownAfterGoodbyes(2, 5.0);
  EXPECT_LT(secondsSince(start), 2.0);
}

TEST_F(StoreLoopback, KeysSetBeforeARankLeftStillAnswerGets) {
  // A rank that finished a rendezvous and exited at once (a PE that fails right after init) must
  // not fail a slower member of that rendezvous: its keys are there.
  connectBoth();
  rank1->set("round0/1", "one");
  rank1.reset();  // without bye()
  // A get of a key nobody will set fails (bounded by the client's timeout): the server has seen
  // rank 1 leave.
  EXPECT_TRUE(contains(errorMessageOf([&] { rank0->get({"never"}, "barrier"); }, ErrorCode::PeerDead), "PE 1"));
  EXPECT_EQ(rank0->get({"round0/1"}, "rendezvous"), Strings{"one"});
  rank0->bye();
}

TEST_F(StoreLoopback, ShutdownWaitsBoundedForMissingGoodbyes) {
  connectBoth();
  rank0->bye();
  auto start = Clock::now();
  server.shutdownAfterGoodbyes(2, 0.3);  // rank 1 is still connected and silent
  const double waited = secondsSince(start);
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 3.0);
}

TEST_F(StoreLoopback, SecondServerOnTheSamePortFailsNamingTheAddress) {
  const std::string taken = addr().str();
  std::string msg =
      errorMessageOf([&] { StoreServer second(addr(), test::storeOptions()); }, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, taken));
}

}  // namespace
}  // namespace axon

namespace axon {
namespace {

class StoreGather : public StoreLoopback {};

TEST_F(StoreGather, EveryMemberGetsAllValuesInIndexOrder) {
  connectBoth();
  auto second = std::async(std::launch::async, [this] { return rank1->gather("g/0", 2, 1, "from 1", "test", {}); });
  EXPECT_EQ(second.wait_for(kStillPending), std::future_status::timeout) << "answered before member 0 came";
  EXPECT_EQ(rank0->gather("g/0", 2, 0, "from 0", "test", {}), (Strings{"from 0", "from 1"}));
  ASSERT_EQ(second.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  EXPECT_EQ(second.get(), (Strings{"from 0", "from 1"}));
  // An answered group is forgotten: the same name starts a new one.
  auto again = std::async(std::launch::async, [this] { return rank1->gather("g/0", 2, 1, "b", "test", {}); });
  EXPECT_EQ(rank0->gather("g/0", 2, 0, "a", "test", {}), (Strings{"a", "b"}));
  EXPECT_EQ(again.get(), (Strings{"a", "b"}));
  rank0->bye();
  rank1->bye();
}

TEST_F(StoreGather, TimeoutNamesTheMembersStillMissing) {
  auto impatient = connect(0, 0.3);
  std::string msg = errorMessageOf([&] { impatient->gather("g/1", 3, 0, "", "'init' rendezvous", [](std::uint32_t m) { return Strings{"PE 0", "PE 5", "PE 7"}[m]; }); },
                                   ErrorCode::Timeout);
  EXPECT_TRUE(contains(msg, "'init' rendezvous"));
  EXPECT_TRUE(contains(msg, "still missing: PE 5, PE 7"));
  impatient->bye();
}

TEST_F(StoreGather, MembersThatDisagreeOnTheGroupAreRefused) {
  connectBoth();
  auto first = std::async(std::launch::async, [this] { return rank0->gather("g/2", 2, 0, "", "test", {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  std::string msg = errorMessageOf([&] { rank1->gather("g/2", 3, 1, "", "test", {}); }, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "2 members"));
  EXPECT_TRUE(contains(msg, "3 for PE 1"));
  // A member index may contribute once.
  std::string twice = errorMessageOf([&] { rank1->gather("g/2", 2, 0, "", "test", {}); }, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(twice, "contributed twice"));
  rank1.reset();  // lets the first one go (PeerDead), so the test ends
  EXPECT_THROW(first.get(), Error);
}

TEST_F(StoreGather, AGoneRankFailsTheGroupsItCannotComplete) {
  connectBoth();
  auto waiting = std::async(std::launch::async, [this] { return rank0->gather("g/3", 2, 0, "", "barrier", [](std::uint32_t m) { return "PE " + std::to_string(m); }); });
  EXPECT_EQ(waiting.wait_for(kStillPending), std::future_status::timeout);
  rank1.reset();  // no goodbye
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  std::string msg = errorMessageOf([&] { waiting.get(); }, ErrorCode::PeerDead);
  EXPECT_TRUE(contains(msg, "PE 1"));
  EXPECT_TRUE(contains(msg, "barrier"));
  rank0->bye();
}

TEST_F(StoreGather, AGroupCompletedByARankThatLeftStillAnswers) {
  // A rank that contributed and exited at once must not fail a slower member: its value is there.
  connectBoth();
  auto early = std::async(std::launch::async, [this] { return rank1->gather("g/4", 2, 1, "one", "test", {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(rank0->gather("g/4", 2, 0, "zero", "test", {}), (Strings{"zero", "one"}));
  early.get();
  rank1.reset();
  rank0->bye();
}

}  // namespace
}  // namespace axon

namespace axon {
namespace {

// Found by review: a get left waiting by a connection that closed used to stay registered under
// (fd, request id), and a new connection on the same fd woke on the old get's keys.
TEST_F(StoreGather, AGetOfAClosedConnectionWakesNobodyElse) {
  auto other = connect(0);
  {
    auto gone = connect(1, 0.2);
    EXPECT_THROW(gone->get({"x"}, "wait"), Error);  // times out, still registered at the server
    gone->bye();
  }
  auto next = connect(2);  // likely the same fd, and the same first request ids
  auto pending = std::async(std::launch::async, [&] { return next->get({"y"}, "wait"); });
  EXPECT_EQ(pending.wait_for(kStillPending), std::future_status::timeout);
  other->set("x", "1");
  EXPECT_EQ(pending.wait_for(kStillPending), std::future_status::timeout) << "a get of 'y' was answered by a set of 'x'";
  EXPECT_EQ(other->check({"y"}), std::vector<bool>{false});
  other->set("y", "2");
  EXPECT_EQ(pending.get(), Strings{"2"});
}

// Found by review: a key deleted while a get waited for another one was answered as "".
TEST_F(StoreGather, AGetWaitsAgainForAKeyDeletedMeanwhile) {
  connectBoth();
  rank0->set("a", "1");
  auto pending = std::async(std::launch::async, [this] { return rank1->get({"a", "b"}, "wait"); });
  EXPECT_EQ(pending.wait_for(kStillPending), std::future_status::timeout);
  rank0->del("a");
  rank0->set("b", "2");
  EXPECT_EQ(pending.wait_for(kStillPending), std::future_status::timeout) << "answered without 'a'";
  rank0->set("a", "3");
  EXPECT_EQ(pending.get(), (Strings{"3", "2"}));
}

}  // namespace
}  // namespace axon
