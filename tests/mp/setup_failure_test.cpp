// One PE fails in the middle of a set-up step that others wait in: with tests/mp/shm_open_fault.c
// preloaded, PE 1 cannot open the other members' collective workspaces at init. Every PE must fail
// init at once (well inside AXON_TIMEOUT) with the same cause, naming PE 1 and what it could not
// do, not a timeout or a bare "PE 1 disconnected".
#include <axon/axon.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

int main() {
  const char* rankText = std::getenv("AXON_RANK");
  const int rank = rankText ? std::atoi(rankText) : -1;
  const auto start = std::chrono::steady_clock::now();
  try {
    axon::init();
  } catch (const axon::Error& e) {
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string msg = e.what();
    std::printf("PE %d: init failed after %.2f s (%s): %s\n", rank, took, axon::errorCodeName(e.code()), msg.c_str());
    bool ok = took < 10.0 && e.code() != axon::ErrorCode::Timeout && e.code() != axon::ErrorCode::PeerDead &&
              msg.find("Permission denied") != std::string::npos && msg.find("collective workspace") != std::string::npos;
    if (rank != 1) ok = ok && msg.find("failed on PE 1") != std::string::npos;
    std::printf("PE %d: %s\n", rank, ok ? "ok" : "WRONG: expected every PE to fail at once with PE 1's cause");
    return ok ? 0 : 1;
  }
  std::printf("PE %d: init succeeded although PE 1 cannot open the workspaces\n", rank);
  axon::finalize();
  return 1;
}
