#include "p2p/matcher.hpp"

#include <algorithm>

#include "axon/error.hpp"

namespace axon::p2p {

Matcher::Matcher(int members, std::size_t unexpectedLimit)
    : members_(members), limit_(unexpectedLimit), refused_(static_cast<std::size_t>(members), false) {}

Matcher::ArriveResult Matcher::arrive(const Arrival& a) {
  const int source = a.envelope.source;
  if (source < 0 || source >= members_ || a.envelope.tag < 0) {
    throw Error(ErrorCode::Internal, "a message from source " + std::to_string(source) + " with tag " +
                                         std::to_string(a.envelope.tag) + " reached the matcher of a team of " +
                                         std::to_string(members_));
  }
  auto refused = refused_[static_cast<std::size_t>(source)];  // vector<bool>: a reference proxy
  auto match = std::find_if(posted_.begin(), posted_.end(),
                            [&](const PostedReceive& r) { return accepts(r.source, r.tag, a.envelope); });
  if (match != posted_.end()) {
    const PostedReceive r = *match;
    posted_.erase(match);
    refused = false;
    return {Outcome::Matched, r};
  }
  refused = heldBytes_ + a.heldBytes > limit_;
  if (refused) return {Outcome::Refused, {}};
  unexpected_.push_back(a);
  heldBytes_ += a.heldBytes;
  return {Outcome::Queued, {}};
}

std::optional<Arrival> Matcher::post(const PostedReceive& r) {
  auto match = std::find_if(unexpected_.begin(), unexpected_.end(),
                            [&](const Arrival& a) { return accepts(r.source, r.tag, a.envelope); });
  // Either way a refused message may now go in: this receive may accept it, or its room is made.
  changed_ = true;
  if (match == unexpected_.end()) {
    posted_.push_back(r);
    return std::nullopt;
  }
  const Arrival a = *match;
  unexpected_.erase(match);
  heldBytes_ -= a.heldBytes;
  return a;
}

std::optional<Envelope> Matcher::probe(int source, int tag) const {
  for (const Arrival& a : unexpected_) {
    if (accepts(source, tag, a.envelope)) return a.envelope;
  }
  return std::nullopt;
}

bool Matcher::cancel(std::uint64_t cookie) {
  auto it = std::find_if(posted_.begin(), posted_.end(), [&](const PostedReceive& r) { return r.cookie == cookie; });
  if (it == posted_.end()) return false;
  posted_.erase(it);
  return true;
}

std::vector<int> Matcher::retry() {
  std::vector<int> sources;
  if (!changed_) return sources;
  changed_ = false;
  for (int s = 0; s < members_; ++s) {
    if (refused_[static_cast<std::size_t>(s)]) sources.push_back(s);
  }
  return sources;
}

std::string Matcher::describeUnexpected(std::size_t max) const {
  std::string out;
  std::size_t n = 0;
  for (const Arrival& a : unexpected_) {
    if (n == max) {
      out += ", and " + std::to_string(unexpected_.size() - n) + " more";
      break;
    }
    out += (n ? ", " : "") + std::string("(source ") + std::to_string(a.envelope.source) + ", tag " +
           std::to_string(a.envelope.tag) + ", " + std::to_string(a.envelope.bytes) + " B)";
    ++n;
  }
  return out.empty() ? "none" : out;
}

}  // namespace axon::p2p
