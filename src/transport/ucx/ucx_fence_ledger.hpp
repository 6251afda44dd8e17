// What a fence to each PE must flush. UCX may deliver an RMA operation (a put, a nonblocking get,
// an atomic or signal through UCX's RMA) after what follows it to the same PE, and an active
// message after a later RMA operation (they may take different lanes); eager active messages to
// one PE arrive in the order sent (one lane: UcxWorker pins UCX_MAX_EAGER_RAILS to 1). So each PE
// counts the operations of both kinds issued to it, and the last count of each that a completed
// flush covers; a fence flushes a PE only where an operation is not covered yet.
//
// A flush completes an active message once it is delivered, not once the target's handler has
// applied it (when the target polls). Over TCP, where UCX carries RMA on the same connection, what
// follows the flush still comes after; over hardware RMA (RC, DC) only quiet, which waits for the
// targets' answers, orders an active message's effect before a later RMA operation's.
//
// Counters, not flags, because fences run on several threads at once (the host's calls and the
// device proxy's): a fence marks the counts, flushes, then raises the covered counts to its marks,
// so one thread's flush in progress never lets another's fence pass over an operation it has not
// covered yet, and a flush that fails covers nothing.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

namespace axon::ucx {

class UcxFenceLedger {
 public:
  enum class Kind { Rma, ActiveMessage };
  // The counts of PE `pe` when a flush starts: the flush covers every operation they count.
  struct Mark {
    std::uint64_t rma = 0, am = 0;
  };

  explicit UcxFenceLedger(int pes) : n_(pes), pes_(std::make_unique<Pe[]>(static_cast<std::size_t>(pes))) {}

  // After the operation is issued (or failed partway): counted, it is flushed by the next fence.
  // A PE out of range (an operation refused before it was issued) counts nothing.
  void issued(int pe, Kind kind) {
    if (pe < 0 || pe >= n_) return;
    Pe& p = pes_[pe];
    (kind == Kind::Rma ? p.rmaIssued : p.amIssued).fetch_add(1, std::memory_order_release);
  }
  Mark mark(int pe) const {
    const Pe& p = pes_[pe];
    return {p.rmaIssued.load(std::memory_order_acquire), p.amIssued.load(std::memory_order_acquire)};
  }
  // Whether what `m` counts is flushed already: its RMA always, its active messages when
  // `activeMessagesToo` (not before another active message, which cannot overtake them).
  bool covered(int pe, const Mark& m, bool activeMessagesToo) const {
    const Pe& p = pes_[pe];
    return p.rmaFlushed.load(std::memory_order_acquire) >= m.rma &&
           (!activeMessagesToo || p.amFlushed.load(std::memory_order_acquire) >= m.am);
  }
  // A flush that started after mark(pe) returned `m` has completed.
  void flushed(int pe, const Mark& m) {
    Pe& p = pes_[pe];
    raise(p.rmaFlushed, m.rma);
    raise(p.amFlushed, m.am);
  }

 private:
  struct Pe {
    std::atomic<std::uint64_t> rmaIssued{0}, amIssued{0}, rmaFlushed{0}, amFlushed{0};
  };
  static void raise(std::atomic<std::uint64_t>& word, std::uint64_t to) {
    std::uint64_t seen = word.load(std::memory_order_relaxed);
    while (seen < to && !word.compare_exchange_weak(seen, to, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }

  int n_;
  std::unique_ptr<Pe[]> pes_;
};

}  // namespace axon::ucx
