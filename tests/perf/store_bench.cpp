// The bootstrap store under a rendezvous of many ranks: N threads in this process, each a rank
// with its own Bootstrap (rank 0's serves the store), run R rounds of an allgather of a small
// card (as init does) and of a barrier. No heap, no launcher: only the store's own cost.
//
// Reported per rendezvous: the wall time from the round's start until every rank has its answer,
// and the CPU time the store's thread spent on it (read from /proc, so it excludes the clients).
// It uses only Bootstrap's public calls, so the same source builds against an older axon to
// compare (docs/performance.md says how).
//
//   store_bench [--ranks N[,N...]] [--rounds R] [--card BYTES]
#include <sys/resource.h>
#include <sys/syscall.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.hpp"
#include "bootstrap/bootstrap.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int> ranks{64, 256, 1024};
  int rounds = 5;
  std::size_t card = 64;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) throw axon::bench::UsageError{a + " needs a value"};
    std::string v = argv[++i];
    if (a == "--ranks") {
      o.ranks.clear();
      std::stringstream in(v);
      for (std::string n; std::getline(in, n, ',');) o.ranks.push_back(static_cast<int>(axon::bench::parseCount(n, "--ranks", 2)));
    } else if (a == "--rounds") {
      o.rounds = static_cast<int>(axon::bench::parseCount(v, "--rounds", 1));
    } else if (a == "--card") {
      o.card = axon::bench::parseSize(v, "--card");
    } else {
      throw axon::bench::UsageError{"unknown option " + a};
    }
  }
  return o;
}

// A free loopback port. Not net::freeLoopbackPort: this file must also build against axon
// releases that predate it, to measure them (docs/performance.md).
int freePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  ::bind(fd, reinterpret_cast<sockaddr*>(&sa), len);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
  ::close(fd);
  return ntohs(sa.sin_port);
}

// CPU seconds of one thread of this process: schedstat's first field, in nanoseconds.
double threadCpuSeconds(long tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/schedstat");
  unsigned long long ns = 0;
  f >> ns;
  return static_cast<double>(ns) * 1e-9;
}

std::set<long> threadIds() {
  std::set<long> ids;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') ids.insert(std::stol(e->d_name));
    }
    ::closedir(d);
  }
  return ids;
}

struct Result {
  double allgatherMs, allgatherServerMs, barrierMs, barrierServerMs;
};

Result run(int n, const Options& o) {
  const std::string addr = "127.0.0.1:" + std::to_string(freePort());
  std::mutex mu;
  std::set<long> clientThreads;
  std::barrier sync(n + 1);
  std::vector<double> agWall, agCpu, barWall, barCpu;
  std::vector<std::thread> ranks;
  axon::JobKeyConfig keys;  // as AXON_JOB_KEY gives every PE the job's key
  keys.key = axon::Secret::generate();
  for (int r = 0; r < n; ++r) {
    ranks.emplace_back([&, r] {
      {
        std::lock_guard lock(mu);
        clientThreads.insert(static_cast<long>(::syscall(SYS_gettid)));
      }
      axon::LaunchInfo launch;
      launch.rank = r;
      launch.worldSize = n;
      launch.storeAddr = addr;
      launch.storeHint = "store_bench";
      axon::Bootstrap boot(launch, 600.0, keys);
      const std::string card(o.card, static_cast<char>('a' + r % 26));
      sync.arrive_and_wait();  // everyone connected
      for (int round = 0; round < o.rounds; ++round) {
        sync.arrive_and_wait();
        auto all = boot.allgatherWorld("bench", card);
        if (static_cast<int>(all.size()) != n || all[n - 1] != std::string(o.card, static_cast<char>('a' + (n - 1) % 26))) {
          std::fprintf(stderr, "store_bench: rank %d got a wrong answer\n", r);
          std::abort();
        }
        sync.arrive_and_wait();
        sync.arrive_and_wait();
        boot.barrierWorld("bench-barrier");
        sync.arrive_and_wait();
      }
      boot.finalize();
    });
  }
  sync.arrive_and_wait();
  // The store's thread: the one thread that is neither ours nor a rank's.
  long server = -1;
  for (long id : threadIds()) {
    std::lock_guard lock(mu);
    if (id != static_cast<long>(::syscall(SYS_gettid)) && !clientThreads.count(id)) server = id;
  }
  for (int round = 0; round < o.rounds; ++round) {
    for (auto [wall, cpu] : {std::pair{&agWall, &agCpu}, std::pair{&barWall, &barCpu}}) {
      const double cpu0 = server >= 0 ? threadCpuSeconds(server) : 0;
      const auto t0 = Clock::now();
      sync.arrive_and_wait();  // go
      sync.arrive_and_wait();  // all answered
      wall->push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      cpu->push_back(server >= 0 ? (threadCpuSeconds(server) - cpu0) * 1e3 : 0);
    }
  }
  for (auto& t : ranks) t.join();
  using axon::bench::median;
  return {median(agWall), median(agCpu), median(barWall), median(barCpu)};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const axon::bench::UsageError& e) {
    std::fprintf(stderr, "store_bench: %s\n", e.message.c_str());
    return 2;
  }
  // Each rank holds a socket, and rank 0's store one per rank.
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  std::printf("# store rendezvous, %d rounds, %zu-byte cards; medians; store CPU from /proc/<tid>/schedstat\n", o.rounds, o.card);
  std::printf("%8s %16s %18s %14s %16s\n", "ranks", "allgather ms", "store CPU ms", "barrier ms", "store CPU ms");
  for (int n : o.ranks) {
    Result r = run(n, o);
    std::printf("%8d %16.2f %18.1f %14.2f %16.1f\n", n, r.allgatherMs, r.allgatherServerMs, r.barrierMs, r.barrierServerMs);
    std::fflush(stdout);
  }
  return 0;
}
