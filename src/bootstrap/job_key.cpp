// Resolving the job key; rank 0's key file. See job_key.hpp.
#include "bootstrap/job_key.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>
#include <utility>

#include "axon/error.hpp"
#include "core/hmac.hpp"
#include "core/log.hpp"

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kSetOne =
    "set AXON_JOB_KEY to the same hex key on every PE (e.g. export AXON_JOB_KEY=$(openssl rand -hex 32) before "
    "starting the job; the launcher passes the environment on) or AXON_JOB_KEY_FILE to a file of yours, mode 0600, "
    "that every node can read";

// A file name out of anything: letters, digits, '.', '-' stay; the rest becomes '_'.
std::string fileNameOf(const std::string& text) {
  std::string name;
  for (char ch : text.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(ch);
    name += std::isalnum(u) || ch == '.' || ch == '-' ? ch : '_';
  }
  return name;
}

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// A directory of this user's that nobody else may enter. Creates what is missing (mode 0700)
// when `create`; refuses one that another user owns or others may use.
void checkKeyDirectory(const std::string& dir, bool create) {
  if (create) {
    for (std::size_t at = 1; at <= dir.size(); ++at) {
      if (at != dir.size() && dir[at] != '/') continue;
      const std::string part = dir.substr(0, at);
      if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) throw SystemError("create the key directory " + part, errno);
    }
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw SystemError("open the key directory " + dir, errno);
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    throw Error(ErrorCode::PermissionDenied,
                "the key directory " + dir + " must be a directory of this user (uid " + std::to_string(::geteuid()) +
                    ") that nobody else may use (mode 0700); it has uid " + std::to_string(st.st_uid) + " and mode " +
                    octal(st.st_mode) + (S_ISDIR(st.st_mode) ? "" : " and is not a directory") + ": run chmod 700 " +
                    dir + ", or " + kSetOne);
  }
}

std::string directoryOf(const std::string& path) { return path.substr(0, path.rfind('/')); }

}  // namespace

std::string jobKeyFilePath(const JobKeyConfig& config, const LaunchInfo& launch) {
  // XDG_RUNTIME_DIR is a per-node tmpfs, never shared: good for one node only.
  const bool oneNode = launch.localSize >= launch.worldSize;
  std::string dir;
  if (oneNode && !config.runtimeDir.empty()) dir = config.runtimeDir + "/axon/keys";
  else if (!config.homeDir.empty()) dir = config.homeDir + "/.axon/keys";
  else if (!config.runtimeDir.empty()) dir = config.runtimeDir + "/axon/keys";
  else throw Error(ErrorCode::Bootstrap, "no job key, and neither HOME nor XDG_RUNTIME_DIR is set for the key file rank 0 would write: " + std::string(kSetOne));
  return dir + "/" + fileNameOf("job-" + (launch.jobId.empty() ? "" : launch.jobId + "-") + launch.storeAddr);
}

JobKey::JobKey(Secret key, std::string source) : key_(std::move(key)), source_(std::move(source)) {}

JobKey::JobKey(JobKey&& other) noexcept
    : key_(std::move(other.key_)),
      source_(std::move(other.source_)),
      advice_(std::move(other.advice_)),
      readPath_(std::move(other.readPath_)),
      writtenPath_(std::exchange(other.writtenPath_, {})) {}

JobKey& JobKey::operator=(JobKey&& other) noexcept {
  if (this != &other) {
    removeFile();
    key_ = std::move(other.key_);
    source_ = std::move(other.source_);
    advice_ = std::move(other.advice_);
    readPath_ = std::move(other.readPath_);
    writtenPath_ = std::exchange(other.writtenPath_, {});
  }
  return *this;
}

JobKey::~JobKey() { removeFile(); }

void JobKey::removeFile() {
  if (writtenPath_.empty()) return;
  ::unlink(writtenPath_.c_str());
  writtenPath_.clear();
}

JobKey JobKey::resolve(const JobKeyConfig& config, const LaunchInfo& launch, double timeoutSec) {
  if (!config.key.empty()) return JobKey(config.key, "AXON_JOB_KEY");
  if (!config.file.empty()) return JobKey(Secret::fromFile(config.file), "AXON_JOB_KEY_FILE=" + config.file);
  if (launch.worldSize <= 1) return JobKey(Secret::generate(), "a key of this PE's own (a world of one)");
  const std::string path = jobKeyFilePath(config, launch);
  JobKey k;
  k.source_ = "the key file " + path + " that rank 0 writes (neither AXON_JOB_KEY nor AXON_JOB_KEY_FILE is set)";
  k.advice_ = "a PE on another node sees rank 0's key file only through a shared home directory: " + std::string(kSetOne);
  k.readPath_ = path;
  if (launch.rank == 0) {
    checkKeyDirectory(directoryOf(path), /*create=*/true);
    k.key_ = Secret::generate();
    // Replaced atomically: a reader never sees half a key, and a file an earlier job left
    // behind (it crashed) is replaced at once.
    replacePrivateFile(path, k.key_.hex() + "\n");
    k.writtenPath_ = path;
    return k;
  }
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeoutSec));
  // Rank 0 writes the file within a second of starting; a PE still waiting after a few seconds is
  // most likely on a node that does not share the directory: say so once, long before AXON_TIMEOUT.
  const auto hintAt = start + std::chrono::seconds(5);
  bool hinted = false;
  for (int attempt = 0;; ++attempt) {
    try {
      checkKeyDirectory(directoryOf(path), /*create=*/false);
      k.key_ = Secret::fromFile(path);
      return k;
    } catch (const SystemError& e) {
      if (e.sysErrno() != ENOENT) throw;
    }
    if (Clock::now() >= deadline) {
      throw Error(ErrorCode::Bootstrap, "PE " + std::to_string(launch.rank) + ": no job key: the key file " + path +
                                            " that rank 0 writes as it starts did not appear within " + secondsText(timeoutSec) +
                                            " (AXON_TIMEOUT): rank 0 did not start, or runs on another node; " + k.advice_);
    }
    if (!hinted && Clock::now() >= hintAt && hintAt < deadline) {
      hinted = true;
      log(LogLevel::Warn, launch.rank, "still waiting for the job key file " + path + " that rank 0 writes as it starts (up to " +
                                           secondsText(timeoutSec) + ", AXON_TIMEOUT); " + k.advice_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 50 ? 10 : 100));
  }
}

bool JobKey::reload() {
  if (readPath_.empty() || !writtenPath_.empty()) return false;  // given outright, or rank 0's own
  try {
    Secret again = Secret::fromFile(readPath_);
    if (equalInConstantTime(again.bytes(), key_.bytes())) return false;
    key_ = std::move(again);
    return true;
  } catch (const Error&) {
    return false;  // gone (rank 0 failed and removed it) or unreadable: the refusal stands
  }
}

}  // namespace axon
