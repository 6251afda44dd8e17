// The streaming broadcast of reference 002: a source on PE 0 sends frames back to back to every
// other PE, which checks each one; every transport runs in turn in the same job, and PE 0 prints
// their sustained frame rates and per-frame latencies side by side.
//
//   axon run -n 4 build/examples/frame_broadcast --frame-bytes 16M --frames 200 --source gpu
//
// Latency is a receiver's realtime clock when it has checked the frame minus the stamp the source
// wrote into the frame's header when it took it: PEs on one host share that clock; across real
// nodes it needs the clocks synchronized (PTP or NTP), which emulated nodes share.
#include <axon/axon.hpp>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "../common/args.hpp"
#include "frames_run.hpp"

namespace {

namespace fr = axon::examples::frames;
using axon::examples::byteSizeArg;
using axon::examples::positiveArg;

constexpr const char* kUsage =
    "usage: frame_broadcast [--frame-bytes B] [--frames F] [--warmup W] [--source host|gpu]\n"
    "                       [--via axon,twosided,nccl] [--nccl LIB] [--json]\n"
    "  PE 0 broadcasts F frames of B bytes (default 1M; K, M and G suffixes) after W warm-up frames\n"
    "  (defaults 200 and 10) to every other PE, which checks every word. --source host: a camera's\n"
    "  ring of pinned frames; gpu: a kernel makes each frame (GPU backend). --via: the transports, in\n"
    "  order (default: axon, twosided and, on GPUs, nccl where NCCL can run). --nccl: the NCCL library\n"
    "  (default libnccl.so.2).\n";

std::vector<fr::Transport> parseVia(const std::string& list) {
  std::vector<fr::Transport> out;
  std::size_t at = 0;
  while (at <= list.size()) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    const std::string name = list.substr(at, comma - at);
    bool known = false;
    for (fr::Transport t : {fr::Transport::Axon, fr::Transport::TwoSided, fr::Transport::Nccl})
      if (name == fr::transportName(t)) {
        out.push_back(t);
        known = true;
      }
    if (!known) throw std::invalid_argument("unknown transport '" + name + "' in --via: use axon, twosided or nccl");
    at = comma + 1;
  }
  return out;
}

fr::Options parseArgs(int argc, char** argv) {
  fr::Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--frame-bytes") o.frameBytes = byteSizeArg("--frame-bytes", value());
    else if (a == "--frames") o.frames = positiveArg("--frames", value());
    else if (a == "--warmup") o.warmup = positiveArg("--warmup", value());
    else if (a == "--source") {
      const std::string s = value();
      if (s == "host") o.source = fr::Source::Host;
      else if (s == "gpu") o.source = fr::Source::Gpu;
      else throw std::invalid_argument("unknown --source '" + s + "': use host or gpu");
    } else if (a == "--via") o.transports = parseVia(value());
    else if (a == "--nccl") o.ncclLibrary = value();
    else if (a == "--json") o.json = true;
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else throw std::invalid_argument("unknown argument '" + a + "'");
  }
  const std::string sizeProblem = fr::frameSizeProblem(o.frameBytes);
  if (!sizeProblem.empty()) throw std::invalid_argument(sizeProblem);
  return o;
}

std::string sizeText(long bytes) {
  if (bytes % (1L << 20) == 0) return std::to_string(bytes >> 20) + " MiB";
  if (bytes % (1L << 10) == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

struct Row {
  fr::Transport transport;
  std::string detail;
  fr::RunStats stats;
};

// The transports to run: those asked for (NCCL refused with its reason), or every one available.
std::vector<fr::Transport> chooseTransports(const fr::Options& o, std::string* skipped) {
  const bool gpu = axon::gpuEnabled();
  if (!o.transports.empty()) {
    for (fr::Transport t : o.transports)
      if (t == fr::Transport::Nccl) {
        const std::string why = gpu ? fr::ncclRefusal(o) : "NCCL moves GPU frames only: it needs the GPU backend";
        if (!why.empty()) throw std::runtime_error("--via nccl: " + why);
      }
    return o.transports;
  }
  std::vector<fr::Transport> all = {fr::Transport::Axon, fr::Transport::TwoSided};
  if (gpu) {
    const std::string why = fr::ncclRefusal(o);
    if (why.empty()) all.push_back(fr::Transport::Nccl);
    else *skipped = "nccl: not run: " + why;
  }
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  fr::Options o;
  try {
    o = parseArgs(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "frame_broadcast: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    axon::init();
    if (axon::nPes() < 2) throw std::runtime_error("the source needs at least one other PE to send to: run on 2 or more PEs");
    if (o.source == fr::Source::Gpu && !axon::gpuEnabled())
      throw std::runtime_error(std::string("--source gpu needs the GPU backend, which is off here: ") +
                               axon::gpuUnavailableReason());
    const bool me0 = axon::myPe() == 0;
    std::string skipped;
    const std::vector<fr::Transport> transports = chooseTransports(o, &skipped);
    std::vector<Row> rows;
    for (fr::Transport t : transports) {
      auto path = axon::gpuEnabled() ? fr::makeGpuPath(t, o) : fr::makeCpuPath(t, o);
      rows.push_back({t, path->detail(), fr::runFrames(*path, o)});
    }
    int status = 0;
    if (me0) {
      std::printf("frame_broadcast: %s frames from a %s source on PE 0 to %d other PEs, %ld frames after %ld "
                  "warm-up, each transport in turn\n",
                  sizeText(o.frameBytes).c_str(), fr::sourceName(o.source), axon::nPes() - 1, o.frames, o.warmup);
      double baselineFps = 0;
      for (const Row& r : rows)
        if (r.transport == fr::Transport::TwoSided) baselineFps = o.frames / r.stats.seconds;
      std::printf("| transport | frames/s | GB/s to each PE | latency p50 (us) | p99 (us) | max (us) | "
                  "frames/s vs twosided | how |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
      std::uint64_t bad = 0;
      for (const Row& r : rows) {
        const double fps = o.frames / r.stats.seconds;
        char ratio[32] = "-";
        if (baselineFps > 0) std::snprintf(ratio, sizeof(ratio), "%.2f", fps / baselineFps);
        std::printf("| %s | %.1f | %.2f | %.1f | %.1f | %.1f | %s | %s |\n", fr::transportName(r.transport), fps,
                    fps * static_cast<double>(o.frameBytes) / 1e9, r.stats.latencyP50Us, r.stats.latencyP99Us,
                    r.stats.latencyMaxUs, ratio, r.detail.c_str());
        bad += r.stats.badFrames;
      }
      if (!skipped.empty()) std::printf("frame_broadcast: %s\n", skipped.c_str());
      const long checked = static_cast<long>(rows.size()) * (o.frames + o.warmup) * (axon::nPes() - 1);
      std::printf("frame_broadcast: every word of every frame checked on every receiver: %s (%llu of %ld "
                  "frames wrong)\n",
                  bad == 0 ? "all correct" : "WRONG", static_cast<unsigned long long>(bad), checked);
      if (o.json)
        for (const Row& r : rows)
          std::printf("{\"app\": \"frame_broadcast\", \"transport\": \"%s\", \"source\": \"%s\", \"frame_bytes\": %ld, "
                      "\"frames\": %ld, \"pes\": %d, \"fps\": %.6g, \"latency_p50_us\": %.6g, \"latency_p99_us\": "
                      "%.6g, \"latency_max_us\": %.6g, \"bad_frames\": %llu}\n",
                      fr::transportName(r.transport), fr::sourceName(o.source), o.frameBytes, o.frames, axon::nPes(),
                      o.frames / r.stats.seconds, r.stats.latencyP50Us, r.stats.latencyP99Us, r.stats.latencyMaxUs,
                      static_cast<unsigned long long>(r.stats.badFrames));
      std::fflush(stdout);
      if (bad != 0) status = 1;
    } else {
      for (const Row& r : rows)
        if (r.stats.badFrames != 0) status = 1;
    }
    axon::finalize();
    return status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "[%d] frame_broadcast: %s\n", axon::isInitialized() ? axon::myPe() : -1, e.what());
    return 2;
  }
}
