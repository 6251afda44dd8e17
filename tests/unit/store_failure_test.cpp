// The store when something goes wrong: a client that stops reading, a store that stops reading,
// a PE of another axon build, a rank that leaves without finalize. Each must end in a clear error
// on every rank within the timeout, never a torn stream, a stalled server or a hang.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/store_client.hpp"
#include "bootstrap/store_server.hpp"
#include "bootstrap/store_handshake.hpp"
#include "bootstrap/wire.hpp"
#include "core/build_version.hpp"
#include "expect_error.hpp"
#include "store_support.hpp"

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;
using test::contains;
using test::errorMessageOf;
using test::connectRaw;
using test::readFrame;
using test::secondsSince;
using test::sendRaw;

// A raw connection that has done the handshake as PE `rank` with the test key.
int connectProven(int port, int rank) {
  const int fd = connectRaw(port);
  std::uint16_t version = 0;
  const Nonce nonce = wire::decodeGreeting(std::string_view(readFrame(fd)).substr(4), version);
  wire::HelloClaims claims;
  claims.clientNonce = makeNonce();
  claims.rank = static_cast<std::uint32_t>(rank);
  claims.version = buildVersion();
  sendRaw(fd, wire::encodeHello(1, test::jobKey(), nonce, claims));
  const std::string ok = readFrame(fd);
  EXPECT_EQ(ok.size(), wire::kFrameHeaderBytes + wire::kProofBytes) << "the store did not accept PE " << rank;
  return fd;
}

// Everything the socket delivers until the peer closes it (bounded by `limitSec`).
std::string readUntilClosed(int fd, double limitSec) {
  std::string all;
  const auto start = Clock::now();
  char buf[1 << 16];
  while (secondsSince(start) < limitSec) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) return all;
    all.append(buf, static_cast<std::size_t>(n));
  }
  ADD_FAILURE() << "the server did not close the connection within " << limitSec << " s";
  return all;
}

TEST(StoreFailure, ReaderThatStopsReadingIsDroppedWithoutStallingTheServer) {
  // A short reply timeout: the stuck reader is dropped after 0.5 s.
  StoreServer server({"127.0.0.1", 0}, test::storeOptions(0.5));
  const int port = server.port();
  auto pe0 = std::make_unique<StoreClient>(net::HostPort{"127.0.0.1", port}, "test", 0, 10.0, test::jobKey(), test::kKeySource);
  pe0->set("big", std::string(1 << 20, 'x'));

  // PE 1 asks for the 1 MiB value again and again (more than the sockets buffer) and never reads
  // an answer.
  int stuck = connectProven(port, 1);
  for (std::uint32_t id = 2; id < 34; ++id) {
    sendRaw(stuck, wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Get)).u32(1).str("big").frame());
  }
  // Meanwhile the server keeps serving everyone else at once (it used to block in a send for 10 s).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = Clock::now();
  pe0->set("k", "v");
  EXPECT_EQ(pe0->get({"k"}, "read"), std::vector<std::string>{"v"});
  // (It used to block in a send for 10 s; the bound leaves room for a slow, sanitized build.)
  EXPECT_LT(secondsSince(start), 2.0) << "one stuck reader held up the others";

  // A rendezvous with PE 1 fails with PeerDead naming it once it is dropped, long before the
  // client's own timeout.
  start = Clock::now();
  std::string msg = errorMessageOf([&] { pe0->gather("g/0", 2, 0, "", "rendezvous", [](std::uint32_t m) { return "PE " + std::to_string(m); }); }, ErrorCode::PeerDead);
  EXPECT_TRUE(contains(msg, "PE 1"));
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_EQ(pe0->goneRank(), 1);

  // What PE 1 received is whole frames, at most one cut short at the very end, then the close:
  // never a frame that follows a partial one.
  std::string got = readUntilClosed(stuck, 5.0);
  std::size_t at = 0, frames = 0;
  while (got.size() - at >= 4) {
    std::uint32_t len;
    std::memcpy(&len, got.data() + at, 4);
    if (got.size() - at < 4 + std::size_t{len}) break;  // the cut-short tail
    wire::ByteReader r(std::string_view(got).substr(at + 4, len));
    EXPECT_NO_THROW(wire::readHead(r)) << "frame " << frames << " is corrupt";
    at += 4 + len;
    ++frames;
  }
  EXPECT_GT(frames, 0u);
  ::close(stuck);
  pe0->bye();
}

TEST(StoreFailure, SendToAStoreThatStopsReadingIsBoundedByTheTimeout) {
  // A fake store: answers the hello, then never reads again.
  int port = 0;
  const int listener = test::listenRaw(port);
  std::promise<void> done;
  std::thread fake([&] {
    int fd = ::accept(listener, nullptr, nullptr);
    const Nonce nonce = makeNonce();
    sendRaw(fd, wire::encodeGreeting(nonce));
    const std::string hello = readFrame(fd);
    const wire::HelloVerdict v = wire::checkHello(test::jobKey(), nonce, std::string_view(hello).substr(4));
    ASSERT_TRUE(v.proven) << v.why;
    sendRaw(fd, wire::Writer(v.id, 0).fixed(v.answer).frame());
    done.get_future().wait();
    ::close(fd);
  });
  StoreClient client({"127.0.0.1", port}, "test", 3, 0.5, test::jobKey(), test::kKeySource);
  auto start = Clock::now();
  // 64 MiB cannot fit in the socket buffers: the send must give up, not block forever.
  std::string msg = errorMessageOf([&] { client.set("k", std::string(64 << 20, 'x')); }, ErrorCode::Timeout);
  EXPECT_GE(secondsSince(start), 0.45);
  EXPECT_LT(secondsSince(start), 5.0);
  EXPECT_TRUE(contains(msg, "PE 3"));
  EXPECT_TRUE(contains(msg, "127.0.0.1:" + std::to_string(port)));
  EXPECT_TRUE(contains(msg, "AXON_TIMEOUT"));
  // The stream is torn: the connection is closed rather than used again.
  EXPECT_TRUE(contains(errorMessageOf([&] { client.set("k", "v"); }, ErrorCode::Bootstrap), "closed"));
  done.set_value();
  fake.join();
  ::close(listener);
}

TEST(StoreFailure, AnotherAxonBuildFailsEveryRankNamingBothBuilds) {
  StoreServer server({"127.0.0.1", 0}, test::storeOptions(10.0, "1.0.0+gaaaa"));
  const net::HostPort addr{"127.0.0.1", server.port()};
  StoreClient pe0(addr, "test", 0, 10.0, test::jobKey(), test::kKeySource, "1.0.0+gaaaa");
  // PE 0 already waits in the first rendezvous when PE 1 arrives.
  auto waiting = std::async(std::launch::async, [&] { return pe0.gather("init/0", 2, 0, "card", "init", [](std::uint32_t m) { return "PE " + std::to_string(m); }); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::string mine = errorMessageOf([&] { StoreClient pe1(addr, "test", 1, 10.0, test::jobKey(), test::kKeySource, "1.1.0+gbbbb"); }, ErrorCode::Bootstrap);
  ASSERT_EQ(waiting.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  std::string theirs = errorMessageOf([&] { waiting.get(); }, ErrorCode::Bootstrap);
  for (const std::string& m : {mine, theirs}) {
    EXPECT_TRUE(contains(m, "axon 1.1.0+gbbbb on PE 1, axon 1.0.0+gaaaa on PE 0")) << m;
  }
  // Later rendezvous fail the same way at once.
  EXPECT_TRUE(contains(errorMessageOf([&] { pe0.gather("next/0", 1, 0, "", "next", {}); }, ErrorCode::Bootstrap),
                       "axon 1.1.0+gbbbb on PE 1"));
}

TEST(StoreFailure, AnotherWireVersionLearnsOursFromTheGreetingAndTheJobGoesOn) {
  StoreServer server({"127.0.0.1", 0}, test::storeOptions(10.0));
  StoreClient pe0({"127.0.0.1", server.port()}, "test", 0, 10.0, test::jobKey(), test::kKeySource);
  int fd = connectRaw(server.port());
  // The greeting comes first and names the store's wire version, whatever the client speaks.
  std::uint16_t version = 0;
  EXPECT_NO_THROW(wire::decodeGreeting(std::string_view(readFrame(fd)).substr(4), version));
  EXPECT_EQ(version, wire::kWireVersion);
  // A hello in a future wire version (or an old one without proof) is refused and dropped.
  sendRaw(fd, wire::Writer(1, static_cast<std::uint8_t>(wire::Op::Hello), 99).u32(5).str("9.9.9").frame());
  const std::string refusal = readFrame(fd);
  ASSERT_GT(refusal.size(), 4u);
  wire::ByteReader r(std::string_view(refusal).substr(4));
  EXPECT_EQ(wire::readHead(r).code, static_cast<std::uint8_t>(wire::Status::Refused));
  readUntilClosed(fd, 5.0);
  ::close(fd);
  // Nothing it claimed reached the job: no refusal of builds, no PE 5.
  EXPECT_EQ(pe0.gather("after/0", 1, 0, "x", "a rendezvous", {}), std::vector<std::string>{"x"});
  EXPECT_EQ(pe0.goneRank(), -1);
}

// Found by review: a member count near 2^32 made the server reserve it and abort rank 0.
TEST(StoreFailure, AnImpossibleGroupSizeIsRefusedNotAllocated) {
  StoreServer server({"127.0.0.1", 0}, test::storeOptions(10.0));
  StoreClient pe0({"127.0.0.1", server.port()}, "test", 0, 10.0, test::jobKey(), test::kKeySource);
  std::string msg = errorMessageOf([&] { pe0.gather("huge/0", 0xFFFFFFFFu, 0, "", "a rendezvous", {}); }, ErrorCode::Bootstrap);
  EXPECT_TRUE(contains(msg, "at most"));
  pe0.set("still", "here");
  EXPECT_EQ(pe0.get({"still"}, "read"), std::vector<std::string>{"here"});
}

// Found by review: a group its members were told had failed could still be completed by a late
// member, which then saw success where the others saw PeerDead.
TEST(StoreFailure, AFailedGroupFailsItsLateMembersToo) {
  StoreServer server({"127.0.0.1", 0}, test::storeOptions(10.0));
  const net::HostPort addr{"127.0.0.1", server.port()};
  StoreClient pe0(addr, "test", 0, 10.0, test::jobKey(), test::kKeySource), pe1(addr, "test", 1, 10.0, test::jobKey(), test::kKeySource);
  // PE 2 contributes, then dies: its connection closes without a goodbye.
  int pe2 = connectProven(server.port(), 2);
  sendRaw(pe2, wire::Writer(2, static_cast<std::uint8_t>(wire::Op::Gather)).str("g/9").u32(3).u32(2).str("").frame());
  auto one = std::async(std::launch::async, [&] { return pe1.gather("g/9", 3, 1, "", "step", {}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ::close(pe2);
  EXPECT_TRUE(contains(errorMessageOf([&] { one.get(); }, ErrorCode::PeerDead), "PE 2"));
  // The last member would complete the group: it must hear what the others heard.
  EXPECT_TRUE(contains(errorMessageOf([&] { pe0.gather("g/9", 3, 0, "", "step", {}); }, ErrorCode::PeerDead), "PE 2"));
}

TEST(StoreFailure, GarbageClosesOnlyThatConnection) {
  StoreServer server({"127.0.0.1", 0}, test::storeOptions(10.0));
  StoreClient pe0({"127.0.0.1", server.port()}, "test", 0, 10.0, test::jobKey(), test::kKeySource);
  int fd = connectRaw(server.port());
  sendRaw(fd, std::string("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
  readUntilClosed(fd, 5.0);
  ::close(fd);
  pe0.set("still", "here");
  EXPECT_EQ(pe0.get({"still"}, "read"), std::vector<std::string>{"here"});
  EXPECT_EQ(pe0.goneRank(), -1) << "a stranger that never said hello is not a rank";
}

TEST(StoreFailure, EveryRankLearnsOfAGoneRankWithoutAsking) {
  StoreServer server({"127.0.0.1", 0}, test::storeOptions(10.0));
  const net::HostPort addr{"127.0.0.1", server.port()};
  StoreClient pe0(addr, "test", 0, 10.0, test::jobKey(), test::kKeySource);
  auto pe1 = std::make_unique<StoreClient>(addr, "test", 1, 10.0, test::jobKey(), test::kKeySource);
  auto pe2 = std::make_unique<StoreClient>(addr, "test", 2, 10.0, test::jobKey(), test::kKeySource);
  EXPECT_EQ(pe0.goneRank(), -1);
  pe2->bye();  // a goodbye is not a death
  pe2.reset();
  pe1.reset();  // closes without a goodbye, as a killed PE's socket does
  const auto start = Clock::now();
  while (pe0.goneRank() < 0 && secondsSince(start) < 5.0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(pe0.goneRank(), 1);
  EXPECT_TRUE(contains(pe0.goneReason(), "PE 1"));
  EXPECT_LT(secondsSince(start), 1.0);
  // A rank that connects later hears of it too.
  StoreClient late(addr, "test", 3, 10.0, test::jobKey(), test::kKeySource);
  const auto again = Clock::now();
  while (late.goneRank() < 0 && secondsSince(again) < 5.0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(late.goneRank(), 1);
}

TEST(StoreFailure, AStoreThatGoesAwayReportsRankZero) {
  auto server = std::make_unique<StoreServer>(net::HostPort{"127.0.0.1", 0}, test::storeOptions(10.0));
  StoreClient pe1({"127.0.0.1", server->port()}, "test", 1, 10.0, test::jobKey(), test::kKeySource);
  server.reset();  // rank 0's process, which serves the store, is gone
  const auto start = Clock::now();
  while (pe1.goneRank() < 0 && secondsSince(start) < 5.0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(pe1.goneRank(), 0);
  EXPECT_TRUE(contains(pe1.goneReason(), "closed"));
}

}  // namespace
}  // namespace axon
