// Two-sided messages between PEs on the host backend (one node, or emulated nodes over UCX):
// every protocol between every pair, MPI's matching rules, truncation, probes, many outstanding
// requests, and thousands of random messages, each one checked.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "p2p_random_messages.hpp"

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

using axon::test::firstWrong;
using axon::test::message;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Eager, exactly the eager limit, one past it (rendezvous), empty and large.
const std::vector<std::size_t> kSizes = {0, 1, 8, 4096, 8192, 8193, 300000, 1u << 20};

TEST(P2p, EveryPairEveryProtocol) {
  for (std::size_t s = 0; s < kSizes.size(); ++s) {
    const std::size_t bytes = kSizes[s];
    std::vector<axon::Request> reqs;
    std::vector<std::vector<unsigned char>> out, in;
    for (int pe = 0; pe < np(); ++pe) {
      out.push_back(message(me(), pe * 100 + s, bytes));
      in.emplace_back(bytes + 16, 0xee);
    }
    for (int pe = 0; pe < np(); ++pe) reqs.push_back(axon::irecv(in[pe].data(), bytes + 16, pe, static_cast<int>(s)));
    for (int pe = 0; pe < np(); ++pe) reqs.push_back(axon::isend(out[pe].data(), bytes, pe, static_cast<int>(s)));
    for (int pe = 0; pe < np(); ++pe) {
      axon::Status st = reqs[pe].wait();
      EXPECT_EQ(st.source, pe);
      EXPECT_EQ(st.tag, static_cast<int>(s));
      EXPECT_EQ(st.bytes, bytes);
      EXPECT_EQ(firstWrong(in[pe].data(), pe, me() * 100 + s, bytes), -1) << bytes << " B from PE " << pe;
      EXPECT_EQ(in[pe][bytes], 0xee) << "written past the message";
    }
    axon::waitAll(reqs);
  }
  axon::barrierAll();
}

TEST(P2p, BlockingSendAndRecvInARing) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  for (std::size_t bytes : kSizes) {
    auto out = message(me(), bytes, bytes);
    std::vector<unsigned char> in(bytes);
    // Even PEs send first, odd ones receive first: blocking calls of a rendezvous size cannot all
    // send at once.
    if (me() % 2 == 0 || np() == 1) {
      axon::send(out.data(), bytes, right, 5);
      auto st = axon::recv(in.data(), bytes, left, 5);
      EXPECT_EQ(st.bytes, bytes);
    } else {
      auto st = axon::recv(in.data(), bytes, left, 5);
      EXPECT_EQ(st.bytes, bytes);
      axon::send(out.data(), bytes, right, 5);
    }
    EXPECT_EQ(firstWrong(in.data(), left, bytes, bytes), -1) << bytes;
  }
  axon::barrierAll();
}

TEST(P2p, WildcardsTakeEachSourcesMessagesInSendingOrder) {
  // Every PE sends 40 messages to PE 0 with tags cycling through 0..3, mixing eager and rendezvous
  // sizes; PE 0 takes them with wildcard receives. Per source they must come in sending order
  // whatever their tag or size: messages of a pair never overtake.
  const int count = 40;
  std::vector<std::vector<unsigned char>> out;
  std::vector<axon::Request> sends;
  for (int k = 0; k < count; ++k) {
    const std::size_t bytes = k % 5 == 0 ? 20000 : 16 + k;
    out.push_back(message(me(), k, bytes));
  }
  for (int k = 0; k < count; ++k) sends.push_back(axon::isend(out[k].data(), out[k].size(), 0, k % 4));
  if (me() == 0) {
    std::vector<int> next(np(), 0);
    std::vector<unsigned char> buf(20000);
    for (int n = 0; n < count * np(); ++n) {
      const int source = n % 3 == 0 ? axon::kAnySource : (n / 3) % np();
      axon::Status st;
      // A source-specific receive needs that source to have messages left.
      if (source != axon::kAnySource && next[source] == count) {
        st = axon::recv(buf.data(), buf.size(), axon::kAnySource, axon::kAnyTag);
      } else {
        st = axon::recv(buf.data(), buf.size(), source, axon::kAnyTag);
      }
      const int k = next[st.source]++;
      ASSERT_EQ(st.tag, k % 4) << "message " << k << " of PE " << st.source << " overtaken";
      ASSERT_EQ(st.bytes, out[k].size());
      ASSERT_EQ(firstWrong(buf.data(), st.source, k, st.bytes), -1);
    }
  }
  axon::waitAll(sends);
  axon::barrierAll();
}

TEST(P2p, TagsSelectAndSameTagMessagesKeepTheirOrder) {
  // PE 0 sends tags 1, 2, 1, 2 ... (small and large alternating) to every PE, which receives all
  // tag-2 messages first, then tag 1: each tag's messages in order.
  const int count = 12;
  std::vector<std::vector<unsigned char>> out;
  std::vector<axon::Request> sends;
  if (me() == 0) {
    for (int pe = 0; pe < np(); ++pe) {
      for (int k = 0; k < count; ++k) {
        out.push_back(message(0, pe * 1000 + k, k % 3 == 0 ? 50000 : 100 + k));
        sends.push_back(axon::isend(out.back().data(), out.back().size(), pe, 1 + k % 2));
      }
    }
  }
  std::vector<unsigned char> buf(50000);
  for (int tag : {2, 1}) {
    for (int k = tag - 1; k < count; k += 2) {
      auto st = axon::recv(buf.data(), buf.size(), 0, tag);
      ASSERT_EQ(st.bytes, k % 3 == 0 ? 50000u : 100u + k) << "tag " << tag << " message " << k;
      ASSERT_EQ(firstWrong(buf.data(), 0, me() * 1000 + k, st.bytes), -1);
    }
  }
  axon::waitAll(sends);
  axon::barrierAll();
}

TEST(P2p, ManyOutstandingRequests) {
  // 300 receives posted per peer before any send, in reverse tag order; sends in tag order.
  const int per = 300;
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  std::vector<std::uint64_t> in(per, 0), out(per);
  std::vector<axon::Request> recvs, sends;
  for (int t = per - 1; t >= 0; --t) recvs.push_back(axon::irecv(&in[t], sizeof(std::uint64_t), left, t));
  axon::barrierAll();
  for (int t = 0; t < per; ++t) {
    out[t] = static_cast<std::uint64_t>(me()) << 32 | t;
    sends.push_back(axon::isend(&out[t], sizeof(std::uint64_t), right, t));
  }
  axon::waitAll(sends);
  axon::waitAll(recvs);
  for (int t = 0; t < per; ++t) ASSERT_EQ(in[t], static_cast<std::uint64_t>(left) << 32 | t);
  // test() ends each completed request, and waitAny finds any of them.
  axon::Status st;
  EXPECT_TRUE(recvs[0].test(&st));
  EXPECT_EQ(st.tag, per - 1);
  EXPECT_LT(axon::waitAny(recvs), recvs.size());
  axon::barrierAll();
}

TEST(P2p, TruncationFailsTheReceiveNamingBothSizes) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  for (std::size_t bytes : {std::size_t{100}, std::size_t{100000}}) {  // eager, rendezvous
    auto out = message(me(), bytes, bytes);
    auto send = axon::isend(out.data(), bytes, right, 9);
    std::vector<unsigned char> small(bytes / 2, 0x5a);
    try {
      axon::recv(small.data(), small.size(), left, 9);
      FAIL() << "a " << bytes << "-byte message fit " << small.size() << " bytes";
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::Truncated) << e.what();
      EXPECT_TRUE(contains(e.what(), std::to_string(bytes) + " bytes")) << e.what();
      EXPECT_TRUE(contains(e.what(), "only " + std::to_string(bytes / 2))) << e.what();
    }
    // Nothing was cut into the buffer, and the sender completes normally, as in MPI.
    EXPECT_TRUE(std::all_of(small.begin(), small.end(), [](unsigned char c) { return c == 0x5a; }));
    send.wait();
  }
  // The pair still works afterwards.
  std::uint64_t v = me(), got = 0;
  auto s = axon::isend(&v, sizeof v, right, 10);
  axon::recv(&got, sizeof got, left, 10);
  s.wait();
  EXPECT_EQ(got, static_cast<std::uint64_t>(left));
  axon::barrierAll();
}

// A receive posted in the symmetric heap before its message is offered to the sender, which copies
// the message straight into it (p2p/local_channel.hpp): one copy, no credit, and MPI's rules
// unchanged. Unless AXON_P2P_POSTED=0, every message of the first part must take that path (PE
// 1's receive is posted, and PE 0 has nothing in flight to it, before PE 0 sends) when PEs 0 and 1
// share a node.
TEST(P2p, MessagesGoStraightIntoReceivesPostedInTheHeap) {
  const std::size_t room = 8192 + 64;
  auto* a = static_cast<unsigned char*>(axon::mallocHost(room));
  auto* b = static_cast<unsigned char*>(axon::mallocHost(room));
  const bool sender = me() == 0, receiver = me() == 1;
  // 1. One message at a time into a waiting receive: every size to the eager limit, and empty.
  const std::uint64_t before = axon::messageStats().postedSent;
  int sent = 0;
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{4096}, std::size_t{8192}}) {
    axon::Request r;
    if (receiver) {
      std::memset(a, 0xee, room);
      r = axon::irecv(a, room, 0, 4);
    }
    axon::barrierAll();
    if (sender) {
      auto out = message(0, 500 + bytes, bytes);
      axon::send(out.data(), bytes, 1, 4);
      ++sent;
    }
    if (receiver) {
      const axon::Status st = r.wait();
      EXPECT_EQ(st.source, 0);
      EXPECT_EQ(st.tag, 4);
      EXPECT_EQ(st.bytes, bytes);
      EXPECT_EQ(firstWrong(a, 0, 500 + bytes, bytes), -1) << bytes << " B";
      EXPECT_EQ(a[bytes], 0xee) << "written past the message";
    }
    axon::barrierAll();
  }
  // PEs of one node map each other's heap; across nodes messages go by UCX, which offers nothing.
  if (sender && axon::test::postedOffersOn() && axon::ptr(a, 1) != nullptr) {
    EXPECT_EQ(axon::messageStats().postedSent - before, static_cast<std::uint64_t>(sent))
        << "a receive posted in the heap before its message did not take it straight";
  }
  // 2. The offered receive (tag 2) does not take a message of another tag, which waits; the
  //    later receive for that tag takes it.
  axon::Request r2;
  if (receiver) r2 = axon::irecv(b, room, 0, 2);
  axon::barrierAll();
  if (sender) {
    auto m1 = message(0, 1, 100), m2 = message(0, 2, 200);
    axon::send(m1.data(), m1.size(), 1, 1);
    axon::send(m2.data(), m2.size(), 1, 2);
  }
  if (receiver) {
    const axon::Status s1 = axon::recv(a, room, 0, 1);
    EXPECT_EQ(s1.bytes, 100u);
    EXPECT_EQ(firstWrong(a, 0, 1, 100), -1);
    const axon::Status s2 = r2.wait();
    EXPECT_EQ(s2.bytes, 200u);
    EXPECT_EQ(firstWrong(b, 0, 2, 200), -1);
  }
  axon::barrierAll();
  // 3. A wildcard receive posted first comes first: nothing is offered past it.
  axon::Request any, exact;
  if (receiver) {
    any = axon::irecv(a, room, axon::kAnySource, 5);
    exact = axon::irecv(b, room, 0, 5);
  }
  axon::barrierAll();
  if (sender) {
    auto m1 = message(0, 11, 64), m2 = message(0, 12, 65);
    axon::send(m1.data(), m1.size(), 1, 5);
    axon::send(m2.data(), m2.size(), 1, 5);
  }
  if (receiver) {
    EXPECT_EQ(any.wait().bytes, 64u);
    EXPECT_EQ(firstWrong(a, 0, 11, 64), -1) << "the wildcard posted first did not take the first message";
    EXPECT_EQ(exact.wait().bytes, 65u);
    EXPECT_EQ(firstWrong(b, 0, 12, 65), -1);
  }
  axon::barrierAll();
  // 4. A message larger than the offered receive fails it with Truncated; the send completes.
  axon::Request small;
  if (receiver) {
    std::memset(a, 0x5a, room);
    small = axon::irecv(a, 8, 0, 6);
  }
  axon::barrierAll();
  if (sender) {
    auto m = message(0, 13, 16);
    axon::send(m.data(), m.size(), 1, 6);
  }
  if (receiver) {
    try {
      small.wait();
      ADD_FAILURE() << "a 16-byte message fit an 8-byte receive";
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::Truncated) << e.what();
    }
    EXPECT_EQ(a[0], 0x5a) << "the receive was written into";
  }
  axon::barrierAll();
  // 5. Many receives posted ahead, one tag each, then as many messages back to back: some go
  //    straight in, some through the ring; each receive gets its own, whole.
  const int many = 64;
  const std::size_t each = 96;
  auto* arena = static_cast<unsigned char*>(axon::mallocHost(many * each));
  std::vector<axon::Request> reqs;
  if (receiver) {
    for (int k = 0; k < many; ++k) reqs.push_back(axon::irecv(arena + k * each, each, 0, 100 + k));
  }
  axon::barrierAll();
  if (sender) {
    for (int k = 0; k < many; ++k) {
      auto m = message(0, 1000 + k, each - (k % 7));
      axon::send(m.data(), m.size(), 1, 100 + k);
    }
  }
  if (receiver) {
    for (int k = 0; k < many; ++k) {
      const axon::Status st = reqs[k].wait();
      EXPECT_EQ(st.tag, 100 + k);
      EXPECT_EQ(st.bytes, each - (k % 7));
      EXPECT_EQ(firstWrong(arena + k * each, 0, 1000 + k, st.bytes), -1) << "message " << k;
    }
  }
  axon::barrierAll();
  axon::free(arena);
  axon::free(b);
  axon::free(a);
}

TEST(P2p, SelfSendsAndEmptyMessages) {
  for (std::size_t bytes : kSizes) {
    auto out = message(me(), bytes + 1, bytes);
    std::vector<unsigned char> in(bytes);
    auto s = axon::isend(out.data(), bytes, me(), 3);
    auto st = axon::recv(in.data(), bytes, me(), 3);
    s.wait();
    EXPECT_EQ(st.source, me());
    EXPECT_EQ(st.bytes, bytes);
    EXPECT_EQ(firstWrong(in.data(), me(), bytes + 1, bytes), -1);
  }
  // Empty messages with null buffers.
  axon::send(nullptr, 0, (me() + 1) % np(), 0);
  auto st = axon::recv(nullptr, 0, axon::kAnySource, 0);
  EXPECT_EQ(st.bytes, 0u);
  axon::barrierAll();
}

TEST(P2p, ProbeLooksWithoutTaking) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  auto out = message(me(), 77, 30000);
  auto s = axon::isend(out.data(), out.size(), right, 77);
  axon::Status st = axon::probe(axon::kAnySource, 77);
  EXPECT_EQ(st.source, left);
  EXPECT_EQ(st.bytes, 30000u);
  EXPECT_FALSE(axon::iprobe(left, 78).has_value());
  auto again = axon::iprobe(left, axon::kAnyTag);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->tag, 77);
  std::vector<unsigned char> in(st.bytes);  // sized by the probe, as MPI programs do
  axon::recv(in.data(), in.size(), st.source, st.tag);
  EXPECT_EQ(firstWrong(in.data(), left, 77, in.size()), -1);
  s.wait();
  axon::barrierAll();
}

TEST(P2p, TeamsAreSeparateCommunicators) {
  // Odd and even PEs form teams; a message on a team is matched only there and its source is an
  // index in that team.
  axon::Team half = axon::Team::world().split(me() % 2, me());
  const int n = half.nPes(), i = half.myPe();
  std::uint64_t out = 1000 + me(), in = 0, worldIn = 0;
  std::uint64_t worldOut = 2000 + me();
  auto sw = axon::isend(&worldOut, sizeof worldOut, (me() + 1) % np(), 1);  // world, same tag
  auto s = axon::isend(&out, sizeof out, (i + 1) % n, 1, half);
  auto st = axon::recv(&in, sizeof in, axon::kAnySource, 1, half);
  EXPECT_EQ(st.source, (i + n - 1) % n);
  EXPECT_EQ(in, 1000u + half.worldPe((i + n - 1) % n));
  auto ws = axon::recv(&worldIn, sizeof worldIn, axon::kAnySource, 1);
  EXPECT_EQ(ws.source, (me() + np() - 1) % np());
  EXPECT_EQ(worldIn, 2000u + (me() + np() - 1) % np());
  s.wait();
  sw.wait();
  half.destroy();
  axon::barrierAll();
}

TEST(P2p, BadArgumentsAreRefusedClearly) {
  std::uint64_t v = 0;
  auto expectCode = [](axon::ErrorCode code, const std::string& part, auto&& call) {
    try {
      call();
      ADD_FAILURE() << "no error; expected " << part;
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), code) << e.what();
      EXPECT_TRUE(contains(e.what(), part)) << e.what();
    }
  };
  expectCode(axon::ErrorCode::InvalidPe, "dest " + std::to_string(np()), [&] { axon::send(&v, 8, np()); });
  expectCode(axon::ErrorCode::InvalidPe, "dest -1", [&] { axon::isend(&v, 8, -1); });
  expectCode(axon::ErrorCode::InvalidArgument, "tag -2", [&] { axon::send(&v, 8, 0, -2); });
  expectCode(axon::ErrorCode::InvalidArgument, "tag -1", [&] { axon::send(&v, 8, 0, axon::kAnyTag); });
  expectCode(axon::ErrorCode::InvalidPe, "source " + std::to_string(np()), [&] { axon::irecv(&v, 8, np()); });
  expectCode(axon::ErrorCode::InvalidArgument, "buf is null", [&] { axon::isend(nullptr, 8, 0); });
  expectCode(axon::ErrorCode::InvalidArgument, "buf is null", [&] { axon::irecv(nullptr, 8); });
  expectCode(axon::ErrorCode::InvalidArgument, "invalid", [&] { axon::send(&v, 8, 0, 0, axon::Team()); });
  axon::Request empty;
  expectCode(axon::ErrorCode::InvalidArgument, "invalid", [&] { empty.wait(); });
  axon::barrierAll();
}

TEST(P2p, AFloodOfUnexpectedMessagesStaysWithinTheBound) {
  // Every other PE sends PE 0 more small messages than its share of PE 0's bound before PE 0
  // posts anything: past its share a sender announces instead of sending data, so what waits at
  // PE 0 never passes the bound, and every message still arrives, in order.
  const axon::MessageStats before = axon::messageStats();
  const std::uint64_t share = before.bound / np();
  const std::size_t bytes = 2048;
  const int count = static_cast<int>(std::min<std::uint64_t>(2 * share / bytes + 10, 3000));
  std::vector<std::vector<unsigned char>> out;
  std::vector<axon::Request> sends;
  if (me() != 0) {
    for (int k = 0; k < count; ++k) {
      out.push_back(message(me(), k, bytes));
      sends.push_back(axon::isend(out.back().data(), bytes, 0, 4));
    }
  }
  axon::barrierAll();
  if (me() == 0) {
    // Every message arrives (its data, or its announcement once the sender's share is spent)
    // before PE 0 takes any: taking them would return credit, and the senders might never run
    // out of it (their rings hold 32 messages at a time).
    const std::uint64_t all = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(np() - 1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (axon::messageStats().waitingMessages < all && std::chrono::steady_clock::now() < deadline) {
    }
    const axon::MessageStats s = axon::messageStats();
    EXPECT_EQ(s.waitingMessages, all);
    EXPECT_LE(s.waitingBytesPeak, s.bound);
    std::vector<int> next(np(), 0);
    std::vector<unsigned char> buf(bytes);
    for (int n = 0; n < count * (np() - 1); ++n) {
      const axon::Status st = axon::recv(buf.data(), bytes, axon::kAnySource, 4);
      ASSERT_EQ(firstWrong(buf.data(), st.source, next[st.source]++, bytes), -1);
    }
    EXPECT_EQ(axon::messageStats().waitingMessages, 0u);
  }
  axon::waitAll(sends);
  if (me() != 0 && static_cast<std::uint64_t>(count) * (bytes + 64) > share) {
    EXPECT_GT(axon::messageStats().rendezvousSent, before.rendezvousSent) << "the share was passed, yet all went eagerly";
  }
  axon::barrierAll();
}

// Thousands of random messages (AXON_TEST_P2P_MESSAGES, default 10,000) in rounds: random pairs
// (self-sends too), sizes up to 4 MiB, tags, and receives with every kind of wildcard. Every PE
// draws the same plan from one seed, so each knows what it must receive; each message's bytes name
// it, so a receive checks it got a whole, unique, correctly ordered message.
// Host buffers, each of its own size.
struct HostBuffers {
  std::vector<unsigned char> make(std::size_t bytes, std::uint64_t) { return std::vector<unsigned char>(bytes); }
  void* data(std::vector<unsigned char>& b) { return b.data(); }
  void write(std::vector<unsigned char>& b, const std::vector<unsigned char>& v) { b = v; }
  std::vector<unsigned char> read(std::vector<unsigned char>& b, std::size_t bytes) {
    return std::vector<unsigned char>(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(bytes));
  }
};

TEST(P2p, RandomMessagesEachVerified) {
  const char* env = std::getenv("AXON_TEST_P2P_MESSAGES");
  HostBuffers buffers;
  const int checked = axon::test::runRandomMessages(buffers, env ? std::atoi(env) : 10000, 20261124);
  if (me() == 0) std::printf("[ p2p ] %d messages received and checked on PE 0\n", checked);
}

// Buffers carved from one symmetric host heap arena (16 MiB a PE), so that receives posted first
// are offered to their senders; past the arena, plain host memory. The arena is reused once
// every buffer of a round is gone.
struct HeapBuffers {
  static constexpr std::size_t kArena = 16u << 20;
  unsigned char* arena = static_cast<unsigned char*>(axon::mallocHost(kArena));
  std::size_t used = 0;
  std::weak_ptr<int> round;  // alive while any buffer carved since the last reset is
  struct Handle {
    unsigned char* p = nullptr;
    std::shared_ptr<std::vector<unsigned char>> own;  // past the arena
    std::shared_ptr<int> round;
  };
  ~HeapBuffers() { axon::free(arena); }
  Handle make(std::size_t bytes, std::uint64_t) {
    auto r = round.lock();
    if (!r) {
      used = 0;
      r = std::make_shared<int>(0);
      round = r;
    }
    const std::size_t room = (bytes + 63) / 64 * 64;
    if (used + room <= kArena) {
      Handle h{arena + used, nullptr, r};
      used += room;
      return h;
    }
    auto own = std::make_shared<std::vector<unsigned char>>(bytes + 1);
    return Handle{own->data(), own, r};
  }
  void* data(Handle& h) { return h.p; }
  void write(Handle& h, const std::vector<unsigned char>& v) { std::copy(v.begin(), v.end(), h.p); }
  std::vector<unsigned char> read(Handle& h, std::size_t bytes) { return std::vector<unsigned char>(h.p, h.p + bytes); }
};

// The same random traffic with every round's receives posted before its sends, in the heap: the
// path into posted receives mixed with every other, wildcards included.
TEST(P2p, RandomMessagesIntoReceivesPostedFirst) {
  const char* env = std::getenv("AXON_TEST_P2P_MESSAGES");
  const std::uint64_t before = axon::messageStats().postedSent;
  int checked = 0;
  {
    HeapBuffers buffers;
    checked = axon::test::runRandomMessages(buffers, env ? std::atoi(env) / 2 : 5000, 20261128, true);
  }
  const std::uint64_t straight = axon::messageStats().postedSent - before;
  if (me() == 0) std::printf("[ p2p ] %d messages checked on PE 0; %llu went straight into posted receives\n", checked,
                             static_cast<unsigned long long>(straight));
  axon::barrierAll();
}

}  // namespace
