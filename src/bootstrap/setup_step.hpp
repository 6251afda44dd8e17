// One collective set-up step: every member contributes a payload or the failure it met, and
// learns everyone's, so a failure on any PE becomes the same error on every PE (the failing
// member first in the order of `ranks` wins) and nobody waits for a PE that gave up. Every
// set-up exchange of the runtime (init, heap calls, teams, workspaces, the GPU backend) is one.
//
// A contribution is one store value (bootstrap/blob.hpp, kind Step):
// [u8 failed][i32 error code][str message][str payload].
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "axon/error.hpp"

namespace axon {

class Bootstrap;

struct StepFailure {
  int pe = -1;  // the world rank that failed
  ErrorCode code = ErrorCode::Internal;
  std::string message;

  // The message without the "PE x: " it may start with (axon's messages name their PE first).
  std::string said() const;
  // "PE x: <said>".
  std::string text() const { return "PE " + std::to_string(pe) + ": " + said(); }
};

struct StepContribution {
  std::optional<StepFailure> failure;  // pe is filled in by the reader
  std::string payload;
};

std::string encodeStepContribution(const StepContribution& c);
// Throws Error(Bootstrap) naming `origin` when `blob` is not a step contribution.
StepContribution decodeStepContribution(const std::string& blob, const std::string& origin);

class SetupStep {
 public:
  // `tag` names the step in the store (one round of it per construction, in the same order on
  // every member); `what` names it in messages ("team world.3's collective workspace").
  SetupStep(Bootstrap& boot, std::string tag, std::vector<int> ranks, std::string what);

  // Records this PE's failure and posts it at once, so that members waiting inside the step for
  // something other than the store (file descriptors from this PE, ...) stop at their next
  // checkPeers() instead of running into their timeout. The first failure recorded is kept.
  void fail(ErrorCode code, const std::string& message);
  void fail(const Error& e) { fail(e.code(), e.what()); }
  bool failed() const { return mine_.has_value(); }

  // For waits inside the step: throws the failure a member posted, if any (one store round trip).
  // Passing that error on to fail() records nothing: the member's own failure arrives at finish().
  void checkPeers();

  // Contributes `payload` (or the failure recorded) and returns every member's payload in the order
  // of the ranks. When any member failed, every member throws that member's error code with
  // "PE me: <what> failed on PE x: <its message>" ("failed: ..." on the PE that failed).
  std::vector<std::string> finish(const std::string& payload = "");

  // The same, but the failure is returned instead of thrown, as "PE x: message": for steps whose
  // failure means a fallback rather than an error.
  struct Outcome {
    std::vector<std::string> payloads;
    std::optional<StepFailure> failure;
  };
  Outcome settle(const std::string& payload = "");

  // Throws `f` as finish() does: its code, with "PE me: <what> failed on PE x: <said>".
  [[noreturn]] void raise(const StepFailure& f) const;

  // The origin to name when a member's payload is malformed: "PE 3's contribution to 'heap' (round 7)".
  std::string originOf(std::size_t member) const;

 private:
  std::string postedKey() const;

  Bootstrap& boot_;
  std::string tag_;
  long round_;
  std::vector<int> ranks_;
  std::string what_;
  std::optional<StepFailure> mine_;
  bool peerFailed_ = false;  // checkPeers() saw a member's failure
};

}  // namespace axon
