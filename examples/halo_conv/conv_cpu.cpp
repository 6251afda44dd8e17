// The CPU modes of halo_conv: the layers on the host, halos moved by host put_signal (host) or by
// isend/irecv (twosided on the host backend).
//
//   AXON_BACKEND=host axon run -n 3 build/examples/halo_conv --height 50 --width 37 --mode host --check
#include <axon/axon.hpp>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "conv_modes.hpp"

namespace axon::examples::conv {

void exchangeHalos(const Decomposition& d, std::size_t bytes, const float* sendTop, const float* sendBottom,
                   float* recvTop, float* recvBottom) {
  if (bytes == 0) return;
  constexpr int kGoingUp = 1, kGoingDown = 2;
  std::vector<axon::Request> reqs;
  if (d.up >= 0) {
    reqs.push_back(axon::irecv(recvTop, bytes, d.up, kGoingDown));
    reqs.push_back(axon::isend(sendTop, bytes, d.up, kGoingUp));
  }
  if (d.down >= 0) {
    reqs.push_back(axon::irecv(recvBottom, bytes, d.down, kGoingUp));
    reqs.push_back(axon::isend(sendBottom, bytes, d.down, kGoingDown));
  }
  axon::waitAll(reqs);
}

#ifndef CONV_HAVE_CUDA
RunResult runOnGpu(const Options&, const Decomposition&) {
  throw std::runtime_error("this halo_conv was built without CUDA; rebuild with a CUDA toolkit for the GPU modes");
}
#endif

namespace {

using Clock = std::chrono::steady_clock;

// Host put_signal, in the order the device mode's kernel follows: at the start of layer l, this
// PE's first and last R input rows go straight into the neighbours' ghost rows of the same field
// (the one layer l reads), each followed by a count the neighbour waits on; the rows away from
// the edges are computed while they travel, the edge rows once the neighbours' rows are in.
// Two fields suffice: a neighbour writes the ghost rows of field l % 2 again only at layer l + 2,
// after it waited for this PE's rows of layer l + 1, which this PE puts after finishing layer l.
RunResult runOneSided(const Options& o, const Decomposition& d) {
  const Layout& l = d.layout;
  const Filter f = binomialFilter(l.k);
  const int r = l.radius();
  auto* field = static_cast<float*>(axon::mallocHost(2 * l.bytes()));
  // fromAbove counts the layers whose rows the upper neighbour has put into the top ghost rows,
  // fromBelow those of the lower one.
  auto* counts = static_cast<std::uint64_t*>(axon::mallocHost(2 * sizeof(std::uint64_t)));
  std::uint64_t* fromAbove = &counts[0];
  std::uint64_t* fromBelow = &counts[1];
  float* buf[2] = {field, field + l.cells()};
  initialise(buf[0], d);
  initialise(buf[1], d);
  counts[0] = counts[1] = 0;
  const bool exchange = r > 0;
  // Where this PE's rows land: the upper neighbour's bottom ghost rows, the lower one's top ones.
  // (Every PE's rows are cols() floats long, so at() of this PE's layout addresses theirs too.)
  const std::size_t upperGhosts = d.up >= 0 ? l.at(d.rowsOf(d.up), -r) : 0;
  const std::size_t lowerGhosts = l.at(-r, -r);
  // Output rows that read no ghost row: [r, rows - r); the rest wait for the halos.
  const long innerFirst = std::min<long>(r, l.rows), innerLast = std::max<long>(innerFirst, l.rows - r);
  axon::barrierAll();  // every PE's counts are zero before anyone signals

  const auto start = Clock::now();
  for (long k = 0; k < o.layers; ++k) {
    float* in = buf[k % 2];
    float* out = buf[(k + 1) % 2];
    if (exchange && d.up >= 0)
      axon::putSignal(in + upperGhosts, in + l.at(0, -r), l.haloBytes(), fromBelow, 1, axon::SignalOp::Add, d.up);
    if (exchange && d.down >= 0)
      axon::putSignal(in + lowerGhosts, in + l.at(l.rows - r, -r), l.haloBytes(), fromAbove, 1, axon::SignalOp::Add,
                      d.down);
    convolveRows(in, out, l, f, innerFirst, innerLast);
    const auto layersIn = static_cast<std::uint64_t>(k + 1);
    if (exchange && d.up >= 0) axon::signalWaitUntil(fromAbove, axon::Cmp::Ge, layersIn);
    if (exchange && d.down >= 0) axon::signalWaitUntil(fromBelow, axon::Cmp::Ge, layersIn);
    convolveRows(in, out, l, f, 0, innerFirst);
    convolveRows(in, out, l, f, innerLast, l.rows);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  RunResult res{seconds, ownedPixels(buf[o.layers % 2], l), "host put_signal into symmetric host memory"};
  axon::barrierAll();  // no PE frees memory a neighbour may still be writing
  axon::free(counts);
  axon::free(field);
  return res;
}

// Two-sided: before each layer, the R edge rows go to the neighbours and theirs come back into
// the ghost rows, as an MPI code does with MPI_Isend/MPI_Irecv and MPI_Waitall.
RunResult runTwoSided(const Options& o, const Decomposition& d) {
  const Layout& l = d.layout;
  const Filter f = binomialFilter(l.k);
  const int r = l.radius();
  std::vector<float> a(l.cells()), b(l.cells());
  initialise(a.data(), d);
  initialise(b.data(), d);
  float* buf[2] = {a.data(), b.data()};
  axon::barrierAll();

  const auto start = Clock::now();
  for (long k = 0; k < o.layers; ++k) {
    float* in = buf[k % 2];
    exchangeHalos(d, l.haloBytes(), in + l.at(0, -r), in + l.at(l.rows - r, -r), in + l.at(-r, -r),
                  in + l.at(l.rows, -r));
    convolveRows(in, buf[(k + 1) % 2], l, f, 0, l.rows);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {seconds, ownedPixels(buf[o.layers % 2], l), "isend/irecv of host rows before each layer"};
}

}  // namespace

RunResult runOnCpu(const Options& o, const Decomposition& d) {
  return o.mode == Mode::Host ? runOneSided(o, d) : runTwoSided(o, d);
}

}  // namespace axon::examples::conv
