#include "core/launch_detect.hpp"

#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <optional>

#include "axon/error.hpp"

namespace axon {
namespace {

using Vars = std::map<std::string, std::string>;

std::optional<std::string> get(const Vars& vars, const std::string& name) {
  auto it = vars.find(name);
  if (it == vars.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

int parseInt(const std::string& name, const std::string& text) {
  int value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    throw Error(ErrorCode::InvalidArgument, name + "='" + text + "' is not an integer");
  }
  return value;
}

std::optional<int> getInt(const Vars& vars, const std::string& name) {
  auto v = get(vars, name);
  if (!v) return std::nullopt;
  return parseInt(name, *v);
}

// Reads a (rank, size, local rank, local size) quadruple under the given names. The rank variable
// decides whether this launcher is present; the size must then be there too.
bool readQuad(const Vars& vars, const char* rankVar, const char* sizeVar, const char* localRankVar,
              const char* localSizeVar, LaunchInfo& out) {
  auto rank = getInt(vars, rankVar);
  if (!rank) return false;
  auto size = getInt(vars, sizeVar);
  if (!size) {
    throw Error(ErrorCode::InvalidArgument,
                std::string(rankVar) + " is set but " + sizeVar + " is not");
  }
  out.rank = *rank;
  out.worldSize = *size;
  out.rankVar = rankVar;
  out.sizeVar = sizeVar;
  auto localRank = localRankVar ? getInt(vars, localRankVar) : std::nullopt;
  auto localSize = localSizeVar ? getInt(vars, localSizeVar) : std::nullopt;
  // Without local information assume one node; init() checks this against the hosts it sees.
  out.localRank = localRank.value_or(out.rank);
  out.localSize = localSize.value_or(localRank ? 0 : out.worldSize);
  return true;
}

void validate(const LaunchInfo& info) {
  const std::string from = " (from " + info.source + " variables)";
  if (info.worldSize < 1) {
    throw Error(ErrorCode::InvalidArgument, "world size " + std::to_string(info.worldSize) + " (" +
                                                info.sizeVar + ") must be at least 1");
  }
  if (info.rank < 0 || info.rank >= info.worldSize) {
    throw Error(ErrorCode::InvalidArgument, "rank " + std::to_string(info.rank) + " (" +
                                                info.rankVar + ") is outside [0, " +
                                                std::to_string(info.worldSize) + ") (" +
                                                info.sizeVar + ")");
  }
  if (info.localSize < 1) {
    throw Error(ErrorCode::InvalidArgument, "local size " + std::to_string(info.localSize) + " must be at least 1" + from);
  }
  // A negative local rank would pick GPU -1 (local rank modulo the GPUs visible).
  if (info.localRank < 0 || info.localRank >= info.localSize) {
    throw Error(ErrorCode::InvalidArgument, "local rank " + std::to_string(info.localRank) +
                                                " is outside [0, " + std::to_string(info.localSize) +
                                                ")" + from);
  }
}

// Where a launcher gives no store address but all PEs are on one node, rank 0 serves the store on
// loopback at a port derived from the job's identity, which every PE of the job sees alike.
void deriveLocalStore(LaunchInfo& info, const Vars& vars, std::initializer_list<const char*> jobVars) {
  if (info.worldSize == 1) return;  // a world of one picks a free port itself
  for (const char* name : jobVars) {
    if (auto job = get(vars, name)) {
      bool oneNode = info.localSize == info.worldSize;
      if (!oneNode) break;
      info.storeAddr = "127.0.0.1:" + std::to_string(derivedStorePort(*job));
      info.storeHint = std::string("derived from ") + name + " because all PEs are on one node";
      return;
    }
  }
  throw Error(ErrorCode::Bootstrap,
              "started by " + info.source + " on several nodes (or without a job id), and no store "
              "address is known: set AXON_STORE_ADDR=host:port to a port on the host of rank 0");
}

}  // namespace

int derivedStorePort(const std::string& jobKey) {
  // FNV-1a: stable across processes and builds, unlike std::hash.
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : jobKey) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // Fold the high bits in: FNV's low bits mix poorly, and consecutive job ids would collide.
  return 20000 + static_cast<int>((h ^ (h >> 32)) % 20000);
}

std::string firstSlurmHost(const std::string& nodelist) {
  // The first entry ends at a comma that is not inside brackets.
  std::size_t depth = 0, end = nodelist.size();
  for (std::size_t i = 0; i < nodelist.size(); ++i) {
    if (nodelist[i] == '[') ++depth;
    else if (nodelist[i] == ']' && depth) --depth;
    else if (nodelist[i] == ',' && depth == 0) { end = i; break; }
  }
  std::string first = nodelist.substr(0, end);
  auto open = first.find('[');
  if (open == std::string::npos) return first;
  auto close = first.find(']', open);
  std::string prefix = first.substr(0, open);
  std::string ranges = first.substr(open + 1, close == std::string::npos ? std::string::npos
                                                                         : close - open - 1);
  std::string suffix = close == std::string::npos ? "" : first.substr(close + 1);
  // The first value of the first range keeps its zero padding: "07-09" -> "07".
  std::string value = ranges.substr(0, ranges.find_first_of(",-"));
  if (value.empty()) {
    throw Error(ErrorCode::InvalidArgument, "cannot parse the Slurm node list '" + nodelist + "'");
  }
  return prefix + value + suffix;
}

namespace {

// The store address: AXON_STORE_ADDR when given, else what the launcher's variables imply.
void chooseStoreAddr(LaunchInfo& info, const Vars& vars) {
  if (auto addr = get(vars, "AXON_STORE_ADDR")) {
    info.storeAddr = *addr;
    info.storeHint = "AXON_STORE_ADDR";
    return;
  }
  if (info.source == "torchrun") {
    auto addr = get(vars, "MASTER_ADDR");
    auto port = getInt(vars, "MASTER_PORT");
    if (addr && port) {
      if (*port < 1 || *port > 65534) {
        throw Error(ErrorCode::InvalidArgument, "MASTER_PORT=" + std::to_string(*port) +
                                                    " is not a port axon can take the next one of (1 to 65534)");
      }
      // torchrun's own store already listens on MASTER_PORT; axon takes the next port.
      info.storeAddr = *addr + ":" + std::to_string(*port + 1);
      info.storeHint = "MASTER_ADDR:MASTER_PORT+1";
      return;
    }
    deriveLocalStore(info, vars, {"TORCHELASTIC_RUN_ID"});
  } else if (info.source == "slurm") {
    auto nodes = get(vars, "SLURM_STEP_NODELIST");
    if (!nodes) nodes = get(vars, "SLURM_JOB_NODELIST");
    auto job = get(vars, "SLURM_JOB_ID");
    if (nodes && job) {
      std::string step = get(vars, "SLURM_STEP_ID").value_or("0");
      info.storeAddr =
          firstSlurmHost(*nodes) + ":" + std::to_string(derivedStorePort(*job + "." + step));
      info.storeHint = "first host of the Slurm node list, port derived from SLURM_JOB_ID";
      return;
    }
    deriveLocalStore(info, vars, {"SLURM_JOB_ID"});
  } else if (info.source == "openmpi") {
    deriveLocalStore(info, vars, {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"});
  } else if (info.source == "pmi") {
    deriveLocalStore(info, vars, {"PMI_KVSNAME", "PMI_FD", "PMI_PORT"});
  } else if (info.worldSize > 1) {
    throw Error(ErrorCode::Bootstrap, "AXON_RANK and AXON_WORLD_SIZE are set but AXON_STORE_ADDR "
                                      "is not: set it to host:port of rank 0 (axon run sets it)");
  }
}

// The launcher's id of this job (or step): the same on every PE of the job, different for the
// next job, so that rank 0's key file of one job is not taken for another's.
std::string jobIdOf(const std::string& source, const Vars& vars) {
  auto first = [&](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      if (auto v = get(vars, name)) return *v;
    }
    return std::string();
  };
  if (source == "torchrun") return first({"TORCHELASTIC_RUN_ID"});
  if (source == "slurm") {
    const std::string job = first({"SLURM_JOB_ID"});
    return job.empty() ? job : job + "." + get(vars, "SLURM_STEP_ID").value_or("0");
  }
  if (source == "openmpi") return first({"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid"});
  if (source == "pmi") return first({"PMI_KVSNAME"});
  return {};
}

}  // namespace

LaunchInfo detectLaunch(const Vars& vars) {
  LaunchInfo info;
  if (readQuad(vars, "AXON_RANK", "AXON_WORLD_SIZE", "AXON_LOCAL_RANK", "AXON_LOCAL_SIZE", info)) {
    info.source = "axon";
  } else if (readQuad(vars, "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", info)) {
    info.source = "torchrun";
  } else if (readQuad(vars, "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr, info)) {
    info.source = "slurm";
    if (auto tpn = get(vars, "SLURM_TASKS_PER_NODE")) {
      // "4(x2)" or "4": tasks on the first node; exact for the uniform layouts Slurm prints this way.
      info.localSize = parseInt("SLURM_TASKS_PER_NODE", tpn->substr(0, tpn->find_first_of("(,")));
    }
  } else if (readQuad(vars, "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                      "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", info)) {
    info.source = "openmpi";
  } else if (readQuad(vars, "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", info)) {
    info.source = "pmi";
  } else {
    info.source = "single";
  }
  if (info.localSize == 0) info.localSize = info.worldSize;
  info.jobId = jobIdOf(info.source, vars);
  validate(info);
  chooseStoreAddr(info, vars);
  return info;
}

}  // namespace axon
