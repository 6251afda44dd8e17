// Jacobi on the PEs: the problem of jacobi_problem.hpp, halos exchanged the way --mode says.
//
//   axon run -n 4 build/examples/jacobi --n 1024 --iters 1000 --mode stream --out u.npy --check
//
// PE 0 gathers the interior, writes it as a float64 .npy file (--out), compares it with a serial
// solve (--check: every value must be bit-identical, whatever the mode and PE count), and prints
// the time per sweep of the slowest PE (--json: also one JSON line).
#include <axon/axon.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/args.hpp"
#include "../common/gather.hpp"
#include "../common/npy.hpp"
#include "jacobi_modes.hpp"

namespace axon::examples::jacobi {

const char* modeName(Mode m) {
  switch (m) {
    case Mode::Device: return "device";
    case Mode::Stream: return "stream";
    case Mode::TwoSided: return "twosided";
    case Mode::Staged: return "staged";
    case Mode::Host: return "host";
  }
  return "?";
}

Mode parseMode(const std::string& name) {
  for (Mode m : {Mode::Device, Mode::Stream, Mode::TwoSided, Mode::Staged, Mode::Host})
    if (name == modeName(m)) return m;
  throw std::invalid_argument("unknown --mode '" + name + "': use device, stream, twosided, staged or host");
}

bool modeNeedsGpu(Mode m) { return m == Mode::Device || m == Mode::Stream || m == Mode::Staged; }

}  // namespace axon::examples::jacobi

namespace {

namespace jac = axon::examples::jacobi;

constexpr const char* kUsage =
    "usage: jacobi [--n N] [--iters K] [--mode device|stream|twosided|staged|host] [--out FILE.npy]\n"
    "              [--check] [--json] [--no-graph]\n"
    "  N x N interior (default 1024), K sweeps (default 1000), rows split over the PEs.\n"
    "  device, stream and staged need the GPU backend; twosided computes on the GPU where there is\n"
    "  one, else on the CPU; host computes on the CPU with host put_signal.\n";

using axon::examples::positiveArg;

jac::Options parseArgs(int argc, char** argv) {
  jac::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--n") o.n = positiveArg("--n", value());
    else if (a == "--iters") o.iters = positiveArg("--iters", value());
    else if (a == "--mode") o.mode = jac::parseMode(value());
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

jac::RunResult runMode(const jac::Options& o, const jac::Decomposition& d) {
  if (jac::modeNeedsGpu(o.mode) && !axon::gpuEnabled())
    throw std::runtime_error(std::string("--mode ") + jac::modeName(o.mode) +
                             " needs the GPU backend, which is off here: " + axon::gpuUnavailableReason());
  if (o.mode == jac::Mode::Host || !axon::gpuEnabled()) return jac::runOnCpu(o, d);
#ifdef JACOBI_HAVE_CUDA
  return jac::runOnGpu(o, d);
#else
  throw std::runtime_error("this jacobi was built without CUDA; rebuild with a CUDA toolkit for the GPU modes");
#endif
}

// PE 0 receives every slab into the whole interior.
std::vector<double> gather(const jac::Decomposition& d, const std::vector<double>& mine) {
  const std::size_t n = static_cast<std::size_t>(d.layout.n);
  return axon::examples::gatherSlabs(mine, n * n, [&](int pe) {
    const jac::Slab s = jac::slabOf(d.layout.n, d.pes, pe);
    return std::pair<std::size_t, std::size_t>(static_cast<std::size_t>(s.first) * n, static_cast<std::size_t>(s.rows) * n);
  });
}

// Compares with the serial solve; returns the number of values that differ in any bit.
long compareWithSerial(const jac::Options& o, const std::vector<double>& whole, double* maxDiff) {
  return axon::examples::bitDifferences(jac::solveSerial(o.n, o.iters), whole, maxDiff);
}

}  // namespace

int main(int argc, char** argv) {
  jac::Options o;
  try {
    o = parseArgs(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jacobi: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    axon::init();
    const jac::Decomposition d = jac::decompose(o.n, axon::nPes(), axon::myPe());
    const jac::RunResult r = runMode(o, d);
    double slowest = 0;
    axon::allreduce(axon::Team::world(), &r.seconds, &slowest, 1, axon::ReduceOp::Max);
    const std::vector<double> whole = gather(d, r.interior);
    int status = 0;
    if (d.me == 0) {
      if (!o.out.empty()) axon::examples::writeNpy(o.out, whole.data(), {std::size_t(o.n), std::size_t(o.n)});
      double sum = 0;
      for (double v : whole) sum += v;
      const double perSweep = slowest / static_cast<double>(o.iters);
      std::printf("jacobi: mode %s, N %ld, %ld sweeps on %d PEs: %.2f us per sweep (slowest PE), %s; "
                  "interior sum %.9g\n",
                  jac::modeName(o.mode), o.n, o.iters, d.pes, perSweep * 1e6, r.detail.c_str(), sum);
      long wrong = -1;
      if (o.check) {
        double maxDiff = 0;
        wrong = compareWithSerial(o, whole, &maxDiff);
        std::printf("jacobi: checked against the serial solve: %s (%ld of %ld values differ, largest "
                    "difference %.3g)\n",
                    wrong == 0 ? "identical" : "WRONG", wrong, o.n * o.n, maxDiff);
        if (wrong != 0) status = 1;
      }
      if (o.json)
        std::printf("{\"app\": \"jacobi\", \"mode\": \"%s\", \"n\": %ld, \"iters\": %ld, \"pes\": %d, "
                    "\"sec_per_sweep\": %.9g, \"interior_sum\": %.17g, \"checked\": %s, \"wrong\": %ld}\n",
                    jac::modeName(o.mode), o.n, o.iters, d.pes, perSweep, sum, o.check ? "true" : "false",
                    wrong);
      std::fflush(stdout);
    }
    axon::finalize();
    return status;
  } catch (const axon::Error& e) {
    std::fprintf(stderr, "jacobi: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jacobi: %s\n", e.what());
    return 2;
  }
}
