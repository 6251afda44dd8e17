// halo_conv on the PEs: the layered convolution of conv_problem.hpp, halos exchanged the way
// --mode says.
//
//   axon run -n 4 build/examples/halo_conv --height 4096 --width 4096 --filter 5 --layers 20
//       --mode device --out image.npy --check
//
// PE 0 gathers the image, writes it as a float32 .npy file (--out), compares it with a serial
// convolution on one PE (--check: every value must be bit-identical, whatever the mode and PE
// count), and prints the time per layer of the slowest PE (--json: also one JSON line).
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
#include "conv_modes.hpp"

namespace axon::examples::conv {

const char* modeName(Mode m) {
  switch (m) {
    case Mode::Device: return "device";
    case Mode::TwoSided: return "twosided";
    case Mode::Host: return "host";
  }
  return "?";
}

Mode parseMode(const std::string& name) {
  for (Mode m : {Mode::Device, Mode::TwoSided, Mode::Host})
    if (name == modeName(m)) return m;
  throw std::invalid_argument("unknown --mode '" + name + "': use device, twosided or host");
}

bool modeNeedsGpu(Mode m) { return m == Mode::Device; }

}  // namespace axon::examples::conv

namespace {

namespace cv = axon::examples::conv;

// --check convolves the whole image on one CPU thread of PE 0 (about 1 to 3 ns a multiply-add),
// so it is refused above this many multiply-adds (H * W * K * K * L), about a minute at most.
constexpr double kCheckWork = 2e10;

constexpr const char* kUsage =
    "usage: halo_conv [--height H] [--width W] [--filter K] [--layers L] [--mode device|twosided|host]\n"
    "                 [--out FILE.npy] [--check] [--json] [--no-graph]\n"
    "  an H x W float32 image (default 8192 x 8192), L layers (default 100) of a K x K binomial\n"
    "  filter (K odd, 1 to 15, default 5) with zero padding; rows split over the PEs.\n"
    "  device needs the GPU backend (the default there); twosided computes on the GPU where there\n"
    "  is one, else on the CPU; host computes on the CPU with host put_signal (the default on the\n"
    "  host backend). --check compares with a serial convolution (up to 2e10 multiply-adds).\n";

using axon::examples::positiveArg;

cv::Options parseArgs(int argc, char** argv) {
  cv::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--height") o.height = positiveArg("--height", value());
    else if (a == "--width") o.width = positiveArg("--width", value());
    else if (a == "--filter") {
      const long k = positiveArg("--filter", value());
      cv::checkFilterSize(k);
      o.filter = static_cast<int>(k);
    } else if (a == "--layers") o.layers = positiveArg("--layers", value());
    else if (a == "--mode") {
      o.mode = cv::parseMode(value());
      o.modeGiven = true;
    } else if (a == "--out") o.out = value();
    else if (a == "--check") o.check = true;
    else if (a == "--json") o.json = true;
    else if (a == "--no-graph") o.graph = false;
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else throw std::invalid_argument("unknown argument '" + a + "'");
  }
  const double work = static_cast<double>(o.height) * o.width * o.filter * o.filter * o.layers;
  if (o.check && work > kCheckWork) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "--check would convolve %.3g multiply-adds on one CPU thread, more than the %.0e it allows: "
                  "check a smaller image or fewer layers",
                  work, kCheckWork);
    throw std::invalid_argument(text);
  }
  return o;
}

cv::RunResult runMode(const cv::Options& o, const cv::Decomposition& d) {
  if (cv::modeNeedsGpu(o.mode) && !axon::gpuEnabled())
    throw std::runtime_error(std::string("--mode ") + cv::modeName(o.mode) +
                             " needs the GPU backend, which is off here: " + axon::gpuUnavailableReason());
  if (o.mode == cv::Mode::Host || !axon::gpuEnabled()) return cv::runOnCpu(o, d);
  return cv::runOnGpu(o, d);
}

// PE 0 receives every slab into the whole image.
std::vector<float> gather(const cv::Decomposition& d, const std::vector<float>& mine) {
  const std::size_t w = static_cast<std::size_t>(d.layout.width);
  return axon::examples::gatherSlabs(mine, static_cast<std::size_t>(d.layout.height) * w, [&](int pe) {
    const cv::Slab s = cv::slabOf(d.layout.height, d.pes, pe);
    return std::pair<std::size_t, std::size_t>(static_cast<std::size_t>(s.first) * w, static_cast<std::size_t>(s.rows) * w);
  });
}

// Compares with the serial convolution; returns the number of values that differ in any bit.
long compareWithSerial(const cv::Options& o, const std::vector<float>& whole, double* maxDiff) {
  return axon::examples::bitDifferences(cv::convolveSerial(o.height, o.width, o.filter, o.layers), whole, maxDiff);
}

}  // namespace

int main(int argc, char** argv) {
  cv::Options o;
  try {
    o = parseArgs(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "halo_conv: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    axon::init();
    if (!o.modeGiven) o.mode = axon::gpuEnabled() ? cv::Mode::Device : cv::Mode::Host;
    const cv::Decomposition d = cv::decompose(o.height, o.width, o.filter, axon::nPes(), axon::myPe());
    const cv::RunResult r = runMode(o, d);
    double slowest = 0;
    axon::allreduce(axon::Team::world(), &r.seconds, &slowest, 1, axon::ReduceOp::Max);
    const std::vector<float> whole = gather(d, r.pixels);
    int status = 0;
    if (d.me == 0) {
      const std::size_t h = static_cast<std::size_t>(o.height), w = static_cast<std::size_t>(o.width);
      if (!o.out.empty()) axon::examples::writeNpy(o.out, whole.data(), {h, w});
      double sum = 0;
      for (float v : whole) sum += v;
      const double perLayer = slowest / static_cast<double>(o.layers);
      const double pixelsPerSec = static_cast<double>(h * w) / perLayer;
      std::printf("halo_conv: mode %s, %ld x %ld image, %dx%d filter, %ld layers on %d PEs: %.2f us per layer "
                  "(slowest PE), %.3g pixels/s; %s; image sum %.9g\n",
                  cv::modeName(o.mode), o.height, o.width, o.filter, o.filter, o.layers, d.pes, perLayer * 1e6,
                  pixelsPerSec, r.detail.c_str(), sum);
      long wrong = -1;
      if (o.check) {
        double maxDiff = 0;
        wrong = compareWithSerial(o, whole, &maxDiff);
        std::printf("halo_conv: checked against the serial convolution on one PE: %s (%ld of %ld values differ, "
                    "largest difference %.3g)\n",
                    wrong == 0 ? "identical" : "WRONG", wrong, o.height * o.width, maxDiff);
        if (wrong != 0) status = 1;
      }
      if (o.json)
        std::printf("{\"app\": \"halo_conv\", \"mode\": \"%s\", \"height\": %ld, \"width\": %ld, \"filter\": %d, "
                    "\"layers\": %ld, \"pes\": %d, \"sec_per_layer\": %.9g, \"pixels_per_sec\": %.9g, "
                    "\"image_sum\": %.17g, \"checked\": %s, \"wrong\": %ld}\n",
                    cv::modeName(o.mode), o.height, o.width, o.filter, o.layers, d.pes, perLayer, pixelsPerSec, sum,
                    o.check ? "true" : "false", wrong);
      std::fflush(stdout);
    }
    axon::finalize();
    return status;
  } catch (const std::exception& e) {  // axon::Error included
    std::fprintf(stderr, "halo_conv: error: %s\n", e.what());
    return 1;
  }
}
