// What the staging space's GPU drivers share: bench/space_bench.cu (`axon bench space-put-get`,
// public headers only) and tests/perf/space_reassembly_bench.cu (`axon bench space-reassembly`, of
// the library's internal pieces). Their command line ("TEST [-b MIN] [-e MAX] [-f FACTOR]
// [--no-validate]"), CUDA errors as exceptions, and main: a usage error exits 2, any other error
// is reported as the JSON line {"type": "error"} (bench_cli.hpp) and exits 1. CUDA sources only.
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <string>

#include "bench_cli.hpp"

namespace axon::bench {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// A failed CUDA call (CHECK_CUDA): reported by spaceDriverMain as an error line.
struct CudaFailure {
  std::string message;
};

#define CHECK_CUDA(call)                                                                                           \
  do {                                                                                                             \
    cudaError_t e_ = (call);                                                                                       \
    if (e_ != cudaSuccess) throw ::axon::bench::CudaFailure{std::string(#call) + ": " + cudaGetErrorString(e_)}; \
  } while (0)

struct SpaceOptions {
  std::string test;
  std::size_t minBytes = 4096, maxBytes = std::size_t{1} << 30, factor = 4;
  bool validate = true;
};

// The command line: one of `tests`, then the options; `usage` is the message without a test.
inline SpaceOptions parseSpaceOptions(int argc, char** argv, const char* usage,
                                      std::initializer_list<const char*> tests) {
  SpaceOptions o;
  if (argc < 2) throw UsageError{usage};
  o.test = argv[1];
  std::string names;
  bool known = false;
  for (const char* t : tests) {
    names += (names.empty() ? "" : ", ") + std::string(t);
    known = known || o.test == t;
  }
  if (!known) throw UsageError{"unknown test '" + o.test + "' (" + names + ")"};
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError{a + " needs a value"};
      return argv[++i];
    };
    if (a == "-b") o.minBytes = parseSize(value(), "-b");
    else if (a == "-e") o.maxBytes = parseSize(value(), "-e");
    else if (a == "-f") o.factor = static_cast<std::size_t>(parseCount(value(), "-f", 2));
    else if (a == "--no-validate") o.validate = false;
    else throw UsageError{"unknown option '" + a + "'"};
  }
  if (o.minBytes > o.maxBytes) throw UsageError{"-b is larger than -e"};
  if (o.minBytes % 8 || o.maxBytes % 8) throw UsageError{"sizes are of float64 elements: multiples of 8"};
  return o;
}

// Bytes of `got` that differ from `want`.
inline std::uint64_t countWrong(const unsigned char* got, const unsigned char* want, std::size_t n) {
  if (std::memcmp(got, want, n) == 0) return 0;
  std::uint64_t wrong = 0;
  for (std::size_t i = 0; i < n; ++i) wrong += got[i] != want[i];
  return wrong;
}

// main of a driver: parses the command line and runs `run(const SpaceOptions&)`, which returns the
// exit status; exit status 2 on a usage error, 1 on a CUDA failure or an exception.
template <class Run>
int spaceDriverMain(const char* program, const char* usage, std::initializer_list<const char*> tests, int argc,
                    char** argv, Run run) {
  const auto o = parseCommandLine(
      program, [&](int n, char** v) { return parseSpaceOptions(n, v, usage, tests); }, argc, argv);
  if (!o) return 2;
  try {
    return run(*o);
  } catch (const CudaFailure& e) {
    emitError(program, e.message, false);
  } catch (const std::exception& e) {
    emitError(program, o->test + ": " + e.what(), false);
  }
  return 1;
}

}  // namespace axon::bench
