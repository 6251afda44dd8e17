#include "core/env.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "axon/collectives.hpp"
#include "axon/error.hpp"
#include "core/secret.hpp"

extern char** environ;

namespace axon {
namespace {

constexpr std::size_t kKiB = 1024;
constexpr std::size_t kDefaultHeapMax = 8 * kKiB * kKiB * kKiB;  // virtual reservation only
constexpr std::size_t kDefaultHeapChunk = 16 * kKiB * kKiB;
constexpr std::size_t kDefaultGpuHeapMax = 64 * kKiB * kKiB * kKiB;  // address space per PE
constexpr std::size_t kDefaultGpuHeapChunk = 64 * kKiB * kKiB;
constexpr std::size_t kDefaultStageChunk = 1 * kKiB * kKiB;
constexpr std::size_t kDefaultCollBuffer = 256 * kKiB;
// Two-sided messages: 8 KiB eager slots (Open MPI's shared-memory path switches at 4 KiB, UCX's
// tag protocol over TCP near 8 KiB), and 64 MiB of eager data waiting unmatched per PE, shared out
// among its senders.
constexpr std::size_t kDefaultP2pEager = 8 * kKiB;
constexpr std::size_t kMaxP2pEager = 1024 * kKiB;
constexpr std::size_t kDefaultP2pUnexpected = 64 * kKiB * kKiB;
// Staging-space puts: small nonblocking ones are gathered into 64 KiB batches (one message each).
constexpr std::size_t kDefaultSpaceBatch = 64 * kKiB;
constexpr std::size_t kMaxSpaceBatch = 1024 * kKiB;
constexpr std::size_t kMinCollBuffer = 4 * kKiB;
// Measured on 4 H200s (docs/performance.md): 64 channels of 128 KiB rounds gave the two-shot
// allreduce 257 GB/s of bus bandwidth at 256 MiB, against 223 with 32 x 64 KiB and 153 with
// 16 x 64 KiB; medium calls use a channel per 16 KiB whatever the chunk.
constexpr std::size_t kDefaultCollGpuChunk = 128 * kKiB;
constexpr int kDefaultCollGpuChannels = 64;
// LL for one-shot calls whose block is at most 128 KiB: after its rework it beat Simple there on
// 4 and 2 H200s (docs/performance.md, "LL reworked").
constexpr std::size_t kDefaultCollGpuLlMax = 128 * kKiB;
constexpr std::size_t kDefaultCollGpuLlChunk = 1 * kKiB;
constexpr std::size_t kMaxCollGpuLlChunk = 1 * kKiB * kKiB;
constexpr int kMaxCollGpuChannels = 128;

std::optional<std::string> lookup(const EnvVars& vars, const char* name) {
  auto it = vars.find(name);
  if (it == vars.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

int parseLogLevel(const std::string& text) {
  if (text == "error" || text == "0") return 0;
  if (text == "warn" || text == "1") return 1;
  if (text == "info" || text == "2") return 2;
  if (text == "debug" || text == "3") return 3;
  throw Error(ErrorCode::InvalidArgument,
              "AXON_LOG='" + text + "' is not one of error, warn, info, debug");
}

Backend parseBackend(const std::string& text) {
  if (text == "auto") return Backend::Auto;
  if (text == "host") return Backend::Host;
  if (text == "gpu") return Backend::Gpu;
  throw Error(ErrorCode::InvalidArgument, "AXON_BACKEND='" + text + "' is not one of auto, host, gpu");
}

bool parseSwitch(const std::string& text, const char* what) {
  if (text == "1" || text == "on" || text == "yes" || text == "true") return true;
  if (text == "0" || text == "off" || text == "no" || text == "false") return false;
  throw Error(ErrorCode::InvalidArgument, std::string(what) + "='" + text + "' is not 0 or 1");
}

int parseDevice(const std::string& text) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < 0 || v > 4096) {
    throw Error(ErrorCode::InvalidArgument, "AXON_DEVICE='" + text + "' is not a GPU ordinal (0, 1, ...)");
  }
  return static_cast<int>(v);
}

}  // namespace

std::size_t parseByteSize(const std::string& text, const std::string& what) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  std::string suffix = end ? std::string(end) : std::string();
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!suffix.empty() && suffix.back() == 'B') suffix.pop_back();
  if (!suffix.empty() && suffix.back() == 'I') suffix.pop_back();  // "GiB" == "G"
  double scale = 1;
  if (suffix == "K") scale = 1024.0;
  else if (suffix == "M") scale = 1024.0 * 1024;
  else if (suffix == "G") scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty()) scale = -1;
  if (end == text.c_str() || scale < 0 || !(value * scale >= 1) || !std::isfinite(value) ||
      value * scale > 1e18) {
    throw Error(ErrorCode::InvalidArgument,
                what + "='" + text + "' is not a positive size (examples: 65536, 64M, 8G)");
  }
  return static_cast<std::size_t>(value * scale);
}

double parseSeconds(const std::string& text, const std::string& what) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(value > 0) || !std::isfinite(value)) {
    throw Error(ErrorCode::InvalidArgument,
                what + "='" + text + "' is not a positive number of seconds");
  }
  return value;
}

double clampTimeout(double sec, const std::string& what, bool negativeMeansDefault) {
  if (std::isnan(sec)) throw Error(ErrorCode::InvalidArgument, what + " is NaN; give a number of seconds");
  if (sec < 0 && !negativeMeansDefault) {
    throw Error(ErrorCode::InvalidArgument,
                what + " is " + std::to_string(sec) + "; a timeout must be a positive number of seconds");
  }
  return std::min(sec, kMaxTimeoutSec);
}

double parseTimeout(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  // strtod reads "inf" and "infinity": the longest timeout there is.
  if (end == text.c_str() || *end != '\0' || !(value > 0)) {
    throw Error(ErrorCode::InvalidArgument, what + "='" + text + "' is not a positive number of seconds");
  }
  return clampTimeout(value, what);
}

Env Env::fromVars(const EnvVars& vars) {
  Env env;
  env.launch = detectLaunch(vars);
  if (auto v = lookup(vars, "AXON_TIMEOUT")) env.timeoutSec = parseTimeout(*v, "AXON_TIMEOUT");
  env.heapMax = kDefaultHeapMax;
  if (auto v = lookup(vars, "AXON_HEAP_MAX")) env.heapMax = parseByteSize(*v, "AXON_HEAP_MAX");
  env.heapChunk = kDefaultHeapChunk;
  if (auto v = lookup(vars, "AXON_HEAP_CHUNK")) env.heapChunk = parseByteSize(*v, "AXON_HEAP_CHUNK");
  if (auto v = lookup(vars, "AXON_LOG")) env.logLevel = parseLogLevel(*v);
  if (auto v = lookup(vars, "AXON_BACKEND")) env.backend = parseBackend(*v);
  if (auto v = lookup(vars, "AXON_DEVICE")) env.device = parseDevice(*v);
  if (auto v = lookup(vars, "AXON_P2P")) env.p2p = parseSwitch(*v, "AXON_P2P");
  if (auto v = lookup(vars, "AXON_NODE")) {
    if (v->empty() || v->size() > 255) {
      throw Error(ErrorCode::InvalidArgument, "AXON_NODE='" + *v + "' must be a node name of 1 to 255 characters");
    }
    env.node = *v;
  }
  env.gpuHeapMax = kDefaultGpuHeapMax;
  if (auto v = lookup(vars, "AXON_GPU_HEAP_MAX")) env.gpuHeapMax = parseByteSize(*v, "AXON_GPU_HEAP_MAX");
  env.gpuHeapChunk = kDefaultGpuHeapChunk;
  if (auto v = lookup(vars, "AXON_GPU_HEAP_CHUNK")) env.gpuHeapChunk = parseByteSize(*v, "AXON_GPU_HEAP_CHUNK");
  env.stageChunk = kDefaultStageChunk;
  if (auto v = lookup(vars, "AXON_STAGE_CHUNK")) env.stageChunk = parseByteSize(*v, "AXON_STAGE_CHUNK");
  if (auto v = lookup(vars, "AXON_JOB_KEY")) env.jobKey.key = Secret::fromHex(*v, "AXON_JOB_KEY");
  if (auto v = lookup(vars, "AXON_JOB_KEY_FILE")) {
    if (!env.jobKey.key.empty()) {
      throw Error(ErrorCode::InvalidArgument, "AXON_JOB_KEY and AXON_JOB_KEY_FILE are both set: set one of them");
    }
    env.jobKey.file = *v;
  }
  if (auto v = lookup(vars, "XDG_RUNTIME_DIR")) env.jobKey.runtimeDir = *v;
  if (auto v = lookup(vars, "HOME")) env.jobKey.homeDir = *v;
  if (auto v = lookup(vars, "AXON_SPACE_ADDR")) env.spaceAddr = *v;
  if (auto v = lookup(vars, "AXON_SPACE_FILE")) env.spaceFile = *v;
  if (auto v = lookup(vars, "AXON_SPACE_KEY")) {
    (void)Secret::fromHex(*v, "AXON_SPACE_KEY");  // a bad key is said here, without echoing it
    env.spaceKey = *v;
  }
  env.spaceBatch = kDefaultSpaceBatch;
  if (auto v = lookup(vars, "AXON_SPACE_BATCH")) {
    env.spaceBatch = *v == "0" ? 0 : parseByteSize(*v, "AXON_SPACE_BATCH");
    if (env.spaceBatch > kMaxSpaceBatch) {
      throw Error(ErrorCode::InvalidArgument, "AXON_SPACE_BATCH='" + *v + "' must be at most 1M (0 turns batching off)");
    }
  }
  env.p2pEager = kDefaultP2pEager;
  if (auto v = lookup(vars, "AXON_P2P_EAGER")) {
    env.p2pEager = parseByteSize(*v, "AXON_P2P_EAGER");
    if (env.p2pEager < 256 || env.p2pEager > kMaxP2pEager) {
      throw Error(ErrorCode::InvalidArgument, "AXON_P2P_EAGER='" + *v + "' must be from 256 bytes to 1M");
    }
  }
  env.p2pUnexpected = kDefaultP2pUnexpected;
  if (auto v = lookup(vars, "AXON_P2P_UNEXPECTED")) {
    // 0 is meaningful here: no eager data may wait, every message is a rendezvous.
    env.p2pUnexpected = *v == "0" ? 0 : parseByteSize(*v, "AXON_P2P_UNEXPECTED");
  }
  if (auto v = lookup(vars, "AXON_P2P_POSTED")) env.p2pPosted = parseSwitch(*v, "AXON_P2P_POSTED");
  env.collBuffer = kDefaultCollBuffer;
  if (auto v = lookup(vars, "AXON_COLL_BUFFER")) {
    env.collBuffer = parseByteSize(*v, "AXON_COLL_BUFFER");
    if (env.collBuffer < kMinCollBuffer) {
      throw Error(ErrorCode::InvalidArgument, "AXON_COLL_BUFFER='" + *v + "' is below the minimum of 4K");
    }
  }
  env.collGpuChunk = kDefaultCollGpuChunk;
  if (auto v = lookup(vars, "AXON_COLL_GPU_CHUNK")) {
    env.collGpuChunk = parseByteSize(*v, "AXON_COLL_GPU_CHUNK");
    if (env.collGpuChunk < kMinCollBuffer || env.collGpuChunk % 256 != 0) {
      throw Error(ErrorCode::InvalidArgument,
                  "AXON_COLL_GPU_CHUNK='" + *v + "' must be a multiple of 256 bytes, at least 4K");
    }
  }
  env.collGpuLlMax = kDefaultCollGpuLlMax;
  if (auto v = lookup(vars, "AXON_COLL_GPU_LL_MAX")) {
    env.collGpuLlMax = *v == "0" ? 0 : parseByteSize(*v, "AXON_COLL_GPU_LL_MAX");  // 0 turns LL off
  }
  env.collGpuLlChunk = kDefaultCollGpuLlChunk;
  if (auto v = lookup(vars, "AXON_COLL_GPU_LL_CHUNK")) {
    env.collGpuLlChunk = parseByteSize(*v, "AXON_COLL_GPU_LL_CHUNK");
    if (env.collGpuLlChunk < 256 || env.collGpuLlChunk % 256 != 0 || env.collGpuLlChunk > kMaxCollGpuLlChunk) {
      throw Error(ErrorCode::InvalidArgument,
                  "AXON_COLL_GPU_LL_CHUNK='" + *v + "' must be a multiple of 256 bytes, from 256 to 1M");
    }
  }
  if (auto v = lookup(vars, "AXON_COLL_GPU_PUSH_MIN")) {
    env.collGpuPushMin = *v == "0" ? 0 : parseByteSize(*v, "AXON_COLL_GPU_PUSH_MIN");  // 0: never
  }
  if (auto v = lookup(vars, "AXON_COLL_GPU_CHAIN_MIN")) {
    env.collGpuChainMin = *v == "0" ? 0 : parseByteSize(*v, "AXON_COLL_GPU_CHAIN_MIN");  // 0: never
  }
  if (auto v = lookup(vars, "AXON_COLL_GPU_PDL")) env.collGpuPdl = parseSwitch(*v, "AXON_COLL_GPU_PDL");
  if (auto v = lookup(vars, "AXON_UCX_ATOMICS")) {
    if (*v == "auto") env.ucxAtomics = RemoteAtomics::Auto;
    else if (*v == "am") env.ucxAtomics = RemoteAtomics::ActiveMessage;
    else if (*v == "native") env.ucxAtomics = RemoteAtomics::Native;
    else throw Error(ErrorCode::InvalidArgument, "AXON_UCX_ATOMICS='" + *v + "' is not auto, am or native");
  }
  if (auto v = lookup(vars, "AXON_COLL_GPU_DIRECT")) {
    if (*v == "always") {
      env.collGpuDirect = DirectMode::Always;
    } else if (*v == "auto") {
      env.collGpuDirect = DirectMode::Auto;
    } else {
      try {
        env.collGpuDirect = parseSwitch(*v, "AXON_COLL_GPU_DIRECT") ? DirectMode::Auto : DirectMode::Off;
      } catch (const Error&) {
        throw Error(ErrorCode::InvalidArgument, "AXON_COLL_GPU_DIRECT='" + *v + "' is not auto (or 1), always or 0");
      }
    }
  }
  if (auto v = lookup(vars, "AXON_HOST_PES")) {
    char* end = nullptr;
    const long n = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || n < 1 || n > (1L << 24)) {
      throw Error(ErrorCode::InvalidArgument, "AXON_HOST_PES='" + *v + "' is not a whole number in [1, 16777216]");
    }
    env.hostPes = static_cast<int>(n);
  }
  env.collGpuChannels = kDefaultCollGpuChannels;
  if (auto v = lookup(vars, "AXON_COLL_GPU_CHANNELS")) {
    char* end = nullptr;
    const long n = std::strtol(v->c_str(), &end, 10);
    if (v->empty() || *end != '\0' || n < 1 || n > kMaxCollGpuChannels) {
      throw Error(ErrorCode::InvalidArgument, "AXON_COLL_GPU_CHANNELS='" + *v + "' is not a whole number in [1, " +
                                                  std::to_string(kMaxCollGpuChannels) + "]");
    }
    env.collGpuChannels = static_cast<int>(n);
  }
  // Read here, checked against each collective's algorithms by coll::checkForcedAlgorithms at init.
  for (int c = 0; c < static_cast<int>(env.algo.size()); ++c) {
    if (auto v = lookup(vars, algoVariable(static_cast<Collective>(c)).c_str())) env.algo[c] = *v;
  }
  return env;
}

std::string algoVariable(Collective c) {
  std::string s = "AXON_ALGO_";
  for (const char* p = collectiveName(c); *p; ++p) s += static_cast<char>(std::toupper(static_cast<unsigned char>(*p)));
  return s;
}

EnvVars Env::processVars() {
  EnvVars vars;
  for (char** e = environ; e && *e; ++e) {
    std::string entry(*e);
    auto eq = entry.find('=');
    if (eq != std::string::npos) vars.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return vars;
}

Env Env::fromProcess() { return fromVars(processVars()); }

}  // namespace axon
