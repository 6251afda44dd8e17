#include "coll/describe_call.hpp"

#include "coll/request.hpp"

namespace axon::coll {

std::string describeCall(const CallDescription& d) {
  std::string s = std::string(collectiveName(d.collective)) + "(count " + std::to_string(d.count);
  if (d.type) s += std::string(", ") + dataTypeName(*d.type);
  if (reduces(d.collective)) s += std::string(", ") + reduceOpName(d.op);
  if (rooted(d.collective)) s += ", root " + std::to_string(d.root);
  return s + ", " + d.algorithm + ", " + d.detail + ")";
}

}  // namespace axon::coll
