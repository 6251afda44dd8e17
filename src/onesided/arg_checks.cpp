#include "onesided/arg_checks.hpp"

#include <string>

#include "axon/error.hpp"
#include "core/pe_context.hpp"

namespace axon {

void checkLocal(const void* p, std::size_t bytes, const char* api, const char* role) {
  if (bytes > 0 && !p) {
    throw Error(ErrorCode::InvalidArgument,
                std::string("axon: ") + api + ": " + role + " is null but " + std::to_string(bytes) +
                    " bytes were asked for");
  }
}

void checkSignalOp(SignalOp op, const char* api) {
  if (op != SignalOp::Set && op != SignalOp::Add) {
    throw Error(ErrorCode::InvalidArgument,
                std::string("axon: ") + api + ": signal op must be SignalOp::Set or SignalOp::Add");
  }
}

void checkCmp(Cmp cmp, const char* api) {
  if (static_cast<int>(cmp) < static_cast<int>(Cmp::Eq) || static_cast<int>(cmp) > static_cast<int>(Cmp::Le)) {
    throw Error(ErrorCode::InvalidArgument, std::string("axon: ") + api + ": unknown comparison");
  }
}

RemoteRef resolveSignal(PeContext& rt, const std::uint64_t* sig, int pe, const char* api) {
  RemoteRef ref = rt.resolve(sig, sizeof(std::uint64_t), pe, api, "sig");
  if (reinterpret_cast<std::uintptr_t>(sig) % alignof(std::uint64_t) != 0) {
    throw Error(ErrorCode::InvalidArgument, std::string("axon: ") + api + ": sig " + rt.describe(sig) +
                                                " is not 8-byte aligned");
  }
  return ref;
}

}  // namespace axon
