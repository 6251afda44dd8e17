// barrier_all or finalize (AXON_TEST_SYNC) on the lower half of the PEs against an allreduce on the
// world team on the others: every PE's call must throw CollectiveMismatch naming both calls, well
// before AXON_TIMEOUT, and none may return normally (finalize included). Its own main: finalize
// is the call under test. Prints one line per PE; exits 1 where the PE saw something else.
#include <axon/axon.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main() {
  axon::init();
  const int me = axon::myPe(), n = axon::nPes();
  const char* env = std::getenv("AXON_TEST_SYNC");
  const std::string mode = env ? env : "barrier_all";
  const bool lower = me < n / 2;
  std::vector<std::int32_t> src(64, 1), dst(64, 0);
  const auto start = std::chrono::steady_clock::now();
  bool threw = false;
  axon::ErrorCode code = axon::ErrorCode::Internal;
  std::string message;
  try {
    if (!lower) axon::allreduce(axon::Team::world(), src.data(), dst.data(), 64, axon::DataType::Int32, axon::ReduceOp::Sum);
    else if (mode == "finalize") axon::finalize();
    else axon::barrierAll();
  } catch (const axon::Error& e) {
    threw = true;
    code = e.code();
    message = e.what();
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const std::string mine = mode == "finalize" ? "finalize()" : "barrier_all()";
  std::string wrong;
  if (!threw) wrong = "the call returned normally";
  else if (code != axon::ErrorCode::CollectiveMismatch) wrong = std::string("error ") + axon::errorCodeName(code);
  else if (message.find(mine) == std::string::npos || message.find("allreduce(") == std::string::npos)
    wrong = "the message does not name " + mine + " and allreduce(";
  else if (seconds > 5.0) wrong = "found only after " + std::to_string(seconds) + " s";
  if (wrong.empty()) std::printf("PE %d: mismatch reported in %.3f s: %s\n", me, seconds, message.c_str());
  else std::printf("PE %d: FAILED: %s: %s\n", me, wrong.c_str(), message.c_str());
  std::fflush(stdout);
  // Leave. After barrier_all's mismatch every PE finalizes: the barrier_all PEs signalled
  // nothing, so the world's barrier counters still agree. In finalize mode the finalize PEs have
  // left (finalize always leaves, even when it throws): the others exit without it, as a program
  // that met an error does, and the store's host sees them go.
  if (mode != "finalize") {
    try {
      axon::finalize();
    } catch (const axon::Error& e) {
      std::printf("PE %d: FAILED: finalize after the mismatch: %s\n", me, e.what());
      return 1;
    }
  }
  return wrong.empty() ? 0 : 1;
}
