#include "space/store.hpp"

#include <algorithm>
#include <climits>

#include "axon/error.hpp"
#include "space/placement.hpp"

namespace axon::space {
namespace {

std::string quoted(const std::string& name) { return "'" + name + "'"; }

std::string versionText(const std::string& name, std::int64_t version) {
  return quoted(name) + " version " + std::to_string(version);
}

}  // namespace

const char* policyName(Policy p) {
  switch (p) {
    case Policy::Block: return "block";
    case Policy::Reject: return "reject";
    case Policy::Evict: return "evict";
  }
  return "?";
}

Policy parsePolicy(const std::string& text) {
  if (text == "block") return Policy::Block;
  if (text == "reject") return Policy::Reject;
  if (text == "evict") return Policy::Evict;
  throw Error(ErrorCode::InvalidArgument, "policy '" + text + "' is not one of block, reject, evict");
}

ServerStats serverStatsOf(const StoreStats& st, std::string address, std::string policy, bool pinned) {
  ServerStats ss;
  ss.address = std::move(address);
  ss.policy = std::move(policy);
  ss.pinned = pinned;
  ss.capacity = st.capacity;
  ss.bytesInUse = st.bytesInUse;
  ss.highWater = st.highWater;
  ss.pieces = st.pieces;
  ss.versions = st.versions;
  ss.variables = st.variables;
  ss.putsCommitted = st.putsCommitted;
  ss.putsAborted = st.putsAborted;
  ss.bytesPut = st.bytesPut;
  ss.lookups = st.lookups;
  ss.bytesServed = st.bytesServed;
  ss.versionsDropped = st.versionsDropped;
  ss.versionsEvicted = st.versionsEvicted;
  ss.putsRejectedFull = st.putsRejectedFull;
  return ss;
}

void checkName(const std::string& name) {
  if (name.empty()) throw Error(ErrorCode::InvalidArgument, "a variable name must not be empty");
  if (name.size() > kMaxNameBytes) {
    throw Error(ErrorCode::InvalidArgument, "variable name '" + name.substr(0, 32) + "...' is " +
                                                std::to_string(name.size()) + " bytes long; at most " +
                                                std::to_string(kMaxNameBytes) + " are allowed");
  }
}

void checkVersion(std::int64_t version, const std::string& what) {
  if (version < 0) {
    throw Error(ErrorCode::InvalidArgument, what + ": version " + std::to_string(version) +
                                                " is negative; versions are numbers >= 0 (e.g. the step)");
  }
}

void checkDefinition(const Variable& v) {
  checkName(v.name);
  if (v.shape.ndim < 1 || v.shape.ndim > kMaxDims) {
    throw Error(ErrorCode::InvalidArgument, "variable " + quoted(v.name) + ": " + std::to_string(v.shape.ndim) +
                                                " dimensions; 1 to " + std::to_string(kMaxDims) + " are allowed");
  }
  for (int d = 0; d < v.shape.ndim; ++d) {
    if (v.shape.lo[d] != 0 || v.shape.hi[d] <= 0) {
      throw Error(ErrorCode::InvalidArgument, "variable " + quoted(v.name) + ": dimension " + std::to_string(d) +
                                                  " has extent " + std::to_string(v.shape.hi[d]) + "; it must be positive");
    }
  }
  byteSize(v.shape, dataTypeSize(v.dtype));  // throws on overflow
  if (v.keepVersions < 1) {
    throw Error(ErrorCode::InvalidArgument, "variable " + quoted(v.name) + ": keep_versions is " +
                                                std::to_string(v.keepVersions) + "; at least 1 is needed");
  }
}

Store::Store(std::uint64_t capacity, Policy policy, int serverIndex, int servers)
    : policy_(policy), serverIndex_(serverIndex), servers_(servers), alloc_(capacity) {}

void Store::define(const Variable& v) {
  checkDefinition(v);
  auto it = vars_.find(v.name);
  if (it != vars_.end() && it->second.removing) {
    throw Error(ErrorCode::InvalidArgument, "define of " + quoted(v.name) + ": the variable of that name is still "
                                            "being removed (transfers under way on it); define it again once its "
                                            "remove has returned");
  }
  if (it != vars_.end()) {
    const Variable& old = it->second.def;
    if (old.shape != v.shape || old.dtype != v.dtype || old.keepVersions != v.keepVersions) {
      throw Error(ErrorCode::InvalidArgument,
                  "variable " + quoted(v.name) + " is already defined differently: shape " + describe(old.shape) +
                      ", " + dataTypeName(old.dtype) + ", keep_versions " + std::to_string(old.keepVersions) +
                      " (now asked: shape " + describe(v.shape) + ", " + dataTypeName(v.dtype) + ", keep_versions " +
                      std::to_string(v.keepVersions) + ")");
    }
    return;
  }
  const std::uint64_t record = kVariableRecordBytes + v.name.size();
  while (!metadataFits(record) && policy_ == Policy::Evict && evictOldest("", INT64_MIN)) {
  }
  if (!metadataFits(record)) {
    throw Error(ErrorCode::SpaceFull,
                "define of " + quoted(v.name) + ": the server's memory is full (" +
                    std::to_string(alloc_.bytesInUse()) + " bytes of data and " + std::to_string(metaBytes_) +
                    " bytes of records of " + std::to_string(alloc_.capacity()) + " (--mem) + " +
                    std::to_string(kMetadataAllowance) + " for records; a variable's record counts " +
                    std::to_string(record) + " bytes)");
  }
  metaBytes_ += record;
  VarState s;
  s.def = v;
  s.ownedVolume = Placement(v.shape, servers_).ownedVolume(serverIndex_);
  vars_.emplace(v.name, std::move(s));
}

Store::VarState& Store::state(const std::string& name, const char* what) {
  return const_cast<VarState&>(static_cast<const Store*>(this)->state(name, what));
}

const Store::VarState& Store::state(const std::string& name, const char* what) const {
  checkName(name);
  auto it = vars_.find(name);
  if (it == vars_.end()) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(what) + ": variable " + quoted(name) + " is not defined (call define first)");
  }
  if (it->second.removing) {
    throw Error(ErrorCode::InvalidArgument, std::string(what) + ": variable " + quoted(name) +
                                                " is being removed (it goes once the transfers under way on it end)");
  }
  return it->second;
}

const Variable& Store::variable(const std::string& name) const { return state(name, "lookup").def; }

bool Store::dropped(const std::string& name, std::int64_t version) const {
  auto it = vars_.find(name);
  if (it == vars_.end() || it->second.versions.count(version)) return false;
  return version < it->second.droppedBelow || it->second.dropped.count(version) > 0;
}

std::optional<std::uint64_t> Store::allocate(std::uint64_t bytes, std::uint64_t meta) {
  // Whole alignment units: a piece smaller than one would leave a gap after it that no later
  // piece fits, and first fit would walk past every such gap (24,000 small pieces: 3 s).
  const std::uint64_t rounded = (bytes + kPieceAlignment - 1) / kPieceAlignment * kPieceAlignment;
  auto at = alloc_.allocate(rounded, kPieceAlignment);
  if (at && !metadataFits(meta)) {
    alloc_.release(*at);
    return std::nullopt;
  }
  if (at) highWater_ = std::max<std::uint64_t>(highWater_, alloc_.bytesInUse());
  return at;
}

std::optional<Store::Reservation> Store::reserve(ClientId writer, const std::string& name, std::int64_t version,
                                                 const Box& box, std::uint64_t bytes) {
  VarState& v = state(name, "put");
  const std::string what = "put of " + versionText(name, version) + " box " + describe(box);
  checkVersion(version, what);
  checkBoxInShape(box, v.def.shape, what);
  const std::uint64_t need = static_cast<std::uint64_t>(byteSize(box, dataTypeSize(v.def.dtype)));
  if (need != bytes) {
    throw Error(ErrorCode::InvalidArgument, what + ": " + std::to_string(bytes) + " bytes were sent; the box of " +
                                                dataTypeName(v.def.dtype) + " needs " + std::to_string(need));
  }
  const Placement placement(v.def.shape, servers_);
  for (const auto& [server, part] : placement.split(box)) {
    if (server != serverIndex_) {
      throw Error(ErrorCode::InvalidArgument, what + ": rows " + std::to_string(part.lo[0]) + ".." +
                                                  std::to_string(part.hi[0]) + " belong to server " +
                                                  std::to_string(server) + ", not this one (" +
                                                  std::to_string(serverIndex_) + ")");
    }
  }
  if (dropped(name, version)) {
    throw Error(ErrorCode::Evicted, what + ": that version was already dropped on this server (keep_versions " +
                                        std::to_string(v.def.keepVersions) + ", or evicted for memory)");
  }
  auto vit = v.versions.find(version);
  if (vit != v.versions.end()) {
    if (auto other = vit->second.index.anyOverlapping(box)) {
      const Piece& p = vit->second.pieces.at(*other);
      throw Error(ErrorCode::InvalidArgument, what + " overlaps the " +
                                                  std::string(p.committed ? "stored" : "in-flight") + " piece " +
                                                  describe(p.box) + " of the same version");
    }
  }
  if (bytes > alloc_.capacity()) {
    ++counters_.putsRejectedFull;
    throw Error(ErrorCode::SpaceFull, what + ": the piece of " + std::to_string(bytes) +
                                          " bytes is larger than the server's whole memory (" +
                                          std::to_string(alloc_.capacity()) + " bytes, --mem)");
  }
  if (policy_ == Policy::Block && vit == v.versions.end()) {
    // Flow control: a writer ahead of the others may open at most keep_versions versions that are
    // not complete yet; the next waits. Else it could fill the memory with versions nobody can
    // finish, and every writer would wait for good.
    const std::size_t incomplete = v.versions.size() - v.complete;
    if (incomplete >= static_cast<std::size_t>(v.def.keepVersions)) return std::nullopt;
  }
  const std::uint64_t meta = pieceRecordBytes(box) + (vit == v.versions.end() ? kVersionRecordBytes : 0);
  auto at = allocate(bytes, meta);
  while (!at && policy_ == Policy::Evict && evictOldest(name, version)) at = allocate(bytes, meta);
  if (!at) {
    if (policy_ == Policy::Block) return std::nullopt;
    ++counters_.putsRejectedFull;
    throw Error(ErrorCode::SpaceFull,
                what + ": the server's memory is full (" + std::to_string(alloc_.bytesInUse()) + " bytes of data and " +
                    std::to_string(metaBytes_) + " of records of " + std::to_string(alloc_.capacity()) +
                    " in use, policy " + policyName(policy_) +
                    (policy_ == Policy::Evict ? ", and every older version is held by a reader" : "") + ")");
  }
  metaBytes_ += meta;
  Version& ver = v.versions[version];
  if (ver.order == 0) {
    ver.number = version;
    ver.order = ++order_;
    byOrder_.emplace(ver.order, std::make_pair(&v, version));
  }
  Piece p;
  p.box = box;
  p.offset = *at;
  p.bytes = bytes;
  p.reservation = ++lastId_;
  ver.pieces[*at] = p;
  ++ver.reserved;
  ver.index.insert(box, *at);
  ver.bytes += bytes;
  reservations_[p.reservation] = ReservationRef{name, version, *at, writer, bytes};
  return Reservation{p.reservation, *at, bytes};
}

void Store::commit(std::uint64_t reservation) {
  auto it = reservations_.find(reservation);
  if (it == reservations_.end()) {
    throw Error(ErrorCode::InvalidArgument, "commit of reservation " + std::to_string(reservation) +
                                                ", which does not exist (aborted, or committed already)");
  }
  const ReservationRef r = it->second;
  reservations_.erase(it);
  VarState& v = vars_.at(r.name);
  Version& ver = v.versions.at(r.version);
  Piece& p = ver.pieces.at(r.offset);
  p.committed = true;
  --ver.reserved;
  ver.committedVolume += volume(p.box);
  ++counters_.putsCommitted;
  counters_.bytesPut += p.bytes;
  if (ver.committedVolume == v.ownedVolume) {
    ++v.complete;
    if (!v.removing) trim(v);  // a version completed: older ones may go
  }
  ++generation_;
  if (v.removing) finishRemoval(v);  // the put was admitted before the remove; its data goes with it
}

void Store::abort(std::uint64_t reservation) {
  auto it = reservations_.find(reservation);
  if (it == reservations_.end()) return;
  const ReservationRef r = it->second;
  reservations_.erase(it);
  freeReservation(r, true);
}

void Store::unreserve(std::uint64_t reservation) {
  auto it = reservations_.find(reservation);
  if (it == reservations_.end()) return;
  const ReservationRef r = it->second;
  reservations_.erase(it);
  freeReservation(r, false);
}

void Store::freeReservation(const ReservationRef& r, bool counted) {
  VarState& v = vars_.at(r.name);
  auto vit = v.versions.find(r.version);
  if (vit == v.versions.end()) return;
  Version& ver = vit->second;
  auto pit = ver.pieces.find(r.offset);
  if (pit == ver.pieces.end()) return;
  ver.bytes -= pit->second.bytes;
  metaBytes_ -= pieceRecordBytes(pit->second.box);
  alloc_.release(pit->first);
  ver.index.erase(pit->second.box, pit->first);
  if (!pit->second.committed) --ver.reserved;
  ver.pieces.erase(pit);
  if (ver.pieces.empty() && !ver.pinned()) {
    if (ver.committedVolume == v.ownedVolume) --v.complete;
    byOrder_.erase(ver.order);
    v.versions.erase(vit);
    metaBytes_ -= kVersionRecordBytes;
  }
  if (counted) ++counters_.putsAborted;
  if (v.removing) {
    ++generation_;
    finishRemoval(v);
    return;
  }
  if (!counted) return;
  trim(v);  // a version kept only for the reservation may go now
  ++generation_;
}

ClientId Store::reservationOwner(std::uint64_t reservation) const {
  auto it = reservations_.find(reservation);
  return it == reservations_.end() ? 0 : it->second.writer;
}

std::optional<Store::Reservation> Store::reservationOf(ClientId writer, std::uint64_t reservation) const {
  auto it = reservations_.find(reservation);
  if (it == reservations_.end() || it->second.writer != writer) return std::nullopt;
  return Reservation{reservation, it->second.offset, it->second.bytes};
}

Store::Lookup Store::lookup(const std::string& name, std::int64_t version, const std::vector<Box>& boxes,
                            bool listMissing) const {
  const VarState& v = state(name, "get");
  checkVersion(version, "get of " + quoted(name));
  for (const Box& b : boxes) checkBoxInShape(b, v.def.shape, "get of " + versionText(name, version));
  if (dropped(name, version)) {
    throw Error(ErrorCode::Evicted,
                "get of " + versionText(name, version) + ": that version was dropped (keep_versions " +
                    std::to_string(v.def.keepVersions) + ", or evicted for memory); the newest kept is " +
                    (v.versions.empty() ? std::string("none") : std::to_string(v.versions.rbegin()->first)));
  }
  ++counters_.lookups;
  Lookup out;
  auto vit = v.versions.find(version);
  const std::size_t elem = dataTypeSize(v.def.dtype);
  for (const Box& b : boxes) {
    std::vector<Box> covered;
    std::int64_t coveredVolume = 0;
    if (vit != v.versions.end()) {
      const std::vector<std::uint64_t> near = vit->second.index.overlapping(b);
      covered.reserve(near.size());
      out.fragments.reserve(out.fragments.size() + near.size());
      for (std::uint64_t at : near) {
        const Piece& p = vit->second.pieces.at(at);
        if (!p.committed) continue;
        auto overlap = intersect(p.box, b);
        if (!overlap) continue;
        covered.push_back(*overlap);
        coveredVolume += volume(*overlap);
        // The bytes of the piece between the overlap's first and last element.
        const Extents strides = rowMajorByteStrides(p.box, elem);
        std::int64_t first = 0, last = 0;
        for (int d = 0; d < p.box.ndim; ++d) {
          first += (overlap->lo[d] - p.box.lo[d]) * strides[d];
          last += (overlap->hi[d] - 1 - p.box.lo[d]) * strides[d];
        }
        out.fragments.push_back(Fragment{p.box, p.offset, static_cast<std::uint64_t>(first),
                                         static_cast<std::uint64_t>(last - first) + elem});
      }
    }
    // Pieces of a version never overlap, so their volumes add up: a box they cover in full needs
    // no subtraction (which costs up to pieces x parts left).
    if (coveredVolume == volume(b)) continue;
    if (!listMissing) {
      out.missing.push_back(b);
      continue;
    }
    // In row-major order of their corners, a decomposition's pieces leave few parts at a time.
    std::sort(covered.begin(), covered.end(), [](const Box& x, const Box& y) { return x.lo < y.lo; });
    for (Box& m : subtract(b, covered)) out.missing.push_back(m);
  }
  return out;
}

std::uint64_t Store::lease(ClientId reader, const std::string& name, std::int64_t version, std::uint64_t bytes) {
  VarState& v = state(name, "get");
  Version& ver = v.versions.at(version);
  ver.holders.insert(reader);
  ++ver.leases;
  counters_.bytesServed += bytes;
  const std::uint64_t id = ++lastId_;
  leases_[id] = LeaseRef{name, version, reader};
  return id;
}

void Store::endLease(std::uint64_t lease) {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return;
  const LeaseRef l = it->second;
  leases_.erase(it);
  VarState& v = vars_.at(l.name);
  auto vit = v.versions.find(l.version);
  if (vit == v.versions.end()) return;
  --vit->second.leases;
  ++generation_;
  if (v.removing) {
    finishRemoval(v);
    return;
  }
  trim(v);
}

void Store::release(ClientId reader, const std::string& name, std::int64_t version) {
  auto found = vars_.find(name);
  if (found != vars_.end() && found->second.removing) return;  // its versions go anyway
  VarState& v = state(name, "release");
  auto vit = v.versions.find(version);
  if (vit == v.versions.end()) return;
  vit->second.holders.erase(reader);
  trim(v);
  ++generation_;  // a blocked put may now make room by dropping it
}

void Store::dropClient(ClientId client) {
  std::vector<std::uint64_t> mine;
  for (const auto& [id, r] : reservations_) {
    if (r.writer == client) mine.push_back(id);
  }
  for (std::uint64_t id : mine) abort(id);
  std::vector<std::uint64_t> leases;
  for (const auto& [id, l] : leases_) {
    if (l.reader == client) leases.push_back(id);
  }
  for (std::uint64_t id : leases) endLease(id);
  for (auto& [name, v] : vars_) {
    for (auto& [n, ver] : v.versions) ver.holders.erase(client);
    if (!v.removing) trim(v);
  }
}

bool Store::remove(const std::string& name) {
  checkName(name);
  auto it = vars_.find(name);
  if (it == vars_.end()) {
    throw Error(ErrorCode::InvalidArgument, "remove: variable " + quoted(name) + " is not defined");
  }
  it->second.removing = true;
  ++generation_;  // waiting puts and gets of it are answered (refused) now
  return finishRemoval(it->second);
}

bool Store::finishRemoval(VarState& v) {
  for (auto it = v.versions.begin(); it != v.versions.end();) {
    auto next = std::next(it);
    // Holds do not keep a removed variable; data in flight does, until it ends.
    if (it->second.leases == 0 && !hasReservations(it->second)) freeVersion(v, it);
    it = next;
  }
  if (!v.versions.empty()) return false;
  metaBytes_ -= kVariableRecordBytes + v.def.name.size() + kDroppedRecordBytes * v.dropped.size();
  vars_.erase(v.def.name);  // `v` is gone from here on
  ++generation_;
  return true;
}

void Store::freeVersion(VarState& v, std::map<std::int64_t, Version>::iterator it) {
  for (const auto& [off, p] : it->second.pieces) {
    alloc_.release(off);
    metaBytes_ -= pieceRecordBytes(p.box);
  }
  if (it->second.committedVolume == v.ownedVolume) --v.complete;
  byOrder_.erase(it->second.order);
  v.versions.erase(it);
  metaBytes_ -= kVersionRecordBytes;
}

void Store::trim(VarState& v) {
  // A version goes once keepVersions newer versions are complete here (written in full), unless a
  // reader holds it or data for it is in flight. Versions still being written never count: a
  // writer ahead of the others does not push out the versions they are still writing.
  // Fewer complete versions than keepVersions: none has that many newer ones (no walk, which
  // would cost every version at every commit).
  if (v.complete < static_cast<std::size_t>(v.def.keepVersions)) return;
  int completeNewer = 0;
  for (auto it = v.versions.rbegin(); it != v.versions.rend();) {
    const std::int64_t number = it->first;
    const Version& ver = it->second;
    ++it;
    if (completeNewer >= v.def.keepVersions && !ver.pinned() && !hasReservations(ver)) {
      dropVersion(v, number, false);
      it = std::make_reverse_iterator(v.versions.upper_bound(number));
      continue;
    }
    if (ver.committedVolume == v.ownedVolume) ++completeNewer;
  }
}

bool Store::hasReservations(const Version& ver) { return ver.reserved > 0; }

bool Store::evictOldest(const std::string& keepName, std::int64_t keep) {
  // Oldest first; the ones skipped are held by readers or have data in flight.
  for (const auto& [order, where] : byOrder_) {
    auto& [v, number] = where;
    const Version& ver = v->versions.at(number);
    if (ver.pinned() || hasReservations(ver) || (v->def.name == keepName && number == keep)) continue;
    dropVersion(*v, number, true);
    return true;
  }
  return false;
}

void Store::dropVersion(VarState& v, std::int64_t number, bool evicted) {
  auto it = v.versions.find(number);
  if (it == v.versions.end()) return;
  freeVersion(v, it);
  rememberDropped(v, number);
  ++(evicted ? counters_.versionsEvicted : counters_.versionsDropped);
  ++generation_;
}

void Store::rememberDropped(VarState& v, std::int64_t number) {
  if (v.dropped.insert(number).second) metaBytes_ += kDroppedRecordBytes;
  while (v.dropped.size() > kRememberDropped) {
    v.droppedBelow = std::max(v.droppedBelow, *v.dropped.begin() + 1);
    v.dropped.erase(v.dropped.begin());
    metaBytes_ -= kDroppedRecordBytes;
  }
}

std::vector<std::int64_t> Store::completeVersions(const std::string& name, std::int64_t atLeast) const {
  const VarState& v = state(name, "wait_version");
  std::vector<std::int64_t> out;
  for (auto it = v.versions.lower_bound(atLeast); it != v.versions.end(); ++it) {
    if (it->second.committedVolume == v.ownedVolume) out.push_back(it->first);
  }
  return out;
}

StoreStats Store::stats() const {
  StoreStats s = counters_;
  s.capacity = alloc_.capacity();
  s.bytesInUse = alloc_.bytesInUse();
  s.highWater = highWater_;
  s.metadataBytes = metaBytes_;
  s.variables = vars_.size();
  for (const auto& [name, v] : vars_) {
    s.versions += v.versions.size();
    for (const auto& [n, ver] : v.versions) s.pieces += ver.pieces.size();
  }
  return s;
}

}  // namespace axon::space
