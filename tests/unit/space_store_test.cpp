// The staging server's rules without a network: placement, overlap, visibility, keep_versions,
// holds, leases, the memory policies, and a dead client's reservations and holds.
#include <gtest/gtest.h>

#include <random>

#include "expect_error.hpp"
#include "space/placement.hpp"
#include "space/protocol.hpp"
#include "space/store.hpp"

namespace axon::space {
namespace {

using test::contains;
using test::errorMessageOf;

constexpr ClientId kWriter = 1, kReader = 2, kOther = 3;

Variable var(const std::string& name, std::vector<std::int64_t> shape, int keep = 2) {
  Variable v;
  v.name = name;
  v.shape = Box::whole(shape);
  v.dtype = DataType::Float64;
  v.keepVersions = keep;
  return v;
}

std::uint64_t bytesOf(const Box& b) { return static_cast<std::uint64_t>(byteSize(b, 8)); }

// Reserves and commits; returns the reservation.
Store::Reservation store(Store& s, const std::string& name, std::int64_t version, const Box& b, ClientId who = kWriter) {
  auto r = s.reserve(who, name, version, b, bytesOf(b));
  EXPECT_TRUE(r.has_value());
  s.commit(r->id);
  return *r;
}

TEST(SpacePlacement, OneServerKeepsBlocksWhole) {
  Placement p(Box::whole({1000, 7}), 1);
  auto parts = p.split(Box::of({3, 0}, {997, 7}));
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].first, 0);
  EXPECT_EQ(p.ownedVolume(0), 7000);
}

TEST(SpacePlacement, SlabsStripeOverServersAndCoverTheShapeOnce) {
  for (int servers : {2, 3, 5}) {
    const Box shape = Box::whole({103, 4, 3});
    Placement p(shape, servers);
    std::int64_t total = 0;
    std::vector<int> rowsOf(servers, 0);
    for (int s = 0; s < servers; ++s) total += p.ownedVolume(s);
    EXPECT_EQ(total, volume(shape));
    auto parts = p.split(shape);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      EXPECT_EQ(parts[i].second.lo[0] / p.slabRows(), (parts[i].second.hi[0] - 1) / p.slabRows()) << "one slab per part";
      if (i) {
        EXPECT_EQ(parts[i].second.lo[0], parts[i - 1].second.hi[0]) << "contiguous, in order";
      }
      rowsOf[parts[i].first] += static_cast<int>(parts[i].second.extent(0));
    }
    for (int s = 0; s < servers; ++s) EXPECT_GT(rowsOf[s], 0) << "a block spanning the shape touches every server";
  }
}

TEST(SpaceStore, APieceIsVisibleOnlyOnceCommitted) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {10, 10}));
  const Box b = Box::of({0, 0}, {5, 10});
  auto r = s.reserve(kWriter, "t", 1, b, bytesOf(b));
  ASSERT_TRUE(r);
  EXPECT_EQ(s.lookup("t", 1, {b}).fragments.size(), 0u);
  EXPECT_EQ(s.lookup("t", 1, {b}).missing.size(), 1u);
  s.commit(r->id);
  auto found = s.lookup("t", 1, {Box::of({2, 3}, {4, 5})});
  ASSERT_EQ(found.fragments.size(), 1u);
  EXPECT_TRUE(found.missing.empty());
  // Rows 2..3, columns 3..4 of a 10-wide piece: from element 23 to element 34.
  EXPECT_EQ(found.fragments[0].rangeStart, 23u * 8);
  EXPECT_EQ(found.fragments[0].rangeBytes, (34u - 23u + 1) * 8);
  EXPECT_TRUE(s.completeVersions("t", 0).empty()) << "half the shape is not a complete version";
  store(s, "t", 1, Box::of({5, 0}, {10, 10}));
  EXPECT_EQ(s.completeVersions("t", 0), std::vector<std::int64_t>{1});
}

TEST(SpaceStore, RefusesOverlapsBadBoxesAndWrongSizesBeforeTakingMemory) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {10, 10}));
  store(s, "t", 1, Box::of({0, 0}, {5, 5}));
  auto r = s.reserve(kWriter, "t", 1, Box::of({6, 6}, {8, 8}), bytesOf(Box::of({6, 6}, {8, 8})));  // in flight
  ASSERT_TRUE(r);
  EXPECT_TRUE(contains(errorMessageOf([&] { s.reserve(kOther, "t", 1, Box::of({4, 4}, {6, 6}), 32); },
                                      ErrorCode::InvalidArgument),
                       "overlaps the stored piece [0:5, 0:5)"));
  EXPECT_TRUE(contains(errorMessageOf([&] { s.reserve(kOther, "t", 1, Box::of({7, 7}, {9, 9}), 32); },
                                      ErrorCode::InvalidArgument),
                       "in-flight piece"));
  // The same box in another version is fine.
  EXPECT_TRUE(s.reserve(kOther, "t", 2, Box::of({4, 4}, {6, 6}), 32));
  errorMessageOf([&] { s.reserve(kWriter, "t", 3, Box::of({0, 0}, {11, 1}), 88); }, ErrorCode::InvalidArgument);
  errorMessageOf([&] { s.reserve(kWriter, "t", 3, Box::of({3, 0}, {3, 1}), 0); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(errorMessageOf([&] { s.reserve(kWriter, "t", 3, Box::of({0, 0}, {1, 1}), 7); },
                                      ErrorCode::InvalidArgument),
                       "needs 8"));
  EXPECT_TRUE(contains(errorMessageOf([&] { s.reserve(kWriter, "u", 3, Box::of({0, 0}, {1, 1}), 8); },
                                      ErrorCode::InvalidArgument),
                       "'u' is not defined"));
  errorMessageOf([&] { s.define(var(std::string(300, 'x'), {4})); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(errorMessageOf([&] { s.define(var("t", {10, 11})); }, ErrorCode::InvalidArgument),
                       "already defined differently"));
  errorMessageOf([&] { s.define(var("huge", {1ll << 40, 1ll << 40})); }, ErrorCode::InvalidArgument);
}

TEST(SpaceStore, AnAbortedReservationFreesItsMemoryAndWasNeverSeen) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {100, 100}));
  const Box b = Box::of({0, 0}, {100, 100});
  auto r = s.reserve(kWriter, "t", 1, b, bytesOf(b));
  ASSERT_TRUE(r);
  EXPECT_GE(s.stats().bytesInUse, bytesOf(b));
  s.dropClient(kWriter);  // the writer died before its data came
  EXPECT_EQ(s.stats().bytesInUse, 0u);
  EXPECT_EQ(s.stats().putsAborted, 1u);
  EXPECT_EQ(s.lookup("t", 1, {b}).fragments.size(), 0u);
  store(s, "t", 1, b);  // the box may be written again
}

TEST(SpaceStore, KeepVersionsDropsTheOldestUnlessAReaderHoldsIt) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {4}, 2));
  const Box all = Box::of({0}, {4});
  store(s, "t", 1, all);
  store(s, "t", 2, all);
  const std::uint64_t lease = s.lease(kReader, "t", 1, 32);  // a reader got version 1
  s.endLease(lease);
  store(s, "t", 3, all);  // version 1 is held: kept beyond keep_versions
  EXPECT_EQ(s.lookup("t", 1, {all}).fragments.size(), 1u);
  EXPECT_EQ(s.lookup("t", 2, {all}).fragments.size(), 1u);
  EXPECT_EQ(s.stats().versions, 3u);
  s.release(kReader, "t", 1);  // older than the two newest: it goes now
  EXPECT_TRUE(s.dropped("t", 1));
  EXPECT_EQ(s.stats().versions, 2u);
  EXPECT_TRUE(contains(errorMessageOf([&] { s.lookup("t", 1, {all}); }, ErrorCode::Evicted), "that version was dropped"));
  errorMessageOf([&] { s.reserve(kWriter, "t", 1, all, 32); }, ErrorCode::Evicted);
}

TEST(SpaceStore, ADeadReaderLetsGoOfItsHolds) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {4}, 1));
  const Box all = Box::of({0}, {4});
  store(s, "t", 1, all);
  s.lease(kReader, "t", 1, 32);  // mid-get when it died: the lease was never ended
  store(s, "t", 2, all);
  EXPECT_FALSE(s.dropped("t", 1));
  s.dropClient(kReader);
  EXPECT_TRUE(s.dropped("t", 1));
}

TEST(SpaceStore, RejectFailsBlockWaitsEvictDropsTheOldestUnheld) {
  const Box half = Box::of({0}, {60 * 1024});  // 480 KiB of float64
  for (Policy p : {Policy::Reject, Policy::Block, Policy::Evict}) {
    SCOPED_TRACE(policyName(p));
    Store s(1 << 20, p, 0, 1);  // room for two pieces
    s.define(var("t", {60 * 1024}, 8));
    store(s, "t", 1, half);
    store(s, "t", 2, half);
    auto put3 = [&] { return s.reserve(kWriter, "t", 3, half, bytesOf(half)); };
    switch (p) {
      case Policy::Reject:
        EXPECT_TRUE(contains(errorMessageOf(put3, ErrorCode::SpaceFull), "memory is full"));
        break;
      case Policy::Block: {
        EXPECT_FALSE(put3().has_value());
        s.release(kReader, "t", 1);  // nothing held: no memory freed
        EXPECT_FALSE(put3().has_value());
        break;
      }
      case Policy::Evict: {
        s.lease(kReader, "t", 1, 0);  // version 1 held: version 2 is the one to go
        auto r = put3();
        ASSERT_TRUE(r.has_value());
        EXPECT_FALSE(s.dropped("t", 1));
        EXPECT_TRUE(s.dropped("t", 2));
        EXPECT_EQ(s.stats().versionsEvicted, 1u);
        s.commit(r->id);
        s.lease(kReader, "t", 3, 0);
        // Every version is held now: nothing may go.
        EXPECT_TRUE(contains(errorMessageOf([&] { s.reserve(kWriter, "t", 4, half, bytesOf(half)); }, ErrorCode::SpaceFull),
                             "held by a reader"));
        break;
      }
    }
    // A piece larger than the whole memory never fits, whatever the policy.
    s.define(var("big", {200 * 1024}));
    const Box big = Box::whole({200 * 1024});
    EXPECT_TRUE(contains(errorMessageOf([&] { s.reserve(kWriter, "big", 1, big, bytesOf(big)); }, ErrorCode::SpaceFull),
                         "larger than the server's whole memory"));
  }
}

// Eviction takes the oldest version it may drop, of any variable: never one with data in flight
// or held by a reader, and it finds it without a walk of every version (an index by age).
TEST(SpaceStore, EvictionTakesTheOldestDroppableVersionOfAnyVariable) {
  const Box quarter = Box::of({0}, {30 * 1024});  // 240 KiB of float64: four fit in 1 MiB
  Store s(1 << 20, Policy::Evict, 0, 1);
  s.define(var("a", {30 * 1024}, 100));
  s.define(var("b", {30 * 1024}, 100));
  auto inFlight = s.reserve(kWriter, "a", 1, quarter, bytesOf(quarter));  // oldest: data in flight
  ASSERT_TRUE(inFlight);
  store(s, "b", 1, quarter);
  s.lease(kReader, "b", 1, 0);  // next: held by a reader
  store(s, "a", 2, quarter);    // the oldest droppable one
  store(s, "b", 2, quarter);
  store(s, "a", 3, quarter);  // memory full: one goes
  EXPECT_FALSE(s.dropped("a", 1));
  EXPECT_FALSE(s.dropped("b", 1));
  EXPECT_TRUE(s.dropped("a", 2));
  EXPECT_FALSE(s.dropped("b", 2));
  s.commit(inFlight->id);  // a 1 may go now, and is the oldest
  store(s, "b", 3, quarter);
  EXPECT_TRUE(s.dropped("a", 1));
  EXPECT_FALSE(s.dropped("b", 2));
  // A removed variable's versions leave the index with it: eviction goes on with the others'.
  s.remove("a");
  s.define(var("a", {30 * 1024}, 100));
  store(s, "a", 7, quarter);
  store(s, "a", 8, quarter);
  EXPECT_TRUE(s.dropped("b", 2)) << "b 1 is held; b 2 is the oldest left";
  EXPECT_FALSE(s.dropped("b", 1));
  EXPECT_EQ(s.stats().versionsEvicted, 3u);
}

TEST(SpaceStore, UnderBlockAWriterAheadWaitsForTheOthersVersions) {
  Store s(1 << 20, Policy::Block, 0, 1);
  s.define(var("t", {8}, 1));
  const Box lowHalf = Box::of({0}, {4}), highHalf = Box::of({4}, {8});
  store(s, "t", 0, lowHalf);                                                  // version 0 incomplete
  EXPECT_FALSE(s.reserve(kWriter, "t", 1, lowHalf, bytesOf(lowHalf)).has_value()) << "keep_versions 1 incomplete";
  store(s, "t", 0, highHalf, kOther);                                         // the other writer finishes it
  store(s, "t", 1, lowHalf);
  EXPECT_FALSE(s.dropped("t", 0)) << "version 1 is not complete yet";
  store(s, "t", 1, highHalf, kOther);
  EXPECT_TRUE(s.dropped("t", 0)) << "one newer complete version: past keep_versions 1";
}

TEST(SpaceStore, RandomPutsAndDropsKeepTheAccountsExact) {
  std::mt19937_64 rng(11);
  Store s(4 << 20, Policy::Evict, 0, 1);
  s.define(var("t", {4096}, 3));
  std::uint64_t committed = 0;
  for (int version = 0; version < 200; ++version) {
    std::int64_t at = 0;
    while (at < 4096) {
      const std::int64_t n = std::min<std::int64_t>(4096 - at, 1 + static_cast<std::int64_t>(rng() % 700));
      const Box b = Box::of({at}, {at + n});
      auto r = s.reserve(rng() % 5 == 0 ? kOther : kWriter, "t", version, b, bytesOf(b));
      ASSERT_TRUE(r);
      if (rng() % 17 == 0) {
        s.abort(r->id);
        continue;  // the same box again
      }
      s.commit(r->id);
      ++committed;
      at += n;
    }
    if (rng() % 3 == 0) s.lease(kReader, "t", version, 0);
    if (rng() % 4 == 0) s.dropClient(kReader);
    ASSERT_FALSE(s.completeVersions("t", version).empty());
  }
  s.dropClient(kReader);
  const StoreStats st = s.stats();
  EXPECT_EQ(st.putsCommitted, committed);
  EXPECT_LE(st.highWater, 4u << 20);
  EXPECT_LE(st.versions, 3u) << "unheld versions beyond keep_versions are gone";
}

TEST(SpaceProtocol, BoxesVariablesAndStatsRoundTrip) {
  wire::ByteWriter w = protocol::begin(protocol::Op::Query, 42);
  const Box b = Box::of({-3, 0, 5, 1, 2, 3, 4, 9}, {4, 1, 6, 2, 3, 4, 5, 10});
  protocol::writeBox(w, b);
  Variable v = var("name", {3, 4, 5}, 7);
  protocol::writeVariable(w, v);
  StoreStats st;
  st.highWater = 12345;
  st.putsRejectedFull = 6;
  protocol::writeStats(w, st);
  wire::ByteReader r(w.bytes());
  const protocol::Head h = protocol::readHead(r);
  EXPECT_EQ(h.op, protocol::Op::Query);
  EXPECT_EQ(h.id, 42u);
  EXPECT_EQ(protocol::readBox(r), b);
  const Variable back = protocol::readVariable(r);
  EXPECT_EQ(back.name, "name");
  EXPECT_EQ(back.shape, v.shape);
  EXPECT_EQ(back.keepVersions, 7);
  const StoreStats s2 = protocol::readStats(r);
  EXPECT_EQ(s2.highWater, 12345u);
  EXPECT_EQ(s2.putsRejectedFull, 6u);
  // A truncated message, another protocol version, a 9-D box: refused, never read past the end.
  const std::string cut = w.bytes().substr(0, 20);
  wire::ByteReader rc(cut);
  protocol::readHead(rc);
  EXPECT_THROW(protocol::readBox(rc), wire::Malformed);
  wire::ByteWriter other;
  other.u32(protocol::kMagic).u16(protocol::kVersion + 1).u16(1).u64(1);
  wire::ByteReader ro(other.bytes());
  EXPECT_THROW(protocol::readHead(ro), wire::Malformed);
  wire::ByteWriter nine;
  nine.u8(9);
  wire::ByteReader rn(nine.bytes());
  EXPECT_THROW(protocol::readBox(rn), wire::Malformed);
}

}  // namespace
}  // namespace axon::space

namespace axon::space {
namespace {

// The records count in --mem: a server of 1 MiB (+ 1 MiB for records) takes about two thousand
// variables, not 20,000, and refuses the rest with SpaceFull; data and records together never
// pass the capacity and the allowance.
TEST(SpaceStoreMetadata, DefinesPastTheBudgetAreRefusedAsFull) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  int defined = 0;
  std::string message;
  for (int i = 0; i < 20000; ++i) {
    try {
      s.define(var("variable-" + std::to_string(i), {8}));
      ++defined;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::SpaceFull);
      message = e.what();
      break;
    }
  }
  EXPECT_GT(defined, 1500);
  EXPECT_LT(defined, 2100);
  EXPECT_TRUE(contains(message, "memory is full")) << message;
  EXPECT_TRUE(contains(message, "define of 'variable-")) << message;
  EXPECT_LE(s.metadataBytes(), s.capacity() + kMetadataAllowance);
  EXPECT_EQ(s.stats().variables, static_cast<std::uint64_t>(defined));
  // A repeat definition costs nothing and is still answered.
  s.define(var("variable-0", {8}));
}

TEST(SpaceStoreMetadata, VersionsPastTheBudgetAreRefusedOrWaitAndFreeTheirRecordsWhenDropped) {
  for (Policy p : {Policy::Reject, Policy::Block, Policy::Evict}) {
    SCOPED_TRACE(policyName(p));
    Store s(1 << 20, p, 0, 1);
    s.define(var("t", {1}, 1 << 20));  // every version kept: only memory bounds them
    const Box one = Box::of({0}, {1});
    int stored = 0;
    for (int version = 0; version < 32000; ++version) {
      std::optional<Store::Reservation> r;
      try {
        r = s.reserve(kWriter, "t", version, one, 8);
      } catch (const Error& e) {
        EXPECT_EQ(p, Policy::Reject);
        EXPECT_EQ(e.code(), ErrorCode::SpaceFull);
        break;
      }
      if (!r) {
        EXPECT_EQ(p, Policy::Block);
        break;
      }
      s.commit(r->id);
      ++stored;
      ASSERT_LE(s.stats().bytesInUse + s.metadataBytes(), s.capacity() + kMetadataAllowance);
    }
    if (p == Policy::Evict) {
      EXPECT_EQ(stored, 32000) << "old versions evicted for the new ones";
      EXPECT_GT(s.stats().versionsEvicted, 30000u);
      EXPECT_LT(s.stats().versions, 1600u);
    } else {
      EXPECT_GT(stored, 1000);
      EXPECT_LT(stored, 1600);
    }
    EXPECT_LE(s.stats().bytesInUse + s.metadataBytes(), s.capacity() + kMetadataAllowance);
  }
  // Records are given back: a version dropped frees its record (a remembered drop costs less).
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {4}, 1));
  const std::uint64_t base = s.metadataBytes();
  store(s, "t", 1, Box::of({0}, {4}));
  const std::uint64_t one = s.metadataBytes() - base;
  EXPECT_EQ(one, kVersionRecordBytes + kPieceRecordBytes + kPieceDimensionBytes);
  store(s, "t", 2, Box::of({0}, {4}));  // version 1 goes (keep_versions 1)
  EXPECT_TRUE(s.dropped("t", 1));
  EXPECT_EQ(s.metadataBytes(), base + one + kDroppedRecordBytes);
  auto r = s.reserve(kWriter, "t", 3, Box::of({0}, {2}), 16);
  ASSERT_TRUE(r);
  s.abort(r->id);
  EXPECT_EQ(s.metadataBytes(), base + one + kDroppedRecordBytes) << "an aborted version leaves no record";
}

TEST(SpaceStore, NegativeVersionsAreRefusedByPutsAndGets) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {4}));
  const std::string put = errorMessageOf([&] { s.reserve(kWriter, "t", -1, Box::of({0}, {4}), 32); },
                                         ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(put, "version -1 is negative"));
  EXPECT_TRUE(contains(put, "'t'"));
  EXPECT_EQ(s.stats().versions, 0u) << "nothing was reserved";
  const std::string get = errorMessageOf([&] { s.lookup("t", -5, {Box::of({0}, {4})}); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(get, "version -5 is negative"));
  // wait_version's bound is not a version: below 0 it means any version.
  store(s, "t", 0, Box::of({0}, {4}));
  EXPECT_EQ(s.completeVersions("t", -1), std::vector<std::int64_t>{0});
}

TEST(SpaceStore, RemoveFreesEveryVersionHeldOrNotAndTheNameCanBeDefinedAgain) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {4}, 3));
  s.define(var("other", {4}));
  const std::uint64_t base = s.metadataBytes();
  store(s, "t", 0, Box::of({0}, {4}));
  store(s, "t", 1, Box::of({0}, {4}));
  store(s, "other", 0, Box::of({0}, {4}));
  s.endLease(s.lease(kReader, "t", 0, 32));  // version 0 stays held by the reader
  const std::uint64_t otherBytes = 256;     // one aligned piece
  EXPECT_TRUE(s.remove("t")) << "no data in flight: gone at once";
  EXPECT_TRUE(s.removed("t"));
  EXPECT_EQ(s.stats().bytesInUse, otherBytes) << "the held version went too";
  EXPECT_EQ(s.stats().variables, 1u);
  const std::string get = errorMessageOf([&] { s.lookup("t", 1, {Box::of({0}, {4})}); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(contains(get, "'t' is not defined"));
  EXPECT_TRUE(contains(errorMessageOf([&] { s.remove("t"); }, ErrorCode::InvalidArgument), "not defined"));
  s.release(kReader, "other", 0);
  // Defined again, another shape: nothing of the old one is seen.
  s.define(var("t", {2, 3}, 1));
  EXPECT_TRUE(s.lookup("t", 1, {Box::of({0, 0}, {2, 3})}).fragments.empty());
  EXPECT_EQ(s.metadataBytes() - base, kVersionRecordBytes + kPieceRecordBytes + kPieceDimensionBytes)
      << "the removed variable's records went; 'other' version 0 is left";
}

TEST(SpaceStore, RemoveWaitsForDataInFlightAndRefusesNewWorkMeanwhile) {
  Store s(1 << 20, Policy::Block, 0, 1);
  s.define(var("t", {8}, 2));
  store(s, "t", 0, Box::of({0}, {8}));
  const std::uint64_t lease = s.lease(kReader, "t", 0, 64);    // a get copying version 0
  auto landing = s.reserve(kWriter, "t", 1, Box::of({0}, {4}), 32);  // a put landing in version 1
  ASSERT_TRUE(landing);
  EXPECT_FALSE(s.remove("t")) << "data in flight";
  EXPECT_FALSE(s.removed("t"));
  EXPECT_TRUE(contains(errorMessageOf([&] { s.reserve(kWriter, "t", 1, Box::of({4}, {8}), 32); },
                                      ErrorCode::InvalidArgument),
                       "'t' is being removed"));
  EXPECT_TRUE(contains(errorMessageOf([&] { s.lookup("t", 0, {Box::of({0}, {8})}); }, ErrorCode::InvalidArgument),
                       "being removed"));
  EXPECT_TRUE(contains(errorMessageOf([&] { s.completeVersions("t", 0); }, ErrorCode::InvalidArgument),
                       "being removed"));
  EXPECT_TRUE(contains(errorMessageOf([&] { s.define(var("t", {8}, 2)); }, ErrorCode::InvalidArgument),
                       "still being removed"));
  EXPECT_FALSE(s.remove("t")) << "a second remove is no error";
  s.endLease(lease);
  EXPECT_FALSE(s.removed("t")) << "the put still lands";
  EXPECT_EQ(s.stats().bytesInUse, 256u) << "version 0 went once its reader finished";
  s.commit(landing->id);  // admitted before the remove: it completes, and its data goes at once
  EXPECT_TRUE(s.removed("t"));
  EXPECT_EQ(s.stats().bytesInUse, 0u);
  EXPECT_EQ(s.stats().pieces, 0u);
  s.define(var("t", {8}, 2));
  store(s, "t", 0, Box::of({0}, {8}));
  EXPECT_EQ(s.completeVersions("t", 0), std::vector<std::int64_t>{0});
}

TEST(SpaceStore, AnAbortedPutEndsARemovalToo) {
  Store s(1 << 20, Policy::Reject, 0, 1);
  s.define(var("t", {8}));
  auto landing = s.reserve(kWriter, "t", 0, Box::of({0}, {8}), 64);
  ASSERT_TRUE(landing);
  EXPECT_FALSE(s.remove("t"));
  s.dropClient(kWriter);  // the writer died: its reservation is aborted
  EXPECT_TRUE(s.removed("t"));
  EXPECT_EQ(s.stats().bytesInUse, 0u);
  EXPECT_EQ(s.metadataBytes(), 0u);
}

}  // namespace
}  // namespace axon::space
