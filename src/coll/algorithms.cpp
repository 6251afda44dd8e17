#include "coll/algorithms.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "coll/reduce_host.hpp"
#include "coll/schedule.hpp"

namespace axon::coll {
namespace {

void copyBytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes && dst != src) std::memcpy(dst, src, bytes);
}

// Chunk k of a plan over `count` elements: [offset, offset + count).
Range chunkOf(const Plan& plan, std::size_t count, std::size_t k) {
  const std::size_t off = std::min(k * plan.chunkElems, count);
  return {off, std::min(plan.chunkElems, count - off)};
}

// dst = reduction over members in order 0 .. n-1 of data(p) (so every PE that reduces the same
// inputs gets the same bits).
template <class Data>
void reduceInOrder(Call& call, char* dst, std::size_t count, const Buffers& b, const Data& data) {
  const std::size_t bytes = count * b.elem;
  copyBytes(dst, data(0), bytes);
  for (int p = 1; p < call.members(); ++p) reduceHost(dst, dst, data(p), count, b.type, b.op);
}

// Copies `bytes` of `data` into this PE's half for round r and publishes it to `reader`; returns
// the half (this PE's copy of what it sent).
char* publishTo(Call& call, std::uint64_t r, const char* data, std::size_t bytes, int reader) {
  char* h = call.beginPublish(r);
  copyBytes(h, data, bytes);
  const int readers[] = {reader};
  call.publish(r, readers, bytes);
  return h;
}

}  // namespace

void runBarrier(Call& call) {
  const std::uint64_t r = call.nextRound();
  call.beginPublish(r);
  call.publishToAll(r, 0);
  for (int p = 0; p < call.members(); ++p) {
    if (p == call.me()) continue;
    call.await(p, r);
    call.ack(p, r);
  }
}

void runBroadcast(Call& call, const Plan& plan, const Buffers& b) {
  const int n = call.members(), me = call.me();
  if (plan.algo == Algo::Chain) {
    const int d = chainPosition(me, b.root, n);
    const int pred = chainMember(d - 1, b.root, n), succ = chainMember(d + 1, b.root, n);
    const std::uint64_t r0 = call.reserveRounds(plan.rounds);
    const std::size_t steps = chainSteps(plan.chunks, n) + 1;  // the last step only consumes
    for (std::size_t t = 0; t < steps; ++t) {
      if (t < static_cast<std::size_t>(d) || t - d >= plan.chunks) continue;
      const Range c = chunkOf(plan, b.count, t - d);
      const std::size_t bytes = c.count * b.elem;
      if (d == 0) {
        publishTo(call, r0 + t, b.src + c.offset * b.elem, bytes, succ);
        copyBytes(b.dst + c.offset * b.elem, b.src + c.offset * b.elem, bytes);
        continue;
      }
      const char* in = call.await(pred, r0 + t - 1);
      copyBytes(b.dst + c.offset * b.elem, in, bytes);
      if (d < n - 1) publishTo(call, r0 + t, in, bytes, succ);
      call.ack(pred, r0 + t - 1);
    }
    return;
  }
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::size_t bytes = c.count * b.elem;
    const std::uint64_t r = call.nextRound();
    if (me == b.root) {
      char* h = call.beginPublish(r);
      copyBytes(h, b.src + c.offset * b.elem, bytes);
      call.publishToAll(r, bytes);
      copyBytes(b.dst + c.offset * b.elem, b.src + c.offset * b.elem, bytes);
    } else {
      copyBytes(b.dst + c.offset * b.elem, call.await(b.root, r), bytes);
      call.ack(b.root, r);
    }
  }
}

void runReduce(Call& call, const Plan& plan, const Buffers& b) {
  const int me = call.me();
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::size_t bytes = c.count * b.elem;
    const std::uint64_t r = call.nextRound();
    // The root keeps its own contribution in its half too (never published): dst may be src.
    char* h = call.beginPublish(r);
    copyBytes(h, b.src + c.offset * b.elem, bytes);
    if (me != b.root) {
      const int readers[] = {b.root};
      call.publish(r, readers, bytes);
      continue;
    }
    reduceInOrder(call, b.dst + c.offset * b.elem, c.count, b,
                  [&](int p) { return p == me ? h : call.await(p, r); });
    for (int p = 0; p < call.members(); ++p) {
      if (p != me) call.ack(p, r);
    }
  }
}

namespace {

void allreduceOneShot(Call& call, const Plan& plan, const Buffers& b) {
  const int me = call.me();
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::uint64_t r = call.nextRound();
    char* h = call.beginPublish(r);
    copyBytes(h, b.src + c.offset * b.elem, c.count * b.elem);
    call.publishToAll(r, c.count * b.elem);
    reduceInOrder(call, b.dst + c.offset * b.elem, c.count, b,
                  [&](int p) { return p == me ? h : call.await(p, r); });
    for (int p = 0; p < call.members(); ++p) {
      if (p != me) call.ack(p, r);
    }
  }
}

void allreduceTwoShot(Call& call, const Plan& plan, const Buffers& b) {
  const int n = call.members(), me = call.me();
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::uint64_t ra = call.nextRound(), rb = call.nextRound();
    char* ha = call.beginPublish(ra);
    copyBytes(ha, b.src + c.offset * b.elem, c.count * b.elem);
    call.publishToAll(ra, c.count * b.elem);
    // Reduce-scatter: this PE reduces its segment of the chunk into its other half.
    const Range mine = balancedPart(c.count, n, me);
    char* hb = call.beginPublish(rb);
    reduceInOrder(call, hb, mine.count, b, [&](int p) {
      return (p == me ? ha : call.await(p, ra)) + mine.offset * b.elem;
    });
    for (int p = 0; p < n; ++p) {
      if (p != me) call.ack(p, ra);
    }
    call.publishToAll(rb, mine.count * b.elem);
    // Allgather of the reduced segments.
    for (int p = 0; p < n; ++p) {
      const Range seg = balancedPart(c.count, n, p);
      const char* data = p == me ? hb : call.await(p, rb);
      copyBytes(b.dst + (c.offset + seg.offset) * b.elem, data, seg.count * b.elem);
      if (p != me) call.ack(p, rb);
    }
  }
}

void allreduceRing(Call& call, const Plan& plan, const Buffers& b) {
  const int n = call.members(), me = call.me();
  const int left = mod(me - 1, n), right = mod(me + 1, n);
  const int readers[] = {right};
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::uint64_t r0 = call.reserveRounds(ringRoundsPerChunk(n));
    for (int t = 0; t < ringSteps(n); ++t) {
      const Range seg = balancedPart(c.count, n, ringSegment(me, t, n));
      const std::size_t at = (c.offset + seg.offset) * b.elem, bytes = seg.count * b.elem;
      const char* in = t > 0 ? call.await(left, r0 + t - 1) : nullptr;
      if (t == ringSteps(n) - 1) {  // the last finished segment arrives: keep it
        copyBytes(b.dst + at, in, bytes);
        call.ack(left, r0 + t - 1);
        break;
      }
      char* h = call.beginPublish(r0 + t);
      if (t == 0) {
        copyBytes(h, b.src + at, bytes);
      } else if (t <= n - 1) {
        reduceHost(h, in, b.src + at, seg.count, b.type, b.op);  // add this PE's part
        if (t == n - 1) copyBytes(b.dst + at, h, bytes);         // segment complete: this PE owns it
      } else {
        copyBytes(h, in, bytes);
        copyBytes(b.dst + at, in, bytes);
      }
      if (t > 0) call.ack(left, r0 + t - 1);
      call.publish(r0 + t, readers, bytes);
    }
  }
}

// Works in dst: each exchange reduces the partner's partial with this PE's, the lower member's
// first, so both partners (and in the end every PE) hold the same bits.
void allreduceDoubling(Call& call, const Plan& plan, const Buffers& b) {
  const int n = call.members(), me = call.me();
  const int extra = doublingFolded(n), v = doublingRank(me, n);
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::size_t bytes = c.count * b.elem;
    char* acc = b.dst + c.offset * b.elem;
    copyBytes(acc, b.src + c.offset * b.elem, bytes);
    std::uint64_t r = call.reserveRounds(doublingRoundsPerChunk(n));
    auto exchange = [&](std::uint64_t round, int partner) {
      const char* h = publishTo(call, round, acc, bytes, partner);
      const char* in = call.await(partner, round);
      if (partner < me) reduceHost(acc, in, h, c.count, b.type, b.op);
      else reduceHost(acc, h, in, c.count, b.type, b.op);
      call.ack(partner, round);
    };
    if (extra > 0) {  // fold
      if (v < 0) {
        publishTo(call, r, acc, bytes, me + 1);
      } else if (me < 2 * extra) {
        const char* in = call.await(me - 1, r);
        reduceHost(acc, in, acc, c.count, b.type, b.op);
        call.ack(me - 1, r);
      }
      ++r;
    }
    for (int s = 0; s < doublingSteps(n); ++s, ++r) {
      if (v >= 0) exchange(r, doublingMember(v ^ (1 << s), n));
    }
    if (extra > 0) {  // unfold
      if (v < 0) {
        copyBytes(acc, call.await(me + 1, r), bytes);
        call.ack(me + 1, r);
      } else if (me < 2 * extra) {
        publishTo(call, r, acc, bytes, me - 1);
      }
    }
  }
}

// Reduce-scatter, then allgather, each member talking to every other directly, with up to
// depth() - 1 rounds published ahead of the one it reads (no data waits on its own publishing, so
// the wire, the reduction and the acks overlap). Segment p (balancedPart) is member p's; round
// (k, s) of the first phase carries piece k of segment me + s to that member, which folds in what
// arrives in step order (its own first), so each segment is reduced once, in one order, and sent
// as is: the same bits everywhere. The second phase publishes each reduced piece to all.
void allreducePipelined(Call& call, const Plan& plan, const Buffers& b) {
  const int n = call.members(), me = call.me();
  const std::size_t chunks = plan.chunks, ch = std::max<std::size_t>(plan.chunkElems, 1);
  const auto steps = static_cast<std::size_t>(n - 1);
  const std::size_t ahead = call.depth() - 1;
  auto piece = [&](int p, std::size_t k) {
    const Range seg = balancedPart(b.count, n, p);
    const std::size_t off = std::min(k * ch, seg.count);
    return Range{seg.offset + off, std::min(ch, seg.count - off)};
  };
  const std::size_t total = chunks * steps;
  const std::uint64_t r0 = call.reserveRounds(total);
  std::size_t published = 0;
  for (std::size_t i = 0; i < total; ++i) {
    for (; published < total && published <= i + ahead; ++published) {
      const int to = mod(me + static_cast<int>(published % steps) + 1, n);
      const Range pc = piece(to, published / steps);
      publishTo(call, r0 + published, b.src + pc.offset * b.elem, pc.count * b.elem, to);
    }
    const int s = static_cast<int>(i % steps) + 1, from = mod(me - s, n);
    const Range pc = piece(me, i / steps);
    char* acc = b.dst + pc.offset * b.elem;
    const char* in = call.await(from, r0 + i);
    reduceHost(acc, s == 1 ? b.src + pc.offset * b.elem : acc, in, pc.count, b.type, b.op);
    call.ack(from, r0 + i);
  }
  const std::uint64_t r1 = call.reserveRounds(chunks);
  published = 0;
  for (std::size_t k = 0; k < chunks; ++k) {
    for (; published < chunks && published <= k + ahead; ++published) {
      const Range pc = piece(me, published);
      char* h = call.beginPublish(r1 + published);
      copyBytes(h, b.dst + pc.offset * b.elem, pc.count * b.elem);
      call.publishToAll(r1 + published, pc.count * b.elem);
    }
    for (int p = 0; p < n; ++p) {
      if (p == me) continue;
      const Range pc = piece(p, k);
      copyBytes(b.dst + pc.offset * b.elem, call.await(p, r1 + k), pc.count * b.elem);
      call.ack(p, r1 + k);
    }
  }
}

}  // namespace

void runAllreduce(Call& call, const Plan& plan, const Buffers& b) {
  switch (plan.algo) {
    case Algo::Pipelined: return allreducePipelined(call, plan, b);
    case Algo::TwoShot: return allreduceTwoShot(call, plan, b);
    case Algo::Ring: return allreduceRing(call, plan, b);
    case Algo::Doubling: return allreduceDoubling(call, plan, b);
    default: return allreduceOneShot(call, plan, b);
  }
}

void runAllgather(Call& call, const Plan& plan, const Buffers& b) {
  const int n = call.members(), me = call.me();
  const std::size_t block = b.count * b.elem;
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::size_t at = c.offset * b.elem, bytes = c.count * b.elem;
    if (plan.algo == Algo::Ring) {
      const int left = mod(me - 1, n), right = mod(me + 1, n);
      const int readers[] = {right};
      const std::uint64_t r0 = call.reserveRounds(n - 1);
      for (int t = 0; t < n; ++t) {
        char* out = b.dst + ringGatherBlock(me, t, n) * block + at;
        const char* data = t == 0 ? b.src + at : call.await(left, r0 + t - 1);
        char* h = t < n - 1 ? call.beginPublish(r0 + t) : nullptr;
        if (h) copyBytes(h, data, bytes);
        copyBytes(out, data, bytes);
        if (t > 0) call.ack(left, r0 + t - 1);
        if (h) call.publish(r0 + t, readers, bytes);
      }
      continue;
    }
    const std::uint64_t r = call.nextRound();
    char* h = call.beginPublish(r);
    copyBytes(h, b.src + at, bytes);
    call.publishToAll(r, bytes);
    for (int p = 0; p < n; ++p) {
      copyBytes(b.dst + p * block + at, p == me ? h : call.await(p, r), bytes);
      if (p != me) call.ack(p, r);
    }
  }
}

namespace {

// Publishes chunk c of every destination block of src (reduce_scatter, alltoall): block j's
// piece sits at j * c.count in the half.
char* publishBlocks(Call& call, std::uint64_t r, const Range& c, const Buffers& b) {
  char* h = call.beginPublish(r);
  for (int j = 0; j < call.members(); ++j) {
    copyBytes(h + j * c.count * b.elem, b.src + (j * b.count + c.offset) * b.elem, c.count * b.elem);
  }
  call.publishToAll(r, call.members() * c.count * b.elem);
  return h;
}

}  // namespace

void runReduceScatter(Call& call, const Plan& plan, const Buffers& b) {
  const int me = call.me();
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::uint64_t r = call.nextRound();
    char* h = publishBlocks(call, r, c, b);
    const std::size_t mine = me * c.count * b.elem;
    reduceInOrder(call, b.dst + c.offset * b.elem, c.count, b,
                  [&](int p) { return (p == me ? h : call.await(p, r)) + mine; });
    for (int p = 0; p < call.members(); ++p) {
      if (p != me) call.ack(p, r);
    }
  }
}

void runAlltoall(Call& call, const Plan& plan, const Buffers& b) {
  const int me = call.me();
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::uint64_t r = call.nextRound();
    char* h = publishBlocks(call, r, c, b);
    const std::size_t mine = me * c.count * b.elem;
    for (int p = 0; p < call.members(); ++p) {
      const char* data = (p == me ? h : call.await(p, r)) + mine;
      copyBytes(b.dst + (p * b.count + c.offset) * b.elem, data, c.count * b.elem);
      if (p != me) call.ack(p, r);
    }
  }
}

void runGather(Call& call, const Plan& plan, const Buffers& b) {
  const int me = call.me();
  const std::size_t block = b.count * b.elem;
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::size_t at = c.offset * b.elem, bytes = c.count * b.elem;
    const std::uint64_t r = call.nextRound();
    if (me != b.root) {
      publishTo(call, r, b.src + at, bytes, b.root);
      continue;
    }
    for (int p = 0; p < call.members(); ++p) {
      if (p == me) {
        copyBytes(b.dst + p * block + at, b.src + at, bytes);
        continue;
      }
      copyBytes(b.dst + p * block + at, call.await(p, r), bytes);
      call.ack(p, r);
    }
  }
}

void runScatter(Call& call, const Plan& plan, const Buffers& b) {
  const int me = call.me();
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::size_t bytes = c.count * b.elem;
    const std::uint64_t r = call.nextRound();
    if (me == b.root) {
      publishBlocks(call, r, c, b);
      copyBytes(b.dst + c.offset * b.elem, b.src + (me * b.count + c.offset) * b.elem, bytes);
      continue;
    }
    copyBytes(b.dst + c.offset * b.elem, call.await(b.root, r) + me * bytes, bytes);
    call.ack(b.root, r);
  }
}

void runSend(Call& call, const Plan& plan, const Buffers& b, int from, int to) {
  const int me = call.me();
  const std::uint64_t r0 = call.reserveRounds(plan.chunks);
  if (me != from && me != to) return;
  for (std::size_t k = 0; k < plan.chunks; ++k) {
    const Range c = chunkOf(plan, b.count, k);
    const std::size_t at = c.offset * b.elem, bytes = c.count * b.elem;
    if (me == from) {
      publishTo(call, r0 + k, b.src + at, bytes, to);
    } else {
      copyBytes(b.dst + at, call.await(from, r0 + k), bytes);
      call.ack(from, r0 + k);
    }
  }
}

void runPairwise(Call& call, std::size_t chunkElems, const Buffers& b, const PairwiseBlocks& blocks) {
  const int n = call.members(), me = call.me();
  chunkElems = std::max<std::size_t>(chunkElems, 1);
  const std::size_t chunks = std::max<std::size_t>(ceilDiv(b.count, chunkElems), 1);
  const auto steps = static_cast<std::size_t>(n - 1);
  const std::size_t total = chunks * steps, ahead = call.depth() - 1;
  const std::uint64_t r0 = call.reserveRounds(total);
  auto chunk = [&](std::size_t k) {
    const std::size_t off = std::min(k * chunkElems, b.count);
    return Range{off, std::min(chunkElems, b.count - off)};
  };
  // Round i = (chunk i / steps, step i % steps + 1). Publishing runs up to `ahead` rounds before
  // the round read: round j waits only for the acks of round j - depth, which every member gives
  // while reading rounds before the one it waits in, so no wait closes a cycle.
  std::size_t published = 0;
  for (std::size_t i = 0; i < total; ++i) {
    for (; published < total && published <= i + ahead; ++published) {
      const int to = mod(me + static_cast<int>(published % steps) + 1, n);
      if (!blocks.carries(to)) continue;
      const Range c = chunk(published / steps);
      publishTo(call, r0 + published, b.src + (blocks.blockOf(to) * b.count + c.offset) * b.elem, c.count * b.elem, to);
    }
    if (i == 0 && blocks.meanwhile) blocks.meanwhile();
    const int from = mod(me - static_cast<int>(i % steps) - 1, n);
    if (!blocks.carries(from)) continue;
    const Range c = chunk(i / steps);
    copyBytes(b.dst + (blocks.blockOf(from) * b.count + c.offset) * b.elem, call.await(from, r0 + i), c.count * b.elem);
    call.ack(from, r0 + i);
  }
}

}  // namespace axon::coll
