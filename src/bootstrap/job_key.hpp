// The job key: the secret that every PE of a job proves to the store (bootstrap/store_handshake.hpp)
// and that a stranger lacks. docs/security.md, "Job key", says who makes it and how it travels.
//
// Where it comes from, first match wins:
//   AXON_JOB_KEY       hex digits (axon run sets it, a fresh key per job)
//   AXON_JOB_KEY_FILE  a file of this user's, mode 0600, holding the hex digits
//   a world of one     a fresh key in memory (its only client is itself)
//   otherwise          rank 0 makes one and writes it to a file in a directory of this user's
//                      (keyFilePath); the other ranks read it there, waiting up to the timeout, and
//                      rank 0 removes it once every PE has met (its first rendezvous of the whole
//                      world; finalize otherwise). Ranks on other nodes see it only through a
//                      shared home directory; their error says what to set instead.
#pragma once

#include <string>

#include "axon/runtime.hpp"
#include "core/env.hpp"
#include "core/secret.hpp"

namespace axon {

class JobKey {
 public:
  // This PE's key for `launch`. Throws InvalidArgument / PermissionDenied for a bad key or key
  // file (naming it), Bootstrap when rank 0's file does not appear within `timeoutSec`.
  static JobKey resolve(const JobKeyConfig& config, const LaunchInfo& launch, double timeoutSec);
  // A key given outright; `source` names it in messages.
  JobKey(Secret key, std::string source);
  JobKey(JobKey&& other) noexcept;
  JobKey& operator=(JobKey&& other) noexcept;
  JobKey(const JobKey&) = delete;
  JobKey& operator=(const JobKey&) = delete;
  ~JobKey();

  const Secret& secret() const { return key_; }
  // Where the key came from, for messages ("AXON_JOB_KEY", "the key file /run/user/1000/...").
  const std::string& source() const { return source_; }
  // A key read from rank 0's file may be an earlier job's (a file left behind by a crash, then
  // replaced): reads the file again. True when it now holds another key.
  bool reload();
  // What to do when the store refuses this key, for the error ("" when the key was given).
  const std::string& advice() const { return advice_; }
  // Rank 0: removes the key file it wrote (once the whole world has met; finalize). Safe to call
  // twice.
  void removeFile();

 private:
  JobKey() = default;
  Secret key_;
  std::string source_;
  std::string advice_;
  std::string readPath_;     // the file it was read from, to read again (rank 0's file)
  std::string writtenPath_;  // the file rank 0 wrote, to remove
};

// The file rank 0 writes the key of `launch` to when none is given: in $XDG_RUNTIME_DIR/axon/keys
// for a job on one node, else in ~/.axon/keys; named after the launcher's job id and the store
// address. Throws Bootstrap when neither directory is known.
std::string jobKeyFilePath(const JobKeyConfig& config, const LaunchInfo& launch);

}  // namespace axon
