#include "p2p/matcher.hpp"

#include <algorithm>

#include "axon/error.hpp"

namespace axon::p2p {

Matcher::Matcher(int members) : members_(members) {}

std::optional<PostedReceive> Matcher::arrive(const Arrival& a) {
  const int source = a.envelope.source;
  if (source < 0 || source >= members_ || a.envelope.tag < 0) {
    throw Error(ErrorCode::Internal, "a message from source " + std::to_string(source) + " with tag " +
                                         std::to_string(a.envelope.tag) + " reached the matcher of a team of " +
                                         std::to_string(members_));
  }
  auto match = std::find_if(posted_.begin(), posted_.end(),
                            [&](const PostedReceive& r) { return accepts(r.source, r.tag, a.envelope); });
  if (match != posted_.end()) {
    const PostedReceive r = *match;
    posted_.erase(match);
    return r;
  }
  unexpected_.push_back(a);
  heldBytes_ += a.heldBytes;
  return std::nullopt;
}

std::optional<Arrival> Matcher::post(const PostedReceive& r) {
  auto match = std::find_if(unexpected_.begin(), unexpected_.end(),
                            [&](const Arrival& a) { return accepts(r.source, r.tag, a.envelope); });
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

std::optional<PostedReceive> Matcher::onlyFrom(int source) const {
  std::optional<PostedReceive> found;
  for (const PostedReceive& r : posted_) {
    if (r.source != source && r.source != kAnySource) continue;
    if (found || r.source != source) return std::nullopt;
    found = r;
  }
  return found;
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
