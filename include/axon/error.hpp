// axon::Error: every failure the library reports, with a machine-readable code.
#pragma once

#include <stdexcept>
#include <string>

namespace axon {

// Values match axon_status_t in axon.h (0 is success, 1 is "in progress").
enum class ErrorCode : int {
  InvalidArgument = -1,     // a bad value that is not one of the more specific cases below
  InvalidPe = -2,           // a PE outside the world or team
  OutOfBounds = -3,         // an address outside the symmetric heap, or a range past its allocation
  NotInitialized = -4,      // a call before init() or after finalize()
  AlreadyInitialized = -5,  // init() called twice
  Timeout = -6,             // a bounded wait ran past AXON_TIMEOUT
  PeerDead = -7,            // a PE we depend on exited or was killed
  Bootstrap = -8,           // the key-value store could not be reached or failed
  CollectiveMismatch = -9,  // PEs called a collective with different arguments
  OutOfMemory = -10,        // the heap cap or the backing store is exhausted
  System = -11,             // an operating-system call failed
  Unsupported = -12,        // no transport or build feature supports the request
  Internal = -13,           // a bug in axon: please report it
  Cuda = -14,               // a CUDA driver call failed (the message names the call and the error)
  Ucx = -15,                // a UCX call failed (the message names the call, the PE and the status)
  Truncated = -16,          // a message longer than the receive buffer (the message names both sizes)
  SpaceFull = -17,          // a staging server's memory is full (policy reject, or block past the timeout)
  Evicted = -18,            // a staging-space version was dropped (evicted, or past keep_versions)
  Incomplete = -19,         // a staging-space box was not fully written within the timeout (names the missing boxes)
  ServerLost = -20,         // a staging server this client reached died or shut down (names the server)
  PermissionDenied = -21,   // a connection did not prove the job's or the space's key (names what was refused)
  ServerUnreachable = -22,  // a staging server was never reached: refused, no such host, no greeting (names it)
};

// The name of a code, e.g. "Timeout".
const char* errorCodeName(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// An operating-system call failed; keeps errno.
class SystemError : public Error {
 public:
  SystemError(const std::string& what, int err);
  int sysErrno() const noexcept { return errno_; }

 private:
  int errno_;
};

}  // namespace axon
