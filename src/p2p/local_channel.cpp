#include "p2p/local_channel.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

#include "axon/error.hpp"
#include "bootstrap/setup_step.hpp"
#include "core/env.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "gpu/gpu_backend.hpp"
#include "p2p/matcher.hpp"

namespace axon::p2p {

// What a rendezvous slot says about the send buffer.
struct Offer {
  std::uint64_t address = 0;     // in the sender's address space
  std::int64_t pid = 0;          // the sender's process, for CMA
  std::uint64_t heapOffset = 0;  // when inHeap: the buffer's offset in that heap
  std::uint8_t onDevice = 0;
  std::uint8_t inHeap = 0;       // 0: no; 1 + HeapKind: in that symmetric heap
  std::uint8_t hasIpc = 0;       // 1: `ipc` describes the device allocation holding it
  IpcBuffer ipc{};
};
// An offer travels in one slot's payload: AXON_P2P_EAGER's minimum leaves room for it.
static_assert(sizeof(Offer) <= 256);

namespace {

constexpr std::uint64_t kDeclined = 1;

SlotHeader slotHeader(SlotKind kind, std::uint64_t bytes, std::uint64_t id, std::uint64_t aux = 0) {
  SlotHeader h{};
  h.kind = kind;
  h.bytes = bytes;
  h.id = id;
  h.aux = aux;
  return h;
}

}  // namespace

std::unique_ptr<LocalChannel> LocalChannel::create(PeContext& rt, const detail::TeamState& node, RingLayout layout) {
  std::unique_ptr<LocalChannel> ch(new LocalChannel(rt, node, layout));
  const int n = static_cast<int>(node.members.size());
  const std::uint64_t bytes = layout.inboxBytes(n);
  const std::string what = "the two-sided message rings of node " + rt.nodeName(rt.myPe()) +
                           " (AXON_P2P_EAGER sets a slot's size: " + std::to_string(bytes) + " bytes per PE)";
  // Every PE states its layout, so that PEs built or configured differently fail here by name.
  const std::string card = std::to_string(layout.slots) + "/" + std::to_string(layout.payload);
  SetupStep create(rt.bootstrap(), "p2p-rings-" + node.name, node.members, what);
  std::optional<ShmSegment> mine;
  try {
    mine.emplace(ShmSegment::create(freshShmName(rt.myPe(), "-p2p"), bytes));
    mine->growTo(bytes);
  } catch (const Error& e) {
    create.fail(e);
  }
  auto cards = create.finish(mine ? card + " " + mine->name() : "");
  SetupStep open(rt.bootstrap(), "p2p-rings-open-" + node.name, node.members, what);
  try {
    for (int i = 0; i < n; ++i) {
      const std::string& c = cards[i];
      const auto space = c.find(' ');
      if (c.substr(0, space) != card) {
        throw Error(ErrorCode::InvalidArgument,
                    "PE " + std::to_string(rt.myPe()) + ": PE " + std::to_string(node.members[i]) +
                        " has message rings of " + c.substr(0, space) + " (slots/payload) but this PE has " + card +
                        ": give every PE the same AXON_P2P_EAGER");
      }
      if (i == node.myIndex) {
        ch->inboxes_.push_back(std::move(*mine));
        continue;
      }
      ShmSegment peer = ShmSegment::open(c.substr(space + 1), bytes);
      peer.growTo(bytes);
      ch->inboxes_.push_back(std::move(peer));
    }
  } catch (const Error& e) {
    open.fail(e);
  }
  open.finish();
  ch->inboxes_[node.myIndex].unlinkName();
  if (GpuBackend* gpu = rt.gpu()) {
    for (auto& s : ch->inboxes_) {
      gpu->pinHost(s.base(), bytes);
      ch->pinned_.push_back(s.base());
    }
  }
  return ch;
}

LocalChannel::LocalChannel(PeContext& rt, const detail::TeamState& node, RingLayout layout)
    : rt_(rt), layout_(layout), me_(node.myIndex), peOf_(node.members), localOf_(rt.nPes(), -1) {
  const std::size_t n = node.members.size();
  for (std::size_t i = 0; i < n; ++i) localOf_[node.members[i]] = static_cast<int>(i);
  written_.assign(n, 0);
  consumed_.assign(n, 0);
  cmaWorks_.assign(n, true);
  controls_.resize(n);
  messagesWritten_.assign(n, 0);
  messagesConsumed_.assign(n, 0);
  offered_.resize(n);
  offers_ = rt.env().p2pPosted;
}

LocalChannel::~LocalChannel() {
  if (GpuBackend* gpu = rt_.gpu()) {
    for (void* p : pinned_) gpu->unpinHost(p);
  }
}

void LocalChannel::copy(void* dst, bool dstOnDevice, const void* src, bool srcOnDevice, std::uint64_t bytes) {
  if (bytes == 0) return;
  if (dstOnDevice || srcOnDevice) rt_.gpu()->copyLocal(dst, src, bytes);
  else std::memcpy(dst, src, bytes);
}

bool LocalChannel::write(int local, const SlotHeader& h, const void* payload, std::uint64_t bytes,
                         bool payloadOnDevice) {
  const std::uint64_t n = written_[local];
  const std::uint64_t consumed =
      std::atomic_ref<std::uint64_t>(control(local, me_).consumed).load(std::memory_order_acquire);
  if (!layout_.hasRoom(n, consumed)) return false;
  char* slot = slotAt(local, me_, n);
  auto* out = reinterpret_cast<SlotHeader*>(slot);
  // Everything but seq, which publishes the slot once the rest is in place.
  std::memcpy(slot + sizeof(std::uint64_t), reinterpret_cast<const char*>(&h) + sizeof(std::uint64_t),
              sizeof(SlotHeader) - sizeof(std::uint64_t));
  copy(slot + sizeof(SlotHeader), false, payload, payloadOnDevice, bytes);
  std::atomic_ref<std::uint64_t>(out->seq).store(n + 1, std::memory_order_release);
  written_[local] = n + 1;
  return true;
}

bool LocalChannel::writeMessage(int local, const SlotHeader& h, const void* payload, std::uint64_t bytes,
                                bool payloadOnDevice) {
  if (!write(local, h, payload, bytes, payloadOnDevice)) return false;
  ++messagesWritten_[local];
  return true;
}

void LocalChannel::writeControl(int local, const SlotHeader& h) {
  // Behind earlier ones, or now if the ring has room.
  if (controls_[local].empty() && write(local, h, nullptr, 0, false)) return;
  controls_[local].push_back(h);
}

bool LocalChannel::flushControls() {
  bool any = false;
  for (std::size_t local = 0; local < controls_.size(); ++local) {
    auto& q = controls_[local];
    while (!q.empty() && write(static_cast<int>(local), q.front(), nullptr, 0, false)) {
      q.pop_front();
      any = true;
    }
  }
  return any;
}

bool LocalChannel::sendEager(int pe, const Header& h, const std::shared_ptr<Operation>& send) {
  SlotHeader s = slotHeader(SlotKind::Eager, h.bytes, h.sendId);
  s.context = h.context;
  s.tag = h.tag;
  s.credit = h.credit;
  if (!writeMessage(localOf_[pe], s, send->buffer, h.bytes, send->onDevice)) return false;
  send->complete();
  return true;
}

bool LocalChannel::sendRendezvous(int pe, const Header& h, const std::shared_ptr<Operation>& send) {
  Offer o;
  o.address = reinterpret_cast<std::uintptr_t>(send->buffer);
  o.pid = ::getpid();
  o.onDevice = send->onDevice ? 1 : 0;
  if (HeapSpace* heap = rt_.heapContaining(send->buffer)) {
    o.inHeap = static_cast<std::uint8_t>(1 + static_cast<int>(heap->kind()));
    o.heapOffset = heap->offsetOf(send->buffer);
  } else if (send->onDevice && !send->streamOrdered && pe != rt_.myPe() && rt_.gpu()->exportBuffer(send->buffer, o.ipc)) {
    // Not for stream-ordered messages: opening the mapping (cuIpcOpenMemHandle) waits for the
    // GPU to go idle, and a stream waiting for this message keeps it busy until AXON_TIMEOUT
    // (seen on the H100). They stream through the ring instead.
    o.hasIpc = 1;
  }
  SlotHeader s = slotHeader(SlotKind::Rendezvous, h.bytes, h.sendId);
  s.context = h.context;
  s.tag = h.tag;
  if (!writeMessage(localOf_[pe], s, &o, sizeof o, false)) return false;
  announced_[send->id] = send;
  return true;
}

void LocalChannel::sendCredit(int pe, std::uint64_t bytes) {
  writeControl(localOf_[pe], slotHeader(SlotKind::Credit, bytes, 0));
}

bool LocalChannel::poll(Sink& sink) {
  bool any = flushControls();
  any = pumpStreams() || any;
  const int n = static_cast<int>(peOf_.size());
  for (int local = 0; local < n; ++local) {
    // At most a ring's worth per sender per poll, so that no sender starves the others.
    for (std::uint32_t k = 0; k < layout_.slots; ++k) {
      const std::uint64_t next = consumed_[local];
      const char* slot = slotAt(me_, local, next);
      const auto& h = *reinterpret_cast<const SlotHeader*>(slot);
      if (std::atomic_ref<const std::uint64_t>(h.seq).load(std::memory_order_acquire) != next + 1) break;
      handle(local, h, slot + sizeof(SlotHeader), sink);
      consumed_[local] = next + 1;
      std::atomic_ref<std::uint64_t>(control(me_, local).consumed).store(next + 1, std::memory_order_release);
      any = true;
    }
  }
  return any;
}

void LocalChannel::handle(int local, const SlotHeader& h, const char* payload, Sink& sink) {
  const int pe = peOf_[local];
  switch (h.kind) {
    case SlotKind::Eager:
    case SlotKind::Rendezvous: {
      auto m = std::make_unique<Arrived>();
      m->sourcePe = pe;
      m->header = Header{h.context, h.tag, h.bytes, h.id, h.credit};
      m->eager = h.kind == SlotKind::Eager;
      m->channel = this;
      if (m->eager) m->data = payload;
      else m->offer.assign(payload, payload + sizeof(Offer));
      ++messagesConsumed_[local];
      // The engine matches it now, withdrawing the receive offered to `pe` if it takes that one;
      // an offer still standing afterwards counts this message as consumed.
      sink.arrived(std::move(m));
      recount(local);
      return;
    }
    case SlotKind::Delivered: {
      ++messagesConsumed_[local];
      Offered& o = offered_[local];
      if (!o.recv || o.recv->id != h.id) {
        log(LogLevel::Error, rt_.myPe(),
            "PE " + std::to_string(pe) + " delivered a message into receive " + std::to_string(h.id) +
                ", which is not the receive offered to it; the engine looks for it");
      }
      // Free for the next offer (which bumps the generation).
      const PostedWord empty{PostedState::Empty, static_cast<std::uint32_t>(messagesConsumed_[local]), o.word.generation};
      std::atomic_ref<std::uint64_t>(postedWord(me_, local)).store(empty.pack(), std::memory_order_release);
      o = Offered{};
      const std::string failure = h.aux ? std::string(payload, ::strnlen(payload, layout_.payload)) : std::string();
      sink.delivered(pe, Header{h.context, h.tag, h.bytes, 0, 0}, h.id, failure);
      return;
    }
    case SlotKind::ClearToSend: {
      auto it = announced_.find(h.id);
      if (it == announced_.end()) return;  // failed meanwhile
      streams_.push_back(Stream{it->second, local, h.receive});
      announced_.erase(it);
      return;
    }
    case SlotKind::Finished: {
      auto it = announced_.find(h.id);
      if (it == announced_.end()) return;
      it->second->complete();
      announced_.erase(it);
      return;
    }
    case SlotKind::Data: {
      auto it = filling_.find(h.id);
      if (it == filling_.end()) return;
      Operation& recv = *it->second;
      try {
        copy(static_cast<char*>(recv.buffer) + h.aux, recv.onDevice, payload, false, h.bytes);
      } catch (const Error& e) {
        recv.fail(e.code(), "PE " + std::to_string(rt_.myPe()) + ": " + recv.describe() + ": " + e.what());
      }
      recv.landed += h.bytes;
      if (recv.landed >= recv.status.bytes) {
        recv.complete();
        filling_.erase(it);
      }
      return;
    }
    case SlotKind::Credit:
      sink.credited(pe, h.bytes);
      return;
  }
  log(LogLevel::Error, rt_.myPe(),
      "a message slot of kind " + std::to_string(static_cast<unsigned>(h.kind)) + " from PE " + std::to_string(pe) +
          " is unknown (a peer of another build?); dropped");
}

bool LocalChannel::pumpStreams() {
  bool any = false;
  for (auto it = streams_.begin(); it != streams_.end();) {
    Operation& send = *it->send;
    bool full = false;
    while (it->offset < send.bytes) {
      const std::uint64_t piece = std::min<std::uint64_t>(layout_.payload, send.bytes - it->offset);
      SlotHeader h = slotHeader(SlotKind::Data, piece, it->receive, it->offset);
      try {
        if (!write(it->local, h, static_cast<char*>(send.buffer) + it->offset, piece, send.onDevice)) {
          full = true;
          break;
        }
      } catch (const Error& e) {
        // The receiver waits for pieces that will not come: its wait names the timeout.
        send.fail(e.code(), "PE " + std::to_string(rt_.myPe()) + ": " + send.describe() + ": " + e.what());
        break;
      }
      it->offset += piece;
      any = true;
    }
    if (full) {
      ++it;
      continue;
    }
    send.complete();
    it = streams_.erase(it);
  }
  return any;
}

bool LocalChannel::offer(const std::shared_ptr<Operation>& recv) {
  const int pe = recv->peerPe;
  if (!offers_ || pe < 0 || pe == rt_.myPe() || !reaches(pe) || recv->streamOrdered) return false;
  const int local = localOf_[pe];
  if (offered_[local].recv) return false;
  HeapSpace* heap = recv->buffer ? rt_.heapContaining(recv->buffer) : nullptr;
  if (!heap) return false;
  const std::uint64_t offset = heap->offsetOf(recv->buffer);
  if (offset + recv->bytes > heap->mapped()) return false;
  PostedRecord& r = control(me_, local).posted;
  // The word is Empty (no offer stands): the sender reads none of this until the release below.
  std::atomic_ref<std::uint64_t>(r.receiveId).store(recv->id, std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(r.capacity).store(recv->bytes, std::memory_order_relaxed);
  std::atomic_ref<std::uint64_t>(r.heapOffset).store(offset, std::memory_order_relaxed);
  std::atomic_ref<std::int32_t>(r.context).store(recv->context, std::memory_order_relaxed);
  std::atomic_ref<std::int32_t>(r.tag).store(recv->tag, std::memory_order_relaxed);
  std::atomic_ref<std::uint32_t>(r.heapKind).store(static_cast<std::uint32_t>(heap->kind()), std::memory_order_relaxed);
  generation_ = (generation_ + 1) & PostedWord::kGenerationMask;
  const PostedWord word{PostedState::Offered, static_cast<std::uint32_t>(messagesConsumed_[local]), generation_};
  std::atomic_ref<std::uint64_t>(r.word).store(word.pack(), std::memory_order_release);
  offered_[local] = Offered{recv, word};
  return true;
}

LocalChannel::Withdrawal LocalChannel::withdraw(const Operation& recv) {
  const int pe = recv.peerPe;
  if (pe < 0 || !reaches(pe)) return Withdrawal::NotOffered;
  Offered& o = offered_[localOf_[pe]];
  if (o.recv.get() != &recv) return Withdrawal::NotOffered;
  std::uint64_t expected = o.word.pack();
  const std::uint64_t empty = o.word.with(PostedState::Empty).pack();
  if (!std::atomic_ref<std::uint64_t>(postedWord(me_, localOf_[pe]))
           .compare_exchange_strong(expected, empty, std::memory_order_acq_rel)) {
    return Withdrawal::Taken;  // keep it: the Delivered slot ends it
  }
  o = Offered{};
  return Withdrawal::Withdrawn;
}

void LocalChannel::recount(int local) {
  Offered& o = offered_[local];
  if (!o.recv) return;
  std::uint64_t expected = o.word.pack();
  PostedWord next = o.word;
  next.messages = static_cast<std::uint32_t>(messagesConsumed_[local]);
  if (std::atomic_ref<std::uint64_t>(postedWord(me_, local))
          .compare_exchange_strong(expected, next.pack(), std::memory_order_acq_rel)) {
    o.word = next;
    return;
  }
  // A sender takes an offer only with no message of its own in flight, and this one was: the
  // swap cannot fail. Should it, the offer is Taken and its Delivered slot still ends it.
  log(LogLevel::Error, rt_.myPe(),
      "the receive offered to PE " + std::to_string(peOf_[local]) + " was taken while a message of that PE was in flight");
}

void* LocalChannel::peerHeapAt(int pe, std::uint32_t kindValue, std::uint64_t offset, std::uint64_t bytes) const {
  if (kindValue > static_cast<std::uint32_t>(HeapKind::Gpu)) return nullptr;
  const auto kind = static_cast<HeapKind>(kindValue);
  if (kind == HeapKind::Gpu && !(rt_.gpu() && rt_.gpu()->peerReachable(pe))) return nullptr;
  return rt_.heapOf(kind).peerRange(pe, offset, bytes);
}

void* LocalChannel::offeredBuffer(int pe, PostedRecord& r, std::uint64_t bytes, bool& onDevice) const {
  const auto kindValue = std::atomic_ref<std::uint32_t>(r.heapKind).load(std::memory_order_relaxed);
  onDevice = kindValue == static_cast<std::uint32_t>(HeapKind::Gpu);
  return peerHeapAt(pe, kindValue, std::atomic_ref<std::uint64_t>(r.heapOffset).load(std::memory_order_relaxed), bytes);
}

bool LocalChannel::sendIntoPosted(int pe, const Header& h, const std::shared_ptr<Operation>& send) {
  if (!offers_ || pe == rt_.myPe() || !reaches(pe) || send->streamOrdered) return false;
  const int local = localOf_[pe];
  PostedRecord& r = control(local, me_).posted;
  std::uint64_t seen = std::atomic_ref<std::uint64_t>(r.word).load(std::memory_order_acquire);
  const PostedWord w = PostedWord::unpack(seen);
  // Offered, and every message this PE sent that PE before has been taken in there.
  if (w.state != PostedState::Offered || w.messages != static_cast<std::uint32_t>(messagesWritten_[local])) return false;
  const int context = std::atomic_ref<std::int32_t>(r.context).load(std::memory_order_relaxed);
  const int tag = std::atomic_ref<std::int32_t>(r.tag).load(std::memory_order_relaxed);
  const auto capacity = std::atomic_ref<std::uint64_t>(r.capacity).load(std::memory_order_relaxed);
  const auto receiveId = std::atomic_ref<std::uint64_t>(r.receiveId).load(std::memory_order_relaxed);
  // A message the receive would truncate goes the usual way and fails it there, naming both sizes.
  if (context != h.context || (tag != kAnyTag && tag != h.tag) || h.bytes > capacity) return false;
  const std::uint64_t consumed =
      std::atomic_ref<std::uint64_t>(control(local, me_).consumed).load(std::memory_order_acquire);
  if (!layout_.hasRoom(written_[local], consumed)) return false;  // room for the Delivered slot
  bool dstOnDevice = false;
  void* dst = offeredBuffer(pe, r, h.bytes, dstOnDevice);
  if (!dst && h.bytes) return false;
  // Take it: fails if the receiver withdrew it or offered another meanwhile (the fields read
  // above may then be torn; they are not used).
  if (!std::atomic_ref<std::uint64_t>(r.word).compare_exchange_strong(seen, w.with(PostedState::Taken).pack(),
                                                                      std::memory_order_acq_rel)) {
    return false;
  }
  std::string failure;
  try {
    if (h.bytes) copy(dst, dstOnDevice, send->buffer, send->onDevice, h.bytes);
  } catch (const Error& e) {
    failure = "PE " + std::to_string(rt_.myPe()) + " could not copy " + std::to_string(h.bytes) +
              " bytes into the receive buffer: " + e.what();
    failure.resize(std::min<std::size_t>(failure.size(), layout_.payload - 1));
  }
  SlotHeader d = slotHeader(SlotKind::Delivered, h.bytes, receiveId, failure.empty() ? 0 : 1);
  d.context = h.context;
  d.tag = h.tag;
  // Room was checked and only this thread writes this ring, so this cannot find it full.
  if (!writeMessage(local, d, failure.c_str(), failure.empty() ? 0 : failure.size() + 1, false)) {
    send->fail(ErrorCode::Internal, "PE " + std::to_string(rt_.myPe()) + ": " + send->describe() +
                                        ": the message was copied into PE " + std::to_string(pe) +
                                        "'s receive but its ring had no room to say so");
    return true;
  }
  if (failure.empty()) send->complete();
  else send->fail(ErrorCode::System, "PE " + std::to_string(rt_.myPe()) + ": " + send->describe() + ": " + failure);
  return true;
}

void LocalChannel::finished(int local, std::uint64_t sendId, bool declined) {
  writeControl(local, slotHeader(SlotKind::Finished, 0, sendId, declined ? kDeclined : 0));
}

bool LocalChannel::copyDirect(int pe, const Offer& o, Operation& recv, std::uint64_t bytes) {
  const bool srcOnDevice = o.onDevice != 0;
  void* src = reinterpret_cast<void*>(static_cast<std::uintptr_t>(o.address));
  if (pe == rt_.myPe()) {
    copy(recv.buffer, recv.onDevice, src, srcOnDevice, bytes);
    return true;
  }
  if (o.inHeap) {
    if (void* mapped = peerHeapAt(pe, static_cast<std::uint32_t>(o.inHeap - 1), o.heapOffset, bytes)) {
      copy(recv.buffer, recv.onDevice, mapped, srcOnDevice, bytes);
      return true;
    }
  }
  if (o.hasIpc && rt_.gpu()) {
    // nullptr: CUDA will not map it here; the data streams through the ring below.
    if (char* base = static_cast<char*>(rt_.gpu()->importBuffer(pe, o.ipc))) {
      copy(recv.buffer, recv.onDevice, base + (o.address - o.ipc.base), true, bytes);
      return true;
    }
  }
  const int local = localOf_[pe];
  if (srcOnDevice || recv.onDevice || !cmaWorks_[local] || rt_.pidOf(pe) <= 0 || rt_.pidOf(pe) != o.pid) return false;
  std::uint64_t done = 0;
  while (done < bytes) {
    iovec to{static_cast<char*>(recv.buffer) + done, bytes - done};
    iovec from{static_cast<char*>(src) + done, bytes - done};
    const ssize_t got = ::process_vm_readv(static_cast<pid_t>(o.pid), &to, 1, &from, 1, 0);
    if (got > 0) {
      done += static_cast<std::uint64_t>(got);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (done == 0 && got < 0 && (errno == EPERM || errno == ENOSYS)) {
      // Not permitted here (ptrace scope, a container's seccomp): stream through the ring instead,
      // from now on.
      cmaWorks_[local] = false;
      log(LogLevel::Info, rt_.myPe(),
          "reading PE " + std::to_string(pe) + "'s memory directly (process_vm_readv) is not permitted (" +
              std::strerror(errno) + "): its large messages stream through shared memory");
      return false;
    }
    throw Error(ErrorCode::System, "process_vm_readv of " + std::to_string(bytes) + " bytes from PE " +
                                       std::to_string(pe) + " failed after " + std::to_string(done) + ": " +
                                       (got < 0 ? std::strerror(errno) : "nothing read"));
  }
  return true;
}

void LocalChannel::fetch(Arrived& m, const std::shared_ptr<Operation>& recv) {
  Offer o;
  std::memcpy(&o, m.offer.data(), std::min(sizeof o, m.offer.size()));
  const int local = localOf_[m.sourcePe];
  const std::uint64_t bytes = m.header.bytes;
  try {
    if (copyDirect(m.sourcePe, o, *recv, bytes)) {
      recv->complete();
      finished(local, m.header.sendId, false);
      return;
    }
  } catch (const Error& e) {
    recv->fail(e.code(), "PE " + std::to_string(rt_.myPe()) + ": " + recv->describe() + ": " + e.what());
    finished(local, m.header.sendId, true);
    return;
  }
  recv->landed = 0;
  filling_[recv->id] = recv;
  SlotHeader h = slotHeader(SlotKind::ClearToSend, bytes, m.header.sendId);
  h.receive = recv->id;
  writeControl(local, h);
}

void LocalChannel::decline(Arrived& m) {
  if (!m.eager) finished(localOf_[m.sourcePe], m.header.sendId, true);
}

std::string LocalChannel::describePath(int pe, std::uint64_t bytes, bool onDevice, bool eager) const {
  const std::string where = pe == rt_.myPe() ? "to itself" : "through node shared memory";
  if (eager) {
    return "eager: the data is copied into a slot of the receiver's ring " + where +
           (pe == rt_.myPe() || !offers_ ? std::string()
                                          : std::string(", or straight into the receive buffer (one copy) when PE ") +
                                                std::to_string(pe) + " has posted a receive for it in either symmetric heap");
  }
  if (pe == rt_.myPe()) return "rendezvous: one copy within the process, once matched";
  std::string how = "rendezvous: once matched, the receiver copies the data once from the send buffer (";
  if (onDevice) {
    how += "CUDA IPC for a plain allocation such as cudaMalloc's, opened once and cached; the symmetric GPU heap as "
           "mapped); other GPU buffers (VMM, pools) stream through the ring in " +
           std::to_string(layout_.pieces(bytes)) + " slots of up to " + std::to_string(layout_.payload) + " bytes";
  } else {
    how += cmaWorks_[localOf_[pe]] ? "host memory by CMA, process_vm_readv, or the symmetric heap)"
                                   : "the symmetric heap; CMA is not permitted here, so other buffers stream "
                                     "through the ring)";
  }
  return how;
}

}  // namespace axon::p2p
