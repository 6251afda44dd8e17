// The in-situ workflow of reference 004: a simulation puts three variables per step into the
// staging space; an analysis with another decomposition and PE count gets them and computes
// their statistics; the simulation computes the same statistics in situ, and the analysis checks
// its results against them.
//
//   axon space serve --mem 1G --contact-file space.json &   # the address and the key, mode 0600
//   AXON_SPACE_FILE=space.json axon run -n 6 build/examples/insitu --sim-pes 4 --grid 128 --steps 20
//
// One job: the first --sim-pes PEs simulate (slabs along x), the others analyse (slabs along y).
// The simulation runs at most --keep steps ahead of the analysis (the space keeps that many
// versions), so no version is dropped unread. GPU data where the GPU backend is on, else host
// memory. --gpu-path host-staged runs the baseline of reference 004 (boxes through host memory).
#include <axon/axon.hpp>
#include <axon/space.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "../common/args.hpp"
#include "insitu_slab.hpp"

namespace {

namespace is = axon::examples::insitu;
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr const char* kUsage =
    "usage: insitu [--grid N | --grid NX NY NZ] [--steps S] [--sim-pes P] [--bins B] [--keep K]\n"
    "              [--gpu-path direct|host-staged] [--name NAME] [--json]\n"
    "  defaults: --grid 64, --steps 20, --sim-pes half the PEs, --bins 16, --keep 3, --gpu-path direct.\n"
    "  The variables are NAME.temperature, NAME.change, NAME.square (--name, default insitu): runs\n"
    "  on one space with other grids need other names. The staging space is found through\n"
    "  AXON_SPACE_ADDR (with its key in AXON_SPACE_KEY) or AXON_SPACE_FILE (the server's contact file).\n";

struct Options {
  long grid[3] = {64, 64, 64};
  long steps = 20;
  int simPes = 0;  // 0: half
  int bins = 16;
  int keep = 3;
  axon::space::GpuPath gpuPath = axon::space::GpuPath::Direct;
  bool json = false;
  std::string name = "insitu";  // the variables are NAME.temperature, NAME.change, ...
  std::string variable(int v) const { return name + "." + axon::examples::insitu::variableName(v); }
  std::string statsVariable() const { return name + ".in_situ_stats"; }
};

using axon::examples::positiveArg;

Options parseArgs(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    if (a == "--grid") {
      o.grid[0] = o.grid[1] = o.grid[2] = positiveArg(a, value());
      if (i + 1 < argc && argv[i + 1][0] != '-') {  // NX NY NZ
        if (i + 2 >= argc || argv[i + 2][0] == '-') throw std::invalid_argument("--grid takes N or NX NY NZ");
        o.grid[1] = positiveArg(a, argv[++i]);
        o.grid[2] = positiveArg(a, argv[++i]);
      }
    } else if (a == "--steps") o.steps = positiveArg(a, value());
    else if (a == "--sim-pes") o.simPes = static_cast<int>(positiveArg(a, value()));
    else if (a == "--bins") {
      o.bins = static_cast<int>(positiveArg(a, value()));
      if (o.bins > 1024) throw std::invalid_argument("--bins takes at most 1024 bins");
    } else if (a == "--keep") o.keep = static_cast<int>(std::min(positiveArg(a, value()), 1000L));
    else if (a == "--gpu-path") {
      const std::string p = value();
      if (p == "direct") o.gpuPath = axon::space::GpuPath::Direct;
      else if (p == "host-staged") o.gpuPath = axon::space::GpuPath::HostStaged;
      else throw std::invalid_argument("unknown --gpu-path '" + p + "': use direct or host-staged");
    } else if (a == "--name") o.name = value();
    else if (a == "--json") o.json = true;
    else if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else throw std::invalid_argument("unknown argument '" + a + "'");
  }
  return o;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The statistics of one variable over a team: min, max and sum reduced, histograms added.
is::Summary reduceOver(const axon::Team& team, const is::Summary& mine) {
  is::Summary all = mine;
  axon::allreduce(team, &mine.min, &all.min, 1, axon::ReduceOp::Min);
  axon::allreduce(team, &mine.max, &all.max, 1, axon::ReduceOp::Max);
  axon::allreduce(team, &mine.sum, &all.sum, 1, axon::ReduceOp::Sum);
  axon::allreduce(team, &mine.cells, &all.cells, 1, axon::DataType::Uint64, axon::ReduceOp::Sum);
  axon::allreduce(team, mine.hist.data(), all.hist.data(), mine.hist.size(), axon::DataType::Uint64,
                  axon::ReduceOp::Sum);
  return all;
}

// The in-situ statistics travel through the space too: one row per variable of
// [min, max, sum, cells, histogram...] (counts are exact in float64 up to 2^53).
std::vector<double> encode(const std::vector<is::Summary>& all) {
  std::vector<double> rows;
  for (const is::Summary& s : all) {
    rows.insert(rows.end(), {s.min, s.max, s.sum, static_cast<double>(s.cells)});
    for (std::uint64_t h : s.hist) rows.push_back(static_cast<double>(h));
  }
  return rows;
}
is::Summary decode(const std::vector<double>& rows, int v, int bins) {
  const double* r = rows.data() + static_cast<std::size_t>(v) * (4 + bins);
  is::Summary s{r[0], r[1], r[2], static_cast<std::uint64_t>(r[3]), {}};
  for (int b = 0; b < bins; ++b) s.hist.push_back(static_cast<std::uint64_t>(r[4 + b]));
  return s;
}

struct RoleTimes {
  std::string path;             // how the first variable's put or get travelled, in words
  std::vector<double> perStep;  // put (simulation) or get (analysis) time of the step's three variables
  double total = 0;             // the whole loop
  long mismatches = 0;          // analysis: variables whose statistics differ from the in-situ ones
};

constexpr int kGhostUp = 1, kGhostDown = 2;

// Fills the ghost planes of the slab from the neighbouring simulation PEs (two-sided, GPU or host
// memory alike).
void exchangeGhosts(is::Slab& s, const axon::Team& team) {
  const int me = team.myPe(), n = team.nPes();
  const std::size_t bytes = s.planeCells() * sizeof(double);
  std::vector<axon::Request> reqs;
  if (me > 0) {
    reqs.push_back(axon::irecv(s.cur, bytes, me - 1, kGhostDown, team));
    reqs.push_back(axon::isend(s.cur + s.planeCells(), bytes, me - 1, kGhostUp, team));
  }
  if (me + 1 < n) {
    reqs.push_back(axon::irecv(s.cur + (s.nx + 1) * s.planeCells(), bytes, me + 1, kGhostUp, team));
    reqs.push_back(axon::isend(s.cur + s.nx * s.planeCells(), bytes, me + 1, kGhostDown, team));
  }
  axon::waitAll(reqs);
}

RoleTimes simulate(const Options& o, const axon::Team& team, axon::space::Client& space, std::int64_t base,
                   std::uint64_t* analysed, bool onGpu) {
  const is::Share share = is::shareOf(o.grid[0], team.nPes(), team.myPe());
  is::Slab slab = is::makeSlab(share.first, share.count, o.grid[1], o.grid[2], onGpu);
  RoleTimes t;
  const auto start = Clock::now();
  for (long step = 0; step < o.steps; ++step) {
    // The space drops a version once o.keep newer ones are complete, so completing this step's
    // drops step - keep: start the step only once the analysis is done with that one.
    if (step >= o.keep)
      axon::signalWaitUntil(analysed, axon::Cmp::Ge, static_cast<std::uint64_t>(step - o.keep + 1));
    exchangeGhosts(slab, team);
    is::stepSlab(slab);
    const auto put = Clock::now();
    for (int v = 0; v < is::kVariables; ++v) {
      space.put(o.variable(v), base + step, {share.first, 0, 0}, {share.count, o.grid[1], o.grid[2]},
                slab.variable(v));
      if (t.path.empty()) t.path = space.stats().client.lastPath;
    }
    t.perStep.push_back(since(put));
    // The analysis inside the simulation: the reference the staged analysis is checked against.
    std::vector<is::Summary> inSitu;
    for (int v = 0; v < is::kVariables; ++v)
      inSitu.push_back(reduceOver(team, is::summariseValues(slab.variable(v), slab.cells(), v, o.bins, onGpu)));
    if (team.myPe() == 0) {
      const std::vector<double> rows = encode(inSitu);
      space.put(o.statsVariable(), base + step, {0, 0}, {is::kVariables, 4 + o.bins}, rows.data());
    }
  }
  t.total = since(start);
  is::freeSlab(slab);
  return t;
}

RoleTimes analyse(const Options& o, const axon::Team& team, axon::space::Client& space, std::int64_t base,
                  std::uint64_t* analysed, int simPes, bool onGpu) {
  const is::Share share = is::shareOf(o.grid[1], team.nPes(), team.myPe());
  const std::size_t cells = static_cast<std::size_t>(o.grid[0] * share.count * o.grid[2]);
  double* box = is::allocateValues(cells, onGpu);
  RoleTimes t;
  const auto start = Clock::now();
  for (long step = 0; step < o.steps; ++step) {
    std::vector<is::Summary> mine;
    double getSec = 0;
    for (int v = 0; v < is::kVariables; ++v) {
      const auto got = Clock::now();
      space.get(o.variable(v), base + step, {0, share.first, 0},
                {o.grid[0], share.first + share.count, o.grid[2]}, box, cells * sizeof(double));
      getSec += since(got);
      if (t.path.empty()) t.path = space.stats().client.lastPath;
      mine.push_back(is::summariseValues(box, cells, v, o.bins, onGpu));
      space.release(o.variable(v), base + step);
    }
    t.perStep.push_back(getSec);
    std::vector<is::Summary> all;
    for (int v = 0; v < is::kVariables; ++v) all.push_back(reduceOver(team, mine[v]));
    if (team.myPe() == 0) {
      std::vector<double> rows(static_cast<std::size_t>(is::kVariables) * (4 + o.bins));
      space.get(o.statsVariable(), base + step, {0, 0}, {is::kVariables, 4 + o.bins}, rows.data(),
                rows.size() * sizeof(double));
      space.release(o.statsVariable(), base + step);
      for (int v = 0; v < is::kVariables; ++v) {
        const std::string diff = is::difference(all[v], decode(rows, v, o.bins));
        if (diff.empty()) continue;
        ++t.mismatches;
        std::fprintf(stderr, "insitu: step %ld, %s: the staged analysis differs from the in-situ one: %s\n", step,
                     is::variableName(v), diff.c_str());
      }
      // Every analysis PE is past this step (the reductions above): let the simulation go on.
      for (int pe = 0; pe < simPes; ++pe) axon::signalOp(analysed, 1, axon::SignalOp::Add, pe);
    }
  }
  t.total = since(start);
  is::freeValues(box, onGpu);
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parseArgs(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "insitu: %s\n%s", e.what(), kUsage);
    return 2;
  }
  try {
    axon::init();
    const int me = axon::myPe(), n = axon::nPes();
    const int simPes = o.simPes ? o.simPes : n / 2;
    if (n < 2 || simPes < 1 || simPes >= n)
      throw std::invalid_argument("the workflow needs simulation and analysis PEs: --sim-pes " +
                                  std::to_string(simPes) + " of " + std::to_string(n) + " PEs leaves none for one");
    if (o.grid[0] < simPes || o.grid[1] < n - simPes)
      throw std::invalid_argument("the grid is too small for the PEs: every PE needs at least one plane");
    const bool isSim = me < simPes;
    const axon::Team team = axon::Team::world().split(isSim ? 0 : 1, me);
    const bool onGpu = axon::gpuEnabled();

    auto* analysed = static_cast<std::uint64_t*>(axon::mallocHost(sizeof(std::uint64_t)));
    *analysed = 0;
    axon::space::ConnectOptions co;
    co.gpuPath = o.gpuPath;
    axon::space::Client space(co);
    const axon::space::Index shape{o.grid[0], o.grid[1], o.grid[2]};
    for (int v = 0; v < is::kVariables; ++v) space.define(o.variable(v), shape, axon::DataType::Float64, o.keep);
    space.define(o.statsVariable(), {is::kVariables, 4 + o.bins}, axon::DataType::Float64, o.keep);
    // Versions continue from the clock (microseconds), so that another run on the same servers
    // pushes this one's versions out instead of colliding with them. PE 0's clock for everyone.
    std::int64_t base = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    axon::broadcast(axon::Team::world(), &base, &base, 1, axon::DataType::Int64, 0);
    axon::barrierAll();  // the counters are zero and the variables defined before anyone uses them

    const RoleTimes t = isSim ? simulate(o, team, space, base, analysed, onGpu)
                              : analyse(o, team, space, base, analysed, simPes, onGpu);
    // [sim put p50, sim total, analysis get p50, analysis total, mismatches]: the slowest PE's.
    double mine[5] = {0, 0, 0, 0, 0}, worst[5];
    (isSim ? mine[0] : mine[2]) = median(t.perStep);
    (isSim ? mine[1] : mine[3]) = t.total;
    mine[4] = static_cast<double>(t.mismatches);
    axon::allreduce(axon::Team::world(), mine, worst, 5, axon::ReduceOp::Max);
    // The paths the simulation's and the analysis's first PEs took.
    std::string putPath = t.path, getPath;
    if (me == 0) {
      char text[256] = {};
      axon::recv(text, sizeof(text) - 1, simPes, 7);
      getPath = text;
    } else if (me == simPes) {
      axon::send(t.path.c_str(), std::min<std::size_t>(t.path.size(), 255), 0, 7);
    }
    space.close();
    if (me == 0) {
      const char* path = o.gpuPath == axon::space::GpuPath::Direct ? "direct" : "host-staged";
      const double mib = static_cast<double>(o.grid[0] * o.grid[1] * o.grid[2]) * 8 / (1 << 20);
      std::printf("insitu: %ld steps of a %ldx%ldx%ld grid (%.1f MiB a variable, %s data, gpu path %s): %d simulation "
                  "PEs (x slabs), %d analysis PEs (y slabs)\n",
                  o.steps, o.grid[0], o.grid[1], o.grid[2], mib, onGpu ? "GPU" : "host", path, simPes, n - simPes);
      std::printf("insitu: put of 3 variables %.3f ms a step (p50, slowest PE), get %.3f ms; simulation %.3f s, "
                  "analysis %.3f s in all\n",
                  worst[0] * 1e3, worst[2] * 1e3, worst[1], worst[3]);
      std::printf("insitu: puts took: %s; gets took: %s\n", putPath.c_str(), getPath.c_str());
      std::printf("insitu: checked min, max, mean and a %d-bin histogram of %ld variables against the in-situ "
                  "analysis: %s\n",
                  o.bins, 3 * o.steps, worst[4] == 0 ? "all agree" : "MISMATCHES (listed above)");
      if (o.json)
        std::printf("{\"app\": \"insitu\", \"gpu_path\": \"%s\", \"grid\": [%ld, %ld, %ld], \"steps\": %ld, "
                    "\"sim_pes\": %d, \"analysis_pes\": %d, \"gpu\": %s, \"put_ms_p50\": %.6g, \"get_ms_p50\": %.6g, "
                    "\"sim_total_s\": %.6g, \"analysis_total_s\": %.6g, \"mismatches\": %.0f}\n",
                    path, o.grid[0], o.grid[1], o.grid[2], o.steps, simPes, n - simPes, onGpu ? "true" : "false",
                    worst[0] * 1e3, worst[2] * 1e3, worst[1], worst[3], worst[4]);
      std::fflush(stdout);
    }
    axon::free(analysed);
    axon::finalize();
    return worst[4] == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "insitu: %s\n", e.what());
    return 2;
  }
}
