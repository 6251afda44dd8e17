// MPI's matching rules (src/p2p/matcher.hpp) on the host: wildcards, order, probe, cancellation,
// the bytes unexpected messages hold, and a random cross-check against a
// direct reading of the rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "axon/error.hpp"
#include "p2p/matcher.hpp"

namespace axon::p2p {
namespace {

Arrival message(int source, int tag, std::uint64_t cookie, std::size_t held = 8) {
  return Arrival{Envelope{source, tag, held}, held, cookie};
}

TEST(P2pMatcher, AMessageGoesToTheEarliestMatchingReceive) {
  Matcher m(4);
  EXPECT_FALSE(m.post({2, 5, 1}).has_value());           // source 2, tag 5
  EXPECT_FALSE(m.post({kAnySource, 5, 2}).has_value());  // any source, tag 5
  EXPECT_FALSE(m.post({kAnySource, kAnyTag, 3}).has_value());
  // From source 1 with tag 5: not the first receive (source 2), the second.
  auto r = m.arrive(message(1, 5, 100));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cookie, 2u);
  // From source 2 with tag 5: the first.
  r = m.arrive(message(2, 5, 101));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cookie, 1u);
  // Tag 9 from source 3: only the full wildcard takes it.
  r = m.arrive(message(3, 9, 102));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->cookie, 3u);
  EXPECT_EQ(m.postedCount(), 0u);
}

TEST(P2pMatcher, AReceiveTakesTheEarliestMatchingQueuedMessage) {
  Matcher m(4);
  EXPECT_EQ(m.arrive(message(1, 7, 10)).has_value(), false);
  EXPECT_EQ(m.arrive(message(2, 7, 11)).has_value(), false);
  EXPECT_EQ(m.arrive(message(1, 8, 12)).has_value(), false);
  auto a = m.post({1, kAnyTag, 1});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->cookie, 10u);
  a = m.post({kAnySource, 8, 2});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->cookie, 12u);
  a = m.post({kAnySource, kAnyTag, 3});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->cookie, 11u);
  EXPECT_EQ(m.unexpectedCount(), 0u);
  EXPECT_EQ(m.unexpectedBytes(), 0u);
}

TEST(P2pMatcher, MessagesOfOnePairAndTagNeverOvertake) {
  Matcher m(2);
  for (std::uint64_t k = 0; k < 100; ++k) m.arrive(message(1, 3, k));
  for (std::uint64_t k = 0; k < 100; ++k) {
    // Alternate exact and wildcard receives: each takes the oldest.
    const PostedReceive r = k % 2 ? PostedReceive{1, 3, 1000 + k} : PostedReceive{kAnySource, kAnyTag, 1000 + k};
    auto a = m.post(r);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(a->cookie, k);
  }
}

TEST(P2pMatcher, ProbeLooksWithoutTaking) {
  Matcher m(3);
  EXPECT_FALSE(m.probe(kAnySource, kAnyTag).has_value());
  m.arrive(Arrival{Envelope{2, 4, 640}, 640, 7});
  auto e = m.probe(kAnySource, 4);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->source, 2);
  EXPECT_EQ(e->tag, 4);
  EXPECT_EQ(e->bytes, 640u);
  EXPECT_FALSE(m.probe(1, kAnyTag).has_value());
  EXPECT_EQ(m.unexpectedCount(), 1u);
  EXPECT_EQ(m.post({2, 4, 1})->cookie, 7u);
}

TEST(P2pMatcher, ZeroByteMessagesAndSelfSendsMatchLikeOthers) {
  Matcher m(2);
  EXPECT_EQ(m.arrive(message(0, 0, 1, 0)).has_value(), false);  // from itself, 0 bytes
  EXPECT_EQ(m.post({0, 0, 9})->cookie, 1u);
}

TEST(P2pMatcher, ACancelledReceiveTakesNothing) {
  Matcher m(2);
  m.post({1, 1, 5});
  EXPECT_TRUE(m.cancel(5));
  EXPECT_FALSE(m.cancel(5));
  EXPECT_EQ(m.arrive(message(1, 1, 20)).has_value(), false);
}

// The one receive a source's next message can go to, whatever its tag: what a receiver may offer
// that source to copy into (p2p/local_channel.hpp).
TEST(P2pMatcher, OnlyFromNamesTheSoleReceiveForASource) {
  Matcher m(3);
  EXPECT_FALSE(m.onlyFrom(1).has_value());
  m.post({2, 4, 1});
  EXPECT_FALSE(m.onlyFrom(1).has_value()) << "a receive for source 2 is not one for source 1";
  m.post({1, 7, 2});
  ASSERT_TRUE(m.onlyFrom(1).has_value());
  EXPECT_EQ(m.onlyFrom(1)->cookie, 2u);
  m.post({1, 8, 3});
  EXPECT_FALSE(m.onlyFrom(1).has_value()) << "two receives for source 1: none is the only one";
  // Once one matched, the other is the only one.
  ASSERT_TRUE(m.arrive(message(1, 7, 50)).has_value());
  ASSERT_TRUE(m.onlyFrom(1).has_value());
  EXPECT_EQ(m.onlyFrom(1)->cookie, 3u);
  // A wildcard source receive accepts that source too: nothing is the only one, itself included.
  Matcher w(3);
  w.post({kAnySource, 7, 10});
  EXPECT_FALSE(w.onlyFrom(1).has_value());
  w.post({1, 7, 11});
  EXPECT_FALSE(w.onlyFrom(1).has_value());
  EXPECT_TRUE(w.cancel(10));
  ASSERT_TRUE(w.onlyFrom(1).has_value());
  EXPECT_EQ(w.onlyFrom(1)->cookie, 11u);
}

TEST(P2pMatcher, DescribesWhatIsQueuedForATimeout) {
  Matcher m(4);
  EXPECT_EQ(m.describeUnexpected(3), "none");
  for (int k = 0; k < 5; ++k) m.arrive(Arrival{Envelope{k % 4, 10 + k, 8u * k}, 8, static_cast<std::uint64_t>(k)});
  EXPECT_EQ(m.describeUnexpected(2), "(source 0, tag 10, 0 B), (source 1, tag 11, 8 B), and 3 more");
}

TEST(P2pMatcher, ForeignSourcesAndNegativeTagsAreRefusedLoudly) {
  Matcher m(2);
  EXPECT_THROW(m.arrive(message(2, 0, 1)), Error);
  EXPECT_THROW(m.arrive(message(-1, 0, 1)), Error);
  EXPECT_THROW(m.arrive(message(0, -3, 1)), Error);
}

// The rules read directly: a message goes to the earliest posted receive accepting it; a receive
// takes the earliest queued message it accepts. Random traffic, compared step by step.
TEST(P2pMatcher, RandomTrafficFollowsTheRules) {
  std::mt19937 rng(12345);
  const int members = 4;
  Matcher m(members);
  std::vector<PostedReceive> posted;
  std::vector<Arrival> queued;
  std::uint64_t next = 1;
  for (int step = 0; step < 20000; ++step) {
    if (rng() % 2) {
      const Arrival a = message(static_cast<int>(rng() % members), static_cast<int>(rng() % 3), next++);
      const auto r = m.arrive(a);
      auto it = std::find_if(posted.begin(), posted.end(),
                             [&](const PostedReceive& p) { return accepts(p.source, p.tag, a.envelope); });
      if (it == posted.end()) {
        ASSERT_FALSE(r.has_value()) << "step " << step;
        queued.push_back(a);
      } else {
        ASSERT_TRUE(r.has_value()) << "step " << step;
        ASSERT_EQ(r->cookie, it->cookie) << "step " << step;
        posted.erase(it);
      }
    } else {
      const int source = rng() % 3 == 0 ? kAnySource : static_cast<int>(rng() % members);
      const int tag = rng() % 3 == 0 ? kAnyTag : static_cast<int>(rng() % 3);
      const PostedReceive p{source, tag, next++};
      const auto a = m.post(p);
      auto it = std::find_if(queued.begin(), queued.end(),
                             [&](const Arrival& q) { return accepts(source, tag, q.envelope); });
      if (it == queued.end()) {
        ASSERT_FALSE(a.has_value()) << "step " << step;
        posted.push_back(p);
      } else {
        ASSERT_TRUE(a.has_value()) << "step " << step;
        ASSERT_EQ(a->cookie, it->cookie) << "step " << step;
        queued.erase(it);
      }
    }
    ASSERT_EQ(m.postedCount(), posted.size());
    ASSERT_EQ(m.unexpectedCount(), queued.size());
  }
}

}  // namespace
}  // namespace axon::p2p
