// Ring halo exchange with put_signal: every PE sends its two boundary strips to its left and
// right neighbours each iteration, the way a 1-D stencil code exchanges halos.
//
//   axon run -n 4 build/examples/ring_halo [halo_bytes] [iterations]
//
// Halo slots are double-buffered by iteration parity: a PE writes slot i%2 of a neighbour only
// after it has received that neighbour's iteration i-1 data, which the neighbour sent after it had
// consumed slot i%2 (iteration i-2). So no extra acknowledgement is needed.
#include <axon/axon.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

// The value PE `pe` sends in element `j` of iteration `iter` towards `side` (0 left, 1 right).
double expected(int pe, long iter, std::size_t j, int side) {
  return pe * 1e6 + static_cast<double>(iter) * 10 + static_cast<double>(j % 1000) * 1e-3 + side;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    axon::init();
    const int me = axon::myPe(), n = axon::nPes();
    const std::size_t haloBytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 64 * 1024;
    const long iters = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 2000;
    const std::size_t count = haloBytes / sizeof(double);
    const int left = (me + n - 1) % n, right = (me + 1) % n;

    // halo[parity][side]: side 0 is filled by the left neighbour, side 1 by the right one. This
    // example computes on the CPU, so its buffers are on the host heap (mallocHost), which is
    // host memory on either backend; axon::malloc would give GPU memory on a GPU machine.
    auto* halo = static_cast<double*>(axon::mallocHost(2 * 2 * count * sizeof(double)));
    auto* arrived = static_cast<std::uint64_t*>(axon::mallocHost(2 * sizeof(std::uint64_t)));
    std::memset(halo, 0, 2 * 2 * count * sizeof(double));
    std::memset(arrived, 0, 2 * sizeof(std::uint64_t));
    axon::syncAll();  // no PE signals a peer before that peer has zeroed its words
    auto slot = [&](long iter, int side) { return halo + ((iter % 2) * 2 + side) * count; };
    std::vector<double> toLeft(count), toRight(count);

    long wrong = 0;
    double commSec = 0;  // time in put_signal and the wait only, not in filling and checking
    axon::barrierAll();
    auto start = std::chrono::steady_clock::now();
    for (long it = 0; it < iters; ++it) {
      for (std::size_t j = 0; j < count; ++j) {
        toLeft[j] = expected(me, it, j, 1);   // lands in the left neighbour's right-side slot
        toRight[j] = expected(me, it, j, 0);  // lands in the right neighbour's left-side slot
      }
      auto t0 = std::chrono::steady_clock::now();
      axon::putSignal(slot(it, 1), toLeft.data(), haloBytes, &arrived[it % 2], 1, axon::SignalOp::Add, left);
      axon::putSignal(slot(it, 0), toRight.data(), haloBytes, &arrived[it % 2], 1, axon::SignalOp::Add, right);
      // Two strips per iteration land on each parity's counter: 2 per use of that parity.
      axon::signalWaitUntil(&arrived[it % 2], axon::Cmp::Ge, 2 * static_cast<std::uint64_t>(it / 2 + 1));
      commSec += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (std::size_t j = 0; j < count; ++j) {
        wrong += slot(it, 0)[j] != expected(left, it, j, 0);
        wrong += slot(it, 1)[j] != expected(right, it, j, 1);
      }
    }
    double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    axon::barrierAll();

    const double bytes = 2.0 * static_cast<double>(haloBytes) * static_cast<double>(iters);
    std::printf("PE %d of %d: %ld exchanges of 2 x %zu B halos with PEs %d and %d in %.3f s; "
                "communication %.1f us per exchange, %.2f GB/s sent; %ld wrong values\n",
                me, n, iters, haloBytes, left, right, sec, commSec / static_cast<double>(iters) * 1e6,
                bytes / commSec / 1e9, wrong);
    axon::free(arrived);
    axon::free(halo);
    axon::finalize();
    return wrong == 0 ? 0 : 1;
  } catch (const axon::Error& e) {
    std::fprintf(stderr, "ring_halo: %s\n", e.what());
    return 2;
  }
}
