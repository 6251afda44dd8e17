// The CPU mode: CG on the host, ghost planes moved by isend/irecv and dot products reduced by the
// blocking host allreduce; and the residual check every mode shares.
//
//   AXON_BACKEND=host axon run -n 3 build/examples/cg --n 20 --mode cpu --check
#include <axon/axon.hpp>

#include <chrono>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "cg_modes.hpp"

namespace axon::examples::cg {

void exchangePlanes(const Decomposition& d, double* v) {
  const Layout& l = d.layout;
  constexpr int kGoingUp = 1, kGoingDown = 2;
  std::vector<axon::Request> reqs;
  if (d.below >= 0) {
    reqs.push_back(axon::irecv(v + l.ghostBelow(), l.planeBytes(), d.below, kGoingUp));
    reqs.push_back(axon::isend(v + l.firstOwn(), l.planeBytes(), d.below, kGoingDown));
  }
  if (d.above >= 0) {
    reqs.push_back(axon::irecv(v + l.ghostAbove(), l.planeBytes(), d.above, kGoingDown));
    reqs.push_back(axon::isend(v + l.lastOwn(), l.planeBytes(), d.above, kGoingUp));
  }
  axon::waitAll(reqs);
}

namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace

double allSum(double v) {
  double sum = 0;
  axon::allreduce(axon::Team::world(), &v, &sum, 1, axon::ReduceOp::Sum);
  return sum;
}

RunResult runOnCpu(const Options& o, const Decomposition& d, const Csr& a) {
  RunResult r;
  r.haloSeconds = r.reduceSeconds = 0;
  auto exchange = [&](double* p) {
    const auto t = Clock::now();
    exchangePlanes(d, p);
    r.haloSeconds += since(t);
  };
  auto sum = [&](double v) {
    const auto t = Clock::now();
    const double s = allSum(v);
    r.reduceSeconds += since(t);
    return s;
  };
  CgSolver cg(a, d.layout, allSum);  // the set-up and the starting r.r, outside the clock
  axon::barrierAll();
  const auto start = Clock::now();
  cg.run(o.iters, o.tol, exchange, sum);
  r.seconds = since(start);
  CgResult res = cg.take();
  r.iterations = res.iterations;
  r.rr = res.rr;
  r.bb = res.bb;
  r.x = std::move(res.x);
  r.detail = "CPU, isend/irecv of host planes, host allreduce";
  return r;
}

TrueResidual trueResidual(const Decomposition& d, const Csr& a, const std::vector<double>& x) {
  const Layout& l = d.layout;
  std::vector<double> v(l.cells(), 0.0), ax(l.rows());
  std::copy(x.begin(), x.end(), v.begin() + static_cast<std::ptrdiff_t>(l.firstOwn()));
  exchangePlanes(d, v.data());
  spmv(a, v.data(), ax.data());
  double local[3] = {0, 0, static_cast<double>(l.rows())};  // ||b - A x||^2, ||x||^2, ||b||^2
  for (std::size_t i = 0; i < l.rows(); ++i) {
    const double ri = 1.0 - ax[i];
    local[0] += ri * ri;
    local[1] += x[i] * x[i];
  }
  double global[3] = {};
  axon::allreduce(axon::Team::world(), local, global, 3, axon::ReduceOp::Sum);
  const double bNorm = std::sqrt(global[2]);
  return {std::sqrt(global[0]) / bNorm, std::sqrt(global[1]), bNorm};
}

#ifndef CG_HAVE_CUDA
RunResult runOnGpu(const Options&, const Decomposition&, const Csr&) {
  throw std::runtime_error("this cg was built without CUDA; rebuild with a CUDA toolkit for --mode device and host");
}
#endif

}  // namespace axon::examples::cg
