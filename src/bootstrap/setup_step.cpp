#include "bootstrap/setup_step.hpp"

#include "bootstrap/blob.hpp"
#include "bootstrap/bootstrap.hpp"

namespace axon {

std::string encodeStepContribution(const StepContribution& c) {
  wire::BlobWriter w(wire::BlobKind::Step);
  w.u8(c.failure ? 1 : 0);
  w.i32(c.failure ? static_cast<std::int32_t>(c.failure->code) : 0);
  w.str(c.failure ? c.failure->message : "");
  w.str(c.payload);
  return w.take();
}

StepContribution decodeStepContribution(const std::string& blob, const std::string& origin) {
  return wire::decodeBlob(blob, wire::BlobKind::Step, origin, [](wire::ByteReader& in) {
    StepContribution c;
    const std::uint8_t failed = in.u8();
    const std::int32_t code = in.i32();
    std::string message = in.str();
    c.payload = in.str();
    if (failed > 1) throw wire::Malformed("a failure flag of " + std::to_string(failed));
    if (failed) {
      // Codes are negative (axon_status_t); anything else was not written by axon.
      if (code >= 0 || code < static_cast<std::int32_t>(ErrorCode::Cuda)) {
        throw wire::Malformed("an error code of " + std::to_string(code));
      }
      c.failure = StepFailure{-1, static_cast<ErrorCode>(code), std::move(message)};
    }
    return c;
  });
}

SetupStep::SetupStep(Bootstrap& boot, std::string tag, std::vector<int> ranks, std::string what)
    : boot_(boot), tag_(std::move(tag)), round_(boot.nextRound(tag_)), ranks_(std::move(ranks)), what_(std::move(what)) {}

std::string SetupStep::postedKey() const { return "step-failed/" + tag_ + "/" + std::to_string(round_); }

std::string SetupStep::originOf(std::size_t member) const {
  return "PE " + std::to_string(ranks_[member]) + "'s contribution to '" + tag_ + "' (round " +
         std::to_string(round_) + ")";
}

void SetupStep::fail(ErrorCode code, const std::string& message) {
  // After checkPeers() threw, the error handed here is that member's, not ours.
  if (mine_ || peerFailed_) return;
  mine_ = StepFailure{boot_.rank(), code, message};
  try {
    boot_.store().set(postedKey(), encodeStepContribution({mine_, ""}));
  } catch (const Error&) {
    // The store is unreachable: the members learn of the failure at finish(), or of the store.
  }
}

void SetupStep::checkPeers() {
  const std::string key = postedKey();
  if (!boot_.store().check({key})[0]) return;
  // The first failure posted wins here; finish() reports the first in rank order, which is the
  // same error whenever only one member failed.
  const std::string blob = boot_.store().get({key}, "the failure posted in " + what_)[0];
  StepContribution c = decodeStepContribution(blob, "the failure posted to '" + tag_ + "'");
  if (!c.failure) return;
  peerFailed_ = true;
  throw Error(c.failure->code, "PE " + std::to_string(boot_.rank()) + ": " + what_ + " failed on another PE: " +
                                   c.failure->message);
}

SetupStep::Outcome SetupStep::settle(const std::string& payload) {
  const auto all = boot_.gatherRound(tag_, round_, ranks_, encodeStepContribution({mine_, mine_ ? "" : payload}));
  Outcome out;
  out.payloads.reserve(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    StepContribution c = decodeStepContribution(all[i], originOf(i));
    if (c.failure && !out.failure) {
      out.failure = std::move(c.failure);
      out.failure->pe = ranks_[i];
    }
    out.payloads.push_back(std::move(c.payload));
  }
  if (mine_) {
    // Tidying only: the step is settled, and PE 0 (which serves the store) may already be gone
    // with the error in hand.
    try {
      boot_.store().del(postedKey());
    } catch (const Error&) {
    }
  }
  return out;
}

std::string StepFailure::said() const {
  const std::string prefix = "PE " + std::to_string(pe) + ": ";
  return message.rfind(prefix, 0) == 0 ? message.substr(prefix.size()) : message;
}

void SetupStep::raise(const StepFailure& f) const {
  const std::string where = f.pe == boot_.rank() ? "" : " on PE " + std::to_string(f.pe);
  throw Error(f.code, "PE " + std::to_string(boot_.rank()) + ": " + what_ + " failed" + where + ": " + f.said());
}

std::vector<std::string> SetupStep::finish(const std::string& payload) {
  Outcome out = settle(payload);
  if (out.failure) raise(*out.failure);
  return std::move(out.payloads);
}

}  // namespace axon
