// Cooperative copy: the `size` threads of a scope copy `bytes` together, thread `rank` taking every
// size-th element, so that each warp instruction touches consecutive addresses.
//
// Bandwidth over NVLink comes from the number of bytes in flight: each thread first loads
// kCopyUnroll 16-byte vectors, then stores them (spelled out: the compiler cannot prove that source
// and destination do not overlap, so it would not hoist the loads above the stores itself). With 8,
// a block of 512 threads keeps 64 KiB of loads outstanding. Measured on two H200s over NVLink
// (gpu_bench --tests device, 64 MiB to 1 GiB, the grid sweeping the buffer in 64-512 KiB chunks):
// put<Block> 364-372 GB/s, 93.6-93.9% of the copy engine; get<Block> 94.4-94.5%; puts both ways
// at once 93.8-93.9%. Unrolling 2 or 4, 256 to 1024 threads, 1 to 4 blocks per SM, streaming
// cache hints and Hopper's bulk copies (TMA) through shared memory all landed between 91% and 94%:
// the limit is the SMs' path to NVLink, not this loop. Kernels of 1024 threads need
// __launch_bounds__(1024) (64 registers a thread); with it they move as much as 512.
//
// Vectors need source and destination to share an alignment: when both are 16-byte aligned
// relative to each other (addresses equal modulo 16), a head of at most 15 bytes brings the
// destination to a 16-byte boundary, the body moves in uint4, and a tail of at most 15 bytes
// follows in 8-, 4-, 2- and 1-byte pieces. Pointers that agree only modulo 8, 4 or 2 copy in
// words of that size; others byte by byte.
#pragma once

#include "axon/device/types.hpp"

namespace axon {
namespace device {
namespace detail {

// 16-byte vectors each thread keeps in flight.
constexpr unsigned kCopyUnroll = 8;

// n elements of V; d and s are V-aligned.
template <class V, unsigned kUnroll>
AXON_DEVICE_INLINE void copyElements(V* __restrict__ d, const V* __restrict__ s, SizeT n,
                                     unsigned rank, unsigned size) {
  static_assert(kUnroll >= 1, "at least one element per thread and round");
  const SizeT step = static_cast<SizeT>(size) * kUnroll;
  SizeT base = 0;
  for (; base + step <= n; base += step) {
    V v[kUnroll];
#pragma unroll
    for (unsigned k = 0; k < kUnroll; ++k) v[k] = s[base + rank + k * static_cast<SizeT>(size)];
#pragma unroll
    for (unsigned k = 0; k < kUnroll; ++k) d[base + rank + k * static_cast<SizeT>(size)] = v[k];
  }
  // The last partial round, guarded, still with all its loads issued before its stores: a copy
  // smaller than one round (64 KiB for a block of 512) runs entirely here.
  if (base < n) {
    V v[kUnroll];
#pragma unroll
    for (unsigned k = 0; k < kUnroll; ++k) {
      const SizeT i = base + rank + k * static_cast<SizeT>(size);
      if (i < n) v[k] = s[i];
    }
#pragma unroll
    for (unsigned k = 0; k < kUnroll; ++k) {
      const SizeT i = base + rank + k * static_cast<SizeT>(size);
      if (i < n) d[i] = v[k];
    }
  }
}

template <class W>
AXON_DEVICE_INLINE void copyOne(char* d, const char* s) {
  *reinterpret_cast<W*>(d) = *reinterpret_cast<const W*>(s);
}

// One piece of w bytes (16, 8, 4, 2 or 1) in one load and one store; d and s aligned to w.
AXON_DEVICE_INLINE void copyPiece(char* d, const char* s, SizeT w) {
  switch (w) {
    case 16:
      copyOne<uint4>(d, s);
      break;
    case 8:
      copyOne<unsigned long long>(d, s);
      break;
    case 4:
      copyOne<unsigned int>(d, s);
      break;
    case 2:
      copyOne<unsigned short>(d, s);
      break;
    default:
      *d = *s;
      break;
  }
}

// Fewer than 16 bytes (a head or a tail) in the widest pieces that the destination's alignment at
// each point and the pair's relative alignment `rel` (1, 2, 4, 8 or 16) allow; piece k goes to
// the thread of rank k % size. At most 15 pieces, usually at most 4.
AXON_DEVICE_INLINE void copyPieces(char* d, const char* s, SizeT n, unsigned rel, unsigned rank,
                                   unsigned size) {
  const unsigned long long da = reinterpret_cast<unsigned long long>(d);
  SizeT o = 0;
  for (unsigned k = 0; o < n; ++k) {
    const unsigned a = static_cast<unsigned>(da + o) | rel;  // lowest set bit: alignment here
    const SizeT left = n - o;
    const unsigned w = ((a & 7u) == 0 && left >= 8)   ? 8u
                       : ((a & 3u) == 0 && left >= 4) ? 4u
                       : ((a & 1u) == 0 && left >= 2) ? 2u
                                                      : 1u;
    if (k % size == rank) copyPiece(d + o, s + o, w);
    o += w;
  }
}

// The body of a copy whose pointers agree only modulo 8, 4, 2 or 1 (user buffers at odd offsets):
// rare, so a plain loop of words of that width, which costs the caller few registers.
template <class W>
AXON_DEVICE_INLINE void copyWords(char* d, const char* s, SizeT bytes, unsigned rank,
                                  unsigned size) {
  W* dw = reinterpret_cast<W*>(d);
  const W* sw = reinterpret_cast<const W*>(s);
  const SizeT n = bytes / sizeof(W);
  for (SizeT i = rank; i < n; i += size) dw[i] = sw[i];
}

// Copies `bytes` from src to dest with the threads of one scope (this thread is `rank` of `size`).
// Returns when this thread's share is done; the caller synchronizes the scope.
//
// Everything is inline and there is one instance of the unrolled loop: a call out of line in a
// caller's loop would make the caller keep its loop state in registers the call preserves, which
// costs more registers than the whole copy (and kernels of 1024 threads have 64 each).
template <unsigned kUnroll = kCopyUnroll>
AXON_DEVICE_INLINE void copyCooperative(void* dest, const void* src, SizeT bytes, unsigned rank,
                                        unsigned size) {
  char* d = static_cast<char*>(dest);
  const char* s = static_cast<const char*>(src);
  const unsigned long long da = reinterpret_cast<unsigned long long>(d);
  const unsigned long long sa = reinterpret_cast<unsigned long long>(s);
  // One naturally aligned word of 1, 2, 4, 8 or 16 bytes (a value, a flag, a small put_signal) in
  // one load and one store: the head/body/tail arithmetic below costs a lone thread more than the
  // copy itself, about 0.14 us per put on an H200 (a device put_signal ping-pong of 8 B: 3.40
  // against 3.66 us per round trip, measured side by side).
  // (bytes & (bytes - 1)) is zero only for a power of two, and (da | sa) & (bytes - 1) only when
  // both pointers are aligned to it.
  if (bytes != 0 && bytes <= 16 && ((bytes | da | sa) & (bytes - 1)) == 0) {
    if (rank == 0) copyPiece(d, s, bytes);
    return;
  }
  // Relative alignment: the lowest set bit of the address difference, capped at 16.
  const unsigned x = static_cast<unsigned>((da ^ sa) | 16u);
  const unsigned rel = x & (~x + 1u);

  SizeT head = static_cast<SizeT>((0ull - da) & (rel - 1u));
  if (head > bytes) head = bytes;
  const SizeT body = (bytes - head) & ~static_cast<SizeT>(rel - 1u);
  const SizeT tail = bytes - head - body;
  char* bd = d + head;
  const char* bs = s + head;

  if (head != 0) copyPieces(d, s, head, rel, rank, size);
  if (rel == 16u) {
    copyElements<uint4, kUnroll>(reinterpret_cast<uint4*>(bd), reinterpret_cast<const uint4*>(bs),
                                 body / 16, rank, size);
  } else if (rel == 8u) {
    copyWords<unsigned long long>(bd, bs, body, rank, size);
  } else if (rel == 4u) {
    copyWords<unsigned int>(bd, bs, body, rank, size);
  } else if (rel == 2u) {
    copyWords<unsigned short>(bd, bs, body, rank, size);
  } else {
    copyWords<unsigned char>(bd, bs, body, rank, size);
  }
  if (tail != 0) copyPieces(bd + body, bs + body, tail, rel, rank, size);
}

}  // namespace detail
}  // namespace device
}  // namespace axon
