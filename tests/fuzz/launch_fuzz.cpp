// libFuzzer target: launcher detection (core/launch_detect.cpp) over arbitrary environments.
//
// The input is a list of variables, one a line ('\n'): "NAME=VALUE" (no '=': an empty value), or a
// byte >= 0x80 followed by the value, which names the (byte - 0x80) % N-th variable detectLaunch
// reads (kNames), so that the fuzzer reaches the launcher branches without spelling their names.
// A later line of one name replaces an earlier one. detectLaunch may refuse with axon::Error
// (InvalidArgument or Bootstrap); what it returns must keep the promises of launch_detect.hpp
// (checked with __builtin_trap). Every Slurm node list is also handed to firstSlurmHost, and every
// value to derivedStorePort.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with clang and -fsanitize=fuzzer for `make fuzz`,
// and with the project's compiler and replay_main.cpp as a ctest over tests/fuzz/corpus/launch.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "axon/error.hpp"
#include "core/launch_detect.hpp"

namespace {

using namespace axon;

#define FUZZ_CHECK(cond) \
  do {                   \
    if (!(cond)) __builtin_trap(); \
  } while (0)

// Every variable launch_detect.cpp reads, in its order.
constexpr const char* kNames[] = {
    "AXON_RANK", "AXON_WORLD_SIZE", "AXON_LOCAL_RANK", "AXON_LOCAL_SIZE", "AXON_STORE_ADDR",
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
    "TORCHELASTIC_RUN_ID",
    "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_TASKS_PER_NODE", "SLURM_STEP_NODELIST",
    "SLURM_JOB_NODELIST", "SLURM_JOB_ID", "SLURM_STEP_ID",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_KVSNAME", "PMI_FD", "PMI_PORT",
};
constexpr std::size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);

std::map<std::string, std::string> parseVars(std::string_view text) {
  std::map<std::string, std::string> vars;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    const std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty()) continue;
    const auto lead = static_cast<unsigned char>(line[0]);
    if (lead >= 0x80) {
      vars[kNames[(lead - 0x80) % kNameCount]] = std::string(line.substr(1));
      continue;
    }
    const std::size_t eq = line.find('=');
    vars[std::string(line.substr(0, eq))] = eq == std::string_view::npos ? "" : std::string(line.substr(eq + 1));
  }
  return vars;
}

void checkSlurmHost(const std::string& nodelist) {
  try {
    const std::string host = firstSlurmHost(nodelist);
    // The prefix, the first value and the suffix are disjoint pieces of the first entry.
    FUZZ_CHECK(host.size() <= nodelist.size());
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::InvalidArgument);
  }
}

void checkPort(const std::string& key) {
  const int port = derivedStorePort(key);
  FUZZ_CHECK(port >= 20000 && port < 40000);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto vars = parseVars(text);
  for (const auto& [name, value] : vars) {
    if (name.find("NODELIST") != std::string::npos) checkSlurmHost(value);
    checkPort(value);
  }
  LaunchInfo info;
  try {
    info = detectLaunch(vars);
  } catch (const Error& e) {
    FUZZ_CHECK(e.code() == ErrorCode::InvalidArgument || e.code() == ErrorCode::Bootstrap);
    return 0;
  }
  // validate()'s promises: a world of at least one, a rank inside it, a local rank inside a
  // positive local size (a local size of 0, "not given", becomes the world size).
  FUZZ_CHECK(info.worldSize >= 1);
  FUZZ_CHECK(info.rank >= 0 && info.rank < info.worldSize);
  FUZZ_CHECK(info.localSize != 0);
  if (info.localSize > 0) FUZZ_CHECK(info.localRank >= 0 && info.localRank < info.localSize);
  FUZZ_CHECK(info.source == "axon" || info.source == "torchrun" || info.source == "slurm" ||
             info.source == "openmpi" || info.source == "pmi" || info.source == "single");
  if (info.source == "single") {
    FUZZ_CHECK(info.rank == 0 && info.worldSize == 1 && info.localRank == 0 && info.localSize == 1);
  } else {
    FUZZ_CHECK(!info.rankVar.empty() && !info.sizeVar.empty());
  }
  // Several PEs need a store to meet at; one PE picks its own port.
  if (info.worldSize > 1) FUZZ_CHECK(!info.storeAddr.empty());
  if (!info.storeAddr.empty()) FUZZ_CHECK(!info.storeHint.empty());
  // A pure function: the same variables, the same answer.
  const LaunchInfo again = detectLaunch(vars);
  FUZZ_CHECK(again.rank == info.rank && again.worldSize == info.worldSize && again.localRank == info.localRank &&
             again.localSize == info.localSize && again.storeAddr == info.storeAddr && again.source == info.source);
  return 0;
}
