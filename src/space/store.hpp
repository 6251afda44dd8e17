// What one staging server holds: variables, their versions, the pieces of each version (boxes at
// offsets of the server's arena), readers' holds and the memory bound with its policy. Offsets
// only, no memory and no network, so that every rule is tested on the host
// (tests/unit/space_store_test.cpp); the server moves the bytes (space/server_puts.cpp and
// space/server_gets.cpp).
//
// Rules:
// - A piece becomes visible when committed; a reservation that is aborted (its writer died, its
//   data never came) frees its memory and was never seen.
// - Pieces of one version never overlap (reserved ones included): an overlapping put is refused.
// - A reader's get holds its version until release() or the reader's end; held versions and
//   versions with data in flight (leases) are never dropped.
// - A version goes once keep_versions newer versions are complete here, unless a reader holds it
//   or data for it is in flight; versions still being written do not count.
// - Policy block also holds back a writer ahead of the others: at most keep_versions versions may
//   be incomplete at once (so --mem should hold 2 x keep_versions versions). When memory is short:
//   reject refuses, block makes the caller wait (reserve() gives nullopt), evict drops the oldest
//   unheld versions of any variable first. A version dropped is remembered, so that a get of it
//   says Evicted rather than waiting for data that will never come.
// - remove() takes a variable away with every version, held ones included; versions with data in
//   flight (a lease being read, a reservation being written) go when that ends, and until then the
//   variable is "being removed": puts, gets and defines of its name are refused. Once nothing is
//   left the name is free again.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "axon/collectives.hpp"
#include "axon/space_server.hpp"
#include "memory/symmetric_allocator.hpp"
#include "space/box.hpp"
#include "space/piece_index.hpp"

namespace axon::space {

// Policy (what a full server does), policyName and parsePolicy: axon/space_server.hpp.

constexpr std::size_t kMaxNameBytes = 255;
constexpr std::size_t kPieceAlignment = 256;  // arena offsets: aligned for wide GPU loads

using ClientId = std::uint64_t;

// What the server's records cost, counted against --mem beside the data (Store::metadataBytes):
// fixed estimates a little above what the records take in this build (names, maps, the piece
// index), so that 20,000 defines or 30,000 versions cannot grow a server past --mem. The first
// kMetadataAllowance bytes of records are free, so that --mem sized for N versions of data still
// holds N; beyond it records take the data's room. Data and records together stay within --mem +
// kMetadataAllowance (plus the fixed cost of the process: its code, UCX's buffers).
constexpr std::uint64_t kMetadataAllowance = 1 << 20;
constexpr std::uint64_t kVariableRecordBytes = 1024;  // plus the name's bytes
constexpr std::uint64_t kVersionRecordBytes = 512;
constexpr std::uint64_t kPieceRecordBytes = 512;      // plus kPieceDimensionBytes per dimension
constexpr std::uint64_t kPieceDimensionBytes = 128;
constexpr std::uint64_t kDroppedRecordBytes = 64;     // a dropped version remembered

struct Variable {
  std::string name;
  Box shape;  // [0, shape)
  DataType dtype = DataType::Float64;
  int keepVersions = 2;
};

// Checks a name (non-empty, at most kMaxNameBytes) and a definition; throws InvalidArgument.
void checkName(const std::string& name);
void checkDefinition(const Variable& v);
// Versions are numbers >= 0 (a step counter); a negative one is refused by every write and read
// of a version (InvalidArgument naming `what` and the version). wait_version's at_least is a
// bound, not a version: any value is allowed there (below 0: any version).
void checkVersion(std::int64_t version, const std::string& what);

struct Fragment {
  Box piece;                  // the stored piece's box
  std::uint64_t offset = 0;   // where the piece starts in the arena
  std::uint64_t rangeStart = 0;  // the bytes of the piece the asked box needs: [start, start + bytes)
  std::uint64_t rangeBytes = 0;
};

struct StoreStats {
  std::uint64_t capacity = 0, bytesInUse = 0, highWater = 0;
  std::uint64_t pieces = 0, versions = 0, variables = 0;
  std::uint64_t putsCommitted = 0, putsAborted = 0, bytesPut = 0;
  std::uint64_t lookups = 0, bytesServed = 0;
  std::uint64_t versionsDropped = 0, versionsEvicted = 0, putsRejectedFull = 0;
  std::uint64_t metadataBytes = 0;  // the records' estimated cost (counted in --mem, not in bytesInUse)
};

// The public report of a server (axon/space.hpp) from its store's numbers.
ServerStats serverStatsOf(const StoreStats& st, std::string address, std::string policy, bool pinned);

class Store {
 public:
  Store(std::uint64_t capacity, Policy policy, int serverIndex, int servers);

  Policy policy() const { return policy_; }
  // Adds a variable, or checks that a repeat definition is the same; throws InvalidArgument, or
  // SpaceFull when its record does not fit in --mem (policy evict: after dropping old versions).
  void define(const Variable& v);
  const Variable& variable(const std::string& name) const;  // throws InvalidArgument when unknown
  // Removes the variable and frees its memory (see the rules above). true: gone now, the name may
  // be defined again; false: data is still in flight, and it goes when that ends (removed() says
  // when). Throws InvalidArgument when the name is not defined (nor being removed).
  bool remove(const std::string& name);
  // No variable of that name left: never defined, or removed in full.
  bool removed(const std::string& name) const { return vars_.find(name) == vars_.end(); }
  // A remove of it waits for data in flight.
  bool removing(const std::string& name) const {
    auto it = vars_.find(name);
    return it != vars_.end() && it->second.removing;
  }

  struct Reservation {
    std::uint64_t id = 0;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
  };
  // Admits a piece of `bytes` for (name, version, box): checks the box (inside the shape, owned
  // here, no overlap in the version), then finds memory. nullopt: policy block and no memory now
  // (call again when memory is freed). Throws InvalidArgument, SpaceFull (reject, evict with
  // nothing left to drop, or a piece larger than the whole arena) or Evicted (a version already
  // dropped).
  std::optional<Reservation> reserve(ClientId writer, const std::string& name, std::int64_t version, const Box& box,
                                     std::uint64_t bytes);
  void commit(std::uint64_t reservation);
  void abort(std::uint64_t reservation);
  // Takes a reservation back that was never used (a put batch that must wait after all): no
  // abort counted, and no change that would wake waiting puts.
  void unreserve(std::uint64_t reservation);
  // The reservation's client, or 0 when there is no such reservation.
  ClientId reservationOwner(std::uint64_t reservation) const;
  // Where a reservation of `writer` lies in the arena; nullopt when `writer` holds no such
  // reservation (the data of a Write lands only inside its own writer's reservation).
  std::optional<Reservation> reservationOf(ClientId writer, std::uint64_t reservation) const;

  struct Lookup {
    std::vector<Fragment> fragments;
    std::vector<Box> missing;  // parts of the boxes no committed piece covers yet
  };
  // The committed pieces of (name, version) that intersect `boxes`, and what is missing. Throws
  // InvalidArgument, or Evicted when the version was dropped. listMissing false: a box not fully
  // covered is put in `missing` whole (enough to know that something is; costs no subtraction).
  Lookup lookup(const std::string& name, std::int64_t version, const std::vector<Box>& boxes,
                bool listMissing = true) const;
  // Pins the version for `reader`'s transfer; ended by endLease. Also takes the reader's hold.
  std::uint64_t lease(ClientId reader, const std::string& name, std::int64_t version, std::uint64_t bytes);
  void endLease(std::uint64_t lease);
  // The reader lets go of the version (no-op when it holds nothing).
  void release(ClientId reader, const std::string& name, std::int64_t version);
  // The client is gone: its reservations are aborted, its holds and leases dropped.
  void dropClient(ClientId client);

  // Versions of `name` at or above `atLeast` whose part on this server is complete, ascending.
  std::vector<std::int64_t> completeVersions(const std::string& name, std::int64_t atLeast) const;
  bool dropped(const std::string& name, std::int64_t version) const;
  // Bumped by every commit, drop, release and lease end: waiting puts and gets re-check then.
  std::uint64_t generation() const { return generation_; }

  StoreStats stats() const;
  std::uint64_t capacity() const { return alloc_.capacity(); }
  // The estimated bytes of the records (variables, versions, pieces, dropped versions), counted
  // with the data against capacity(): data + metadata never exceeds capacity() +
  // kMetadataAllowance.
  std::uint64_t metadataBytes() const { return metaBytes_; }

 private:
  struct Piece {
    Box box;
    std::uint64_t offset = 0, bytes = 0;
    bool committed = false;
    std::uint64_t reservation = 0;
  };
  struct Version {
    std::int64_t number = 0;
    std::map<std::uint64_t, Piece> pieces;  // by arena offset
    // The pieces' boxes, keyed by arena offset: overlap checks and lookups visit only the
    // pieces a box meets, never every piece of the version (space/piece_index.hpp).
    PieceIndex index;
    std::int64_t committedVolume = 0;
    std::uint64_t bytes = 0;
    std::set<ClientId> holders;
    int leases = 0;
    int reserved = 0;         // pieces reserved and not committed yet (data in flight)
    std::uint64_t order = 0;  // when it was created, for "oldest first"
    bool pinned() const { return !holders.empty() || leases > 0; }
  };
  struct VarState {
    Variable def;
    std::int64_t ownedVolume = 0;
    std::map<std::int64_t, Version> versions;
    std::set<std::int64_t> dropped;  // the most recent kRememberDropped dropped versions
    std::int64_t droppedBelow = INT64_MIN;  // every version below this one was dropped (or never existed)
    std::size_t complete = 0;  // versions complete here: trim and flow control need no walk to know
    bool removing = false;     // remove() waits for data in flight; nothing new is taken meanwhile
  };
  struct ReservationRef {
    std::string name;
    std::int64_t version;
    std::uint64_t offset;
    ClientId writer;
    std::uint64_t bytes;
  };
  struct LeaseRef {
    std::string name;
    std::int64_t version;
    ClientId reader;
  };
  static constexpr std::size_t kRememberDropped = 4096;
  void freeReservation(const ReservationRef& r, bool counted);

  VarState& state(const std::string& name, const char* what);
  const VarState& state(const std::string& name, const char* what) const;
  void dropVersion(VarState& v, std::int64_t number, bool evicted);
  static bool hasReservations(const Version& ver);
  // Drops the versions older than the keepVersions newest complete ones that nobody pins.
  void trim(VarState& v);
  // Evicts the oldest unpinned version of any variable (not `keep` of `keepName`); false when none.
  bool evictOldest(const std::string& keepName, std::int64_t keep);
  // Arena bytes for a piece whose records add `meta` bytes; nullopt when data and records would
  // pass capacity().
  std::optional<std::uint64_t> allocate(std::uint64_t bytes, std::uint64_t meta);
  static std::uint64_t pieceRecordBytes(const Box& b) { return kPieceRecordBytes + kPieceDimensionBytes * b.ndim; }
  bool metadataFits(std::uint64_t more) const {
    const std::uint64_t records = metaBytes_ + more;
    return alloc_.bytesInUse() + (records > kMetadataAllowance ? records - kMetadataAllowance : 0) <= alloc_.capacity();
  }
  void rememberDropped(VarState& v, std::int64_t number);
  // A variable being removed: drops the versions with no data in flight, and the variable once
  // none is left. Returns true when it is gone (then `v` no longer exists).
  bool finishRemoval(VarState& v);
  void freeVersion(VarState& v, std::map<std::int64_t, Version>::iterator it);

  Policy policy_;
  int serverIndex_, servers_;
  SymmetricAllocator alloc_;
  std::map<std::string, VarState> vars_;
  std::map<std::uint64_t, ReservationRef> reservations_;
  std::map<std::uint64_t, LeaseRef> leases_;
  std::uint64_t lastId_ = 0, order_ = 0, generation_ = 0;
  // Every version by its order: eviction takes the oldest it may drop without a walk of every
  // version of every variable (which made each eviction cost all that the server holds).
  std::map<std::uint64_t, std::pair<VarState*, std::int64_t>> byOrder_;
  std::uint64_t highWater_ = 0;
  std::uint64_t metaBytes_ = 0;
  mutable StoreStats counters_;
};

}  // namespace axon::space
