// Conjugate gradient on the PEs: the problem of cg_problem.hpp, dot products reduced and halos
// moved the way --mode says.
//
//   axon run -n 4 build/examples/cg --n 128 [--iters 500] [--tol 1e-8] --mode device --check --json
//
// PE 0 prints the iterations done, the final recursive residual and the time per iteration of the
// slowest PE. --check verifies (a) on every N that the true residual ||b - A x|| / ||b|| agrees
// with the recursive one within a rounding-error bound, and (b) for N <= 64 that the gathered x
// agrees with a serial CG of the same iterations to 1e-9 (relative). --out writes x (float64,
// shape (N, N, N), z-major) from PE 0.
#include <axon/axon.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/args.hpp"
#include "../common/gather.hpp"
#include "../common/npy.hpp"
#include "cg_modes.hpp"

namespace axon::examples::cg {

const char* modeName(Mode m) {
  switch (m) {
    case Mode::Device: return "device";
    case Mode::Host: return "host";
    case Mode::Cpu: return "cpu";
  }
  return "?";
}

Mode parseMode(const std::string& name) {
  for (Mode m : {Mode::Device, Mode::Host, Mode::Cpu})
    if (name == modeName(m)) return m;
  throw std::invalid_argument("unknown --mode '" + name + "': use device, host or cpu");
}

bool modeNeedsGpu(Mode m) { return m != Mode::Cpu; }

}  // namespace axon::examples::cg

namespace {

namespace cg = axon::examples::cg;

constexpr const char* kUsage =
    "usage: cg [--n N] [--iters K] [--tol T] [--mode device|host|cpu] [--check] [--json] [--out FILE.npy]\n"
    "          [--no-graph]\n"
    "  CG on the 7-point Laplacian of an N^3 grid (default 64), b = 1, x0 = 0, z-planes split over\n"
    "  the PEs; at most K iterations (default 500), stopping once ||r||/||b|| < T (default 1e-8).\n"
    "  device: GPU kernels that allreduce the dot products themselves, halos by stream-ordered\n"
    "  put_signal; host: the same kernels with host allreduce and isend/irecv halos (the baseline);\n"
    "  cpu (default): everything on the CPU. device and host need the GPU backend.\n"
    "  --check: true residual against the recursive one, and for N <= 64 x against a serial CG.\n";

// Relative differences from the serial solve above this fail --check: the runs reduce in other
// orders, so they agree to rounding (typically 1e-14), not bit for bit.
constexpr double kSerialTolerance = 1e-9;

using axon::examples::positiveArg;

double toleranceArg(const char* text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (errno || end == text || *end || !std::isfinite(v) || v < 0)
    throw std::invalid_argument(std::string("--tol takes a number >= 0, not '") + text + "'");
  return v;
}

cg::Options parseArgs(int argc, char** argv) {
  cg::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--n") o.n = positiveArg("--n", value());
    else if (a == "--iters") o.iters = positiveArg("--iters", value());
    else if (a == "--tol") o.tol = toleranceArg(value());
    else if (a == "--mode") o.mode = cg::parseMode(value());
    else if (a == "--out") o.out = value();
    else if (a == "--check") o.check = true;
    else if (a == "--json") o.json = true;
    else if (a == "--no-graph") o.graph = false;
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else throw std::invalid_argument("unknown argument '" + a + "'");
  }
  return o;
}

void requireGpuIfNeeded(const cg::Options& o) {
  if (cg::modeNeedsGpu(o.mode) && !axon::gpuEnabled())
    throw std::runtime_error(std::string("--mode ") + cg::modeName(o.mode) +
                             " needs the GPU backend, which is off here: " + axon::gpuUnavailableReason());
}

cg::RunResult runMode(const cg::Options& o, const cg::Decomposition& d, const cg::Csr& a) {
  return o.mode == cg::Mode::Cpu ? cg::runOnCpu(o, d, a) : cg::runOnGpu(o, d, a);
}

// PE 0 receives every slab of x into the whole grid (z-major: a slab is one contiguous range).
std::vector<double> gather(const cg::Decomposition& d, const std::vector<double>& mine) {
  const std::size_t plane = d.layout.plane();
  return axon::examples::gatherSlabs(mine, static_cast<std::size_t>(d.layout.n) * plane, [&](int pe) {
    const cg::Slab s = cg::slabOf(d.layout.n, d.pes, pe);
    return std::pair<std::size_t, std::size_t>(static_cast<std::size_t>(s.first) * plane,
                                               static_cast<std::size_t>(s.planes) * plane);
  });
}

// A JSON number, or null for a value that was not measured (negative) or not computed.
std::string jsonNumber(double v, bool present = true) {
  if (!present || v < 0 || !std::isfinite(v)) return "null";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

int runProgram(const cg::Options& o) {
  const cg::Decomposition d = cg::decompose(o.n, axon::nPes(), axon::myPe());
  requireGpuIfNeeded(o);
  const cg::Csr a = cg::buildCsr(d);
  const cg::RunResult r = runMode(o, d, a);

  // The slowest PE's times (each part's maximum on its own).
  const double mine[3] = {r.seconds, r.haloSeconds, r.reduceSeconds};
  double slowest[3] = {};
  axon::allreduce(axon::Team::world(), mine, slowest, 3, axon::ReduceOp::Max);

  cg::TrueResidual tr;
  if (o.check) tr = cg::trueResidual(d, a, r.x);
  const bool serialCheck = o.check && o.n <= cg::kSerialCheckMaxN;
  std::vector<double> whole;
  if (serialCheck || !o.out.empty()) whole = gather(d, r.x);
  if (d.me != 0) return 0;

  int status = 0;
  const bool converged = cg::converged(r.rr, r.bb, o.tol);
  const double iters = static_cast<double>(std::max(r.iterations, 1L));
  const double perIter = slowest[0] / iters;
  std::string split;
  if (slowest[1] >= 0 && slowest[2] >= 0) {
    char buf[96];
    std::snprintf(buf, sizeof buf, " (halo %.2f us, allreduce %.2f us)", slowest[1] / iters * 1e6,
                  slowest[2] / iters * 1e6);
    split = buf;
  }
  std::printf("cg: mode %s, N %ld, %d PEs: %ld iterations, %s, relative residual %.3e; %.2f us per iteration "
              "(slowest PE)%s; %s\n",
              cg::modeName(o.mode), o.n, d.pes, r.iterations,
              converged ? "converged" : "not converged within --iters", r.relResidual(), perIter * 1e6,
              split.c_str(), r.detail.c_str());

  double gap = -1, gapBound = -1, serialDiff = -1;
  if (o.check) {
    gap = std::fabs(tr.relative - r.relResidual());
    gapBound = cg::residualGapBound(r.iterations, tr.xNorm, tr.bNorm);
    const bool ok = gap <= gapBound;
    std::printf("cg: checked the true residual ||b - Ax||/||b|| = %.6e against the recursive %.6e: gap %.2e, "
                "bound %.2e (10 eps (k+2) (12 ||x|| + ||b||) / ||b||): %s\n",
                tr.relative, r.relResidual(), gap, gapBound, ok ? "OK" : "WRONG");
    if (!ok) status = 1;
    if (serialCheck) {
      const cg::CgResult ref = cg::solveSerial(o.n, r.iterations);
      serialDiff = cg::maxRelativeDifference(whole, ref.x);
      const bool same = serialDiff <= kSerialTolerance;
      std::printf("cg: checked x against a serial CG of the whole grid, %ld iterations: max |x - x_serial| / "
                  "max |x_serial| = %.2e (limit %.0e): %s\n",
                  ref.iterations, serialDiff, kSerialTolerance, same ? "OK" : "WRONG");
      if (!same) status = 1;
    } else {
      std::printf("cg: serial comparison skipped: N %ld > %ld (only the residual was checked)\n", o.n,
                  cg::kSerialCheckMaxN);
    }
  }
  if (!o.out.empty())
    axon::examples::writeNpy(o.out, whole.data(), {std::size_t(o.n), std::size_t(o.n), std::size_t(o.n)});
  if (o.json)
    std::printf("{\"app\": \"cg\", \"mode\": \"%s\", \"n\": %ld, \"pes\": %d, \"iters\": %ld, \"max_iters\": %ld, "
                "\"tol\": %.3g, \"converged\": %s, \"rel_residual\": %.9g, \"sec_per_iter\": %.9g, "
                "\"halo_sec_per_iter\": %s, \"reduce_sec_per_iter\": %s, \"checked\": %s, "
                "\"true_residual\": %s, \"residual_gap\": %s, \"residual_gap_bound\": %s, "
                "\"serial_max_rel_diff\": %s, \"ok\": %s}\n",
                cg::modeName(o.mode), o.n, d.pes, r.iterations, o.iters, o.tol, converged ? "true" : "false",
                r.relResidual(), perIter, jsonNumber(slowest[1] / iters, slowest[1] >= 0).c_str(),
                jsonNumber(slowest[2] / iters, slowest[2] >= 0).c_str(), o.check ? "true" : "false",
                jsonNumber(tr.relative, o.check).c_str(), jsonNumber(gap).c_str(), jsonNumber(gapBound).c_str(),
                jsonNumber(serialDiff).c_str(), status == 0 ? "true" : "false");
  std::fflush(stdout);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  cg::Options o;
  try {
    o = parseArgs(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cg: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    axon::init();
    const int status = runProgram(o);
    axon::finalize();
    return status;
  } catch (const std::exception& e) {  // axon::Error included
    std::fprintf(stderr, "cg: error: %s\n", e.what());
    return 1;
  }
}
