// The CPU modes: the sweeps on the host, halos moved by host put_signal (Host) or by isend/irecv
// (TwoSided on the host backend).
#include <axon/axon.hpp>

#include <chrono>
#include <cstdint>
#include <vector>

#include "jacobi_modes.hpp"

namespace axon::examples::jacobi {

std::vector<double> interiorOf(const double* field, const Layout& l) {
  std::vector<double> interior(static_cast<std::size_t>(l.rows * l.n));
  for (long r = 0; r < l.rows; ++r)
    std::copy_n(field + l.at(r + 1, 1), l.n, interior.data() + r * l.n);
  return interior;
}

void exchangeHalos(const Decomposition& d, std::size_t rowBytes, const double* sendFirst, const double* sendLast,
                   double* recvTop, double* recvBottom) {
  constexpr int kGoingUp = 1, kGoingDown = 2;
  std::vector<axon::Request> reqs;
  if (d.up >= 0) {
    reqs.push_back(axon::irecv(recvTop, rowBytes, d.up, kGoingDown));
    reqs.push_back(axon::isend(sendFirst, rowBytes, d.up, kGoingUp));
  }
  if (d.down >= 0) {
    reqs.push_back(axon::irecv(recvBottom, rowBytes, d.down, kGoingUp));
    reqs.push_back(axon::isend(sendLast, rowBytes, d.down, kGoingDown));
  }
  axon::waitAll(reqs);
}

namespace {

using Clock = std::chrono::steady_clock;

// Host put_signal: after sweep k, this PE's first and last rows go straight into the
// neighbours' ghost rows of the field sweep k + 1 reads, each followed by a count the neighbour
// waits on. The field a neighbour writes was last read by this PE in sweep k - 1, before this
// PE sent the rows that let the neighbour start sweep k, so no acknowledgement is needed.
RunResult runOneSided(const Options& o, const Decomposition& d) {
  const Layout& l = d.layout;
  auto* field = static_cast<double*>(axon::mallocHost(2 * l.bytes()));
  // fromAbove counts the rows the upper neighbour has put into ghost row 0, fromBelow those of
  // the lower one.
  auto* counts = static_cast<std::uint64_t*>(axon::mallocHost(2 * sizeof(std::uint64_t)));
  std::uint64_t* fromAbove = &counts[0];
  std::uint64_t* fromBelow = &counts[1];
  double* buf[2] = {field, field + l.cells()};
  initialise(buf[0], d);
  initialise(buf[1], d);
  counts[0] = counts[1] = 0;
  axon::barrierAll();  // every PE's counts are zero before anyone signals

  const auto start = Clock::now();
  for (long k = 0; k < o.iters; ++k) {
    const double* in = buf[k % 2];
    double* out = buf[(k + 1) % 2];
    if (d.up >= 0) axon::signalWaitUntil(fromAbove, axon::Cmp::Ge, static_cast<std::uint64_t>(k));
    if (d.down >= 0) axon::signalWaitUntil(fromBelow, axon::Cmp::Ge, static_cast<std::uint64_t>(k));
    sweepRows(in, out, l, 1, l.rows);
    if (d.up >= 0)  // my first row becomes the upper neighbour's bottom ghost row
      axon::putSignal(out + l.at(d.rowsOf(d.up) + 1, 0), out + l.at(1, 0), l.rowBytes(), fromBelow, 1,
                      axon::SignalOp::Add, d.up);
    if (d.down >= 0)  // my last row becomes the lower neighbour's top ghost row
      axon::putSignal(out + l.at(0, 0), out + l.at(l.rows, 0), l.rowBytes(), fromAbove, 1,
                      axon::SignalOp::Add, d.down);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RunResult r{seconds, interiorOf(buf[o.iters % 2], l), "host put_signal into symmetric host memory"};
  axon::barrierAll();  // no PE frees memory a neighbour may still be writing
  axon::free(counts);
  axon::free(field);
  return r;
}

// Two-sided: before each sweep, the boundary rows go to the neighbours and their rows come back
// into the ghost rows, as an MPI code does with MPI_Isend/MPI_Irecv and MPI_Waitall.
RunResult runTwoSided(const Options& o, const Decomposition& d) {
  const Layout& l = d.layout;
  std::vector<double> a(l.cells()), b(l.cells());
  initialise(a.data(), d);
  initialise(b.data(), d);
  double* buf[2] = {a.data(), b.data()};
  axon::barrierAll();

  const auto start = Clock::now();
  for (long k = 0; k < o.iters; ++k) {
    double* in = buf[k % 2];
    exchangeHalos(d, l.rowBytes(), in + l.at(1, 0), in + l.at(l.rows, 0), in, in + l.at(l.rows + 1, 0));
    sweepRows(in, buf[(k + 1) % 2], l, 1, l.rows);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {seconds, interiorOf(buf[o.iters % 2], l), "isend/irecv of host rows"};
}

}  // namespace

RunResult runOnCpu(const Options& o, const Decomposition& d) {
  return o.mode == Mode::Host ? runOneSided(o, d) : runTwoSided(o, d);
}

}  // namespace axon::examples::jacobi
