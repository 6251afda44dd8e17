// The store's job key handshake against what a stranger can send: every attack connects a raw
// socket (or a StoreClient with the wrong key) to a live store whose "PEs" are StoreClients with
// the right key, and checks both that the stranger is refused and that the job never notices: its
// rendezvous complete with the right values and no rank is reported gone.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store_client.hpp"
#include "bootstrap/store_handshake.hpp"
#include "bootstrap/store_server.hpp"
#include "bootstrap/wire.hpp"
#include "core/build_version.hpp"
#include "expect_error.hpp"
#include "store_support.hpp"

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;
using Strings = std::vector<std::string>;
using test::contains;
using test::errorMessageOf;
using test::connectRaw;
using test::readFrame;
using test::secondsSince;
using test::sendRaw;

// True when the server closes `fd` within `limitSec` (what it sends before is skipped).
bool closedWithin(int fd, double limitSec) {
  const auto start = Clock::now();
  char buf[4096];
  while (secondsSince(start) < limitSec) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return true;
  }
  return false;
}

Nonce greetingOf(int fd) {
  std::uint16_t version = 0;
  const std::string frame = readFrame(fd);
  EXPECT_EQ(frame.size(), wire::greetingFrameBytes());
  return wire::decodeGreeting(std::string_view(frame).substr(4), version);
}

wire::HelloClaims claimsOf(int rank, const std::string& version) {
  wire::HelloClaims c;
  c.clientNonce = makeNonce();
  c.rank = static_cast<std::uint32_t>(rank);
  c.version = version;
  return c;
}

wire::Status statusOf(const std::string& frame) {
  wire::ByteReader r(std::string_view(frame).substr(4));
  return static_cast<wire::Status>(wire::readHead(r).code);
}

const Secret& anotherKey() {
  static const Secret key = Secret::fromHex(std::string(64, 'e'), "another job's key");
  return key;
}

// A job of four PEs: two of them connected (the others may come later), each a StoreClient that
// proves the test key.
class LiveStore : public ::testing::Test {
 protected:
  explicit LiveStore(StoreServerOptions options = test::storeOptions(10.0, "", 4)) : server(localhost(0), std::move(options)) {
    pe0 = connect(0);
    pe1 = connect(1);
  }
  static net::HostPort localhost(int port) { return {"127.0.0.1", port}; }
  net::HostPort addr() const { return localhost(server.port()); }
  std::unique_ptr<StoreClient> connect(int rank, const Secret& key = test::jobKey(), const std::string& source = test::kKeySource) {
    return std::make_unique<StoreClient>(addr(), "test", rank, 10.0, key, source);
  }

  // The job is untouched: a rendezvous of both PEs completes with their values, nobody is gone.
  void expectJobUntouched(const std::string& round) {
    auto theirs = std::async(std::launch::async, [&] { return pe1->gather(round, 2, 1, "one", "rendezvous"); });
    EXPECT_EQ(pe0->gather(round, 2, 0, "zero", "rendezvous"), (Strings{"zero", "one"}));
    EXPECT_EQ(theirs.get(), (Strings{"zero", "one"}));
    pe0->set("k/" + round, "v");
    EXPECT_EQ(pe1->get({"k/" + round}, "read"), Strings{"v"});
    EXPECT_EQ(pe0->goneRank(), -1) << pe0->goneReason();
    EXPECT_EQ(pe1->goneRank(), -1) << pe1->goneReason();
  }

  StoreServer server;
  std::unique_ptr<StoreClient> pe0, pe1;
};

TEST_F(LiveStore, TheRightKeyIsAcceptedAndTheStoreProvesItself) {
  // Both PEs connected in the fixture: each checked the store's own proof.
  expectJobUntouched("first");
  auto pe2 = connect(2);
  pe2->set("from", "two");
  EXPECT_EQ(pe0->get({"from"}, "read"), Strings{"two"});
}

TEST_F(LiveStore, AWrongKeyIsRefusedNamingTheStoreAndTheKeySourceNeverTheKey) {
  // A PE of another job pointed at this job's store.
  const auto start = Clock::now();
  const std::string msg = errorMessageOf([&] { connect(1, anotherKey(), "AXON_JOB_KEY"); }, ErrorCode::PermissionDenied);
  EXPECT_LT(secondsSince(start), 2.0) << "a refusal is not a timeout";
  EXPECT_TRUE(contains(msg, addr().str()));
  EXPECT_TRUE(contains(msg, "AXON_JOB_KEY"));
  EXPECT_TRUE(contains(msg, "refused"));
  EXPECT_FALSE(contains(msg, anotherKey().hex().substr(0, 16)));
  EXPECT_FALSE(contains(msg, test::jobKey().hex().substr(0, 16)));
  expectJobUntouched("after-wrong-key");
}

TEST_F(LiveStore, AStoreThatCannotProveTheKeyIsRefusedByTheClient) {
  // The client holds another key than the store: the store refuses it first. An impostor store
  // that accepts anything (it cannot compute the answer) is caught by the client's own check.
  int port = 0;
  const int listener = test::listenRaw(port);
  std::thread impostor([&] {
    const int fd = ::accept(listener, nullptr, nullptr);
    const Nonce nonce = makeNonce();
    sendRaw(fd, wire::encodeGreeting(nonce));
    const std::string hello = readFrame(fd);
    // It answers Ok with a proof it made up.
    Digest madeUp{};
    wire::ByteReader r(std::string_view(hello).substr(4));
    sendRaw(fd, wire::Writer(wire::readHead(r).id, 0).fixed(madeUp).frame());
    readFrame(fd);  // until the client closes
    ::close(fd);
  });
  const std::string msg = errorMessageOf(
      [&] { StoreClient c(localhost(port), "AXON_STORE_ADDR", 3, 5.0, test::jobKey(), test::kKeySource); },
      ErrorCode::PermissionDenied);
  impostor.join();
  ::close(listener);
  EXPECT_TRUE(contains(msg, "did not prove the job key"));
  EXPECT_TRUE(contains(msg, "127.0.0.1:" + std::to_string(port)));
}

TEST_F(LiveStore, AHelloWithoutProofIsDroppedAndItsCloseIsNoPeDisconnecting) {
  // What a PE of an older build (or anyone who read the wire format) sends: a Hello of the
  // version before the handshake claiming rank 2 with this build's string, then a close.
  const int fd = connectRaw(server.port());
  greetingOf(fd);
  sendRaw(fd, wire::Writer(1, static_cast<std::uint8_t>(wire::Op::Hello), 2).u32(2).str(buildVersion()).frame());
  EXPECT_EQ(statusOf(readFrame(fd)), wire::Status::Refused);
  EXPECT_TRUE(closedWithin(fd, 2.0));
  ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  expectJobUntouched("after-no-proof");
}

TEST_F(LiveStore, AStrangersVersionStringDoesNotPoisonTheStore) {
  // A v3 Hello of another build, its proof made with another key.
  const int fd = connectRaw(server.port());
  const Nonce nonce = greetingOf(fd);
  sendRaw(fd, wire::encodeHello(7, anotherKey(), nonce, claimsOf(1, "9.9.9+gstranger")));
  EXPECT_EQ(statusOf(readFrame(fd)), wire::Status::Refused);
  ::close(fd);
  expectJobUntouched("after-stranger-build");
}

TEST_F(LiveStore, AReplayedProofIsRefused) {
  // A proof seen on one connection (here: made for connection A's nonce) is worthless on another.
  const int a = connectRaw(server.port());
  const int b = connectRaw(server.port());
  const Nonce nonceA = greetingOf(a);
  greetingOf(b);
  const std::string helloForA = wire::encodeHello(1, test::jobKey(), nonceA, claimsOf(2, buildVersion()));
  sendRaw(b, helloForA);
  EXPECT_EQ(statusOf(readFrame(b)), wire::Status::Refused);
  ::close(b);
  // On the connection it was made for, it is good.
  sendRaw(a, helloForA);
  const std::string ok = readFrame(a);
  EXPECT_EQ(statusOf(ok), wire::Status::Ok);
  EXPECT_EQ(ok.size(), wire::kFrameHeaderBytes + wire::kProofBytes);
  // PE 2 proved the key: it is of the job, and its goodbye is a goodbye.
  sendRaw(a, wire::Writer(2, static_cast<std::uint8_t>(wire::Op::Bye)).frame());
  EXPECT_EQ(statusOf(readFrame(a)), wire::Status::Ok);
  ::close(a);
  expectJobUntouched("after-replay");
}

TEST_F(LiveStore, ASecondConnectionClaimingAConnectedRankIsRefusedWithoutTouchingTheFirst) {
  // Without the key: refused like any stranger.
  int fd = connectRaw(server.port());
  Nonce nonce = greetingOf(fd);
  sendRaw(fd, wire::encodeHello(1, anotherKey(), nonce, claimsOf(1, buildVersion())));
  EXPECT_EQ(statusOf(readFrame(fd)), wire::Status::Refused);
  ::close(fd);
  // Even with the key (a second process started as rank 1): refused, and its close is no news.
  const std::string msg = errorMessageOf([&] { connect(1); }, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "PE 1 is already connected")) << msg;
  fd = connectRaw(server.port());
  nonce = greetingOf(fd);
  sendRaw(fd, wire::encodeHello(1, test::jobKey(), nonce, claimsOf(1, buildVersion())));
  EXPECT_EQ(statusOf(readFrame(fd)), wire::Status::BadRequest);
  ::close(fd);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  expectJobUntouched("after-impersonation");
}

TEST_F(LiveStore, ARankOutsideTheJobIsRefused) {
  const std::string msg = errorMessageOf([&] { connect(4); }, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "rank 4 is outside this job of 4 PEs")) << msg;
  expectJobUntouched("after-rank-4");
}

TEST_F(LiveStore, AGatherOfMorePeThanTheJobHasIsRefusedBeforeAnyAllocation) {
  // 2^22 members: rank 0 used to reserve about 132 MB for this 40-byte frame.
  const std::string msg = errorMessageOf([&] { pe0->gather("huge/0", 1u << 22, 0, "", "a rendezvous", {}); }, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "at most 4 members")) << msg;
  expectJobUntouched("after-huge-group");
}

TEST_F(LiveStore, LargeOrPartialFramesBeforeTheProofAreDroppedAtOnce) {
  // The length word of a 200 MiB frame, then a little of it: dropped as soon as the length is
  // read, nothing buffered.
  const int fd = connectRaw(server.port());
  greetingOf(fd);
  wire::ByteWriter w;
  w.u32(200u << 20);
  sendRaw(fd, w.bytes() + std::string(4096, 'x'));
  EXPECT_TRUE(closedWithin(fd, 2.0));
  ::close(fd);
  // A frame that stops half-way through a Hello: dropped at the handshake deadline (below).
  expectJobUntouched("after-large-frame");
}

class ShortHandshake : public LiveStore {
 protected:
  static StoreServerOptions options() {
    StoreServerOptions o = test::storeOptions(10.0, "", 4);
    o.handshakeSec = 0.3;
    o.maxPending = 8;
    return o;
  }
  ShortHandshake() : LiveStore(options()) {}
};

TEST_F(ShortHandshake, IdleAndHalfSentHandshakesAreDroppedAtTheDeadline) {
  const int idle = connectRaw(server.port());
  const int half = connectRaw(server.port());
  sendRaw(half, std::string("\x40\x00\x00\x00", 4) + "xAXS");  // the start of a 64-byte frame
  const auto start = Clock::now();
  EXPECT_TRUE(closedWithin(idle, 3.0));
  EXPECT_TRUE(closedWithin(half, 3.0));
  EXPECT_GE(secondsSince(start), 0.2);
  ::close(idle);
  ::close(half);
  expectJobUntouched("after-idle");
}

TEST_F(ShortHandshake, AConnectionFloodCannotKeepPesOut) {
  // 200 connections that never say anything: at most maxPending (8) are kept, the oldest go first.
  std::vector<int> flood;
  for (int i = 0; i < 200; ++i) flood.push_back(connectRaw(server.port()));
  // A PE that connects in the middle of it still gets in (it proves the key within a round trip).
  auto pe2 = connect(2);
  for (int i = 0; i < 50; ++i) flood.push_back(connectRaw(server.port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int closedByServer = 0;
  for (int fd : flood) {
    if (closedWithin(fd, 0.01)) ++closedByServer;
  }
  EXPECT_GE(closedByServer, 200) << "the store kept more than its pending connections";
  pe2->set("two", "in");
  EXPECT_EQ(pe0->get({"two"}, "read"), Strings{"in"});
  for (int fd : flood) ::close(fd);
  expectJobUntouched("after-flood");
}

TEST_F(LiveStore, OutOfDescriptorsDropsStrangersAndTheJobGoesOn) {
  const int port = server.port();
  testing::internal::CaptureStderr();
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  int open = 0;
  for (auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) (void)entry, ++open;
  // Room for a few more descriptors in this process: the store runs out after a few accepts.
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(open + 4);
  // A process of its own opens the connections (with its own descriptors).
  const pid_t child = ::fork();
  if (child == 0) {
    for (int i = 0; i < 300; ++i) {
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in sa{};
      sa.sin_family = AF_INET;
      sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      sa.sin_port = htons(static_cast<uint16_t>(port));
      (void)!::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
    }
    ::sleep(2);
    ::_exit(0);
  }
  ASSERT_GT(child, 0);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  const auto start = Clock::now();
  int rounds = 0;
  while (secondsSince(start) < 1.5) expectJobUntouched("during-emfile/" + std::to_string(rounds++));
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "ran out of file descriptors")) << err;
  // Said once, not once per accept.
  EXPECT_EQ(err.find("ran out of file descriptors"), err.rfind("ran out of file descriptors"));
  // And it accepts again once descriptors are back.
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto pe2 = connect(2);
  pe2->set("back", "yes");
  EXPECT_EQ(pe0->get({"back"}, "read"), Strings{"yes"});
  EXPECT_GT(rounds, 0);
}

class SmallPartialBudget : public LiveStore {
 protected:
  static StoreServerOptions options() {
    StoreServerOptions o = test::storeOptions(10.0, "", 4);
    o.maxPartialBytes = 3u << 20;
    return o;
  }
  SmallPartialBudget() : LiveStore(options()) {}
};

TEST_F(SmallPartialBudget, LargeFramesBeyondTheBudgetWaitTheirTurnAndAllComplete) {
  // Three PEs set 2 MiB values at once: only one such frame fits the 3 MiB budget at a time; the
  // others wait unread, then complete. Nothing is lost or mixed up.
  auto pe2 = connect(2);
  std::vector<std::future<void>> sets;
  StoreClient* pes[] = {pe0.get(), pe1.get(), pe2.get()};
  for (int i = 0; i < 3; ++i) {
    sets.push_back(std::async(std::launch::async, [&, i] {
      pes[i]->set("big/" + std::to_string(i), std::string(2u << 20, static_cast<char>('a' + i)));
    }));
  }
  for (auto& s : sets) s.get();
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(pe0->get({"big/" + std::to_string(i)}, "read"), Strings{std::string(2u << 20, static_cast<char>('a' + i))});
  }
  expectJobUntouched("after-big");
}

}  // namespace
}  // namespace axon
