#include "axon/error.hpp"

#include <cstring>

namespace axon {

const char* errorCodeName(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument: return "InvalidArgument";
    case ErrorCode::InvalidPe: return "InvalidPe";
    case ErrorCode::OutOfBounds: return "OutOfBounds";
    case ErrorCode::NotInitialized: return "NotInitialized";
    case ErrorCode::AlreadyInitialized: return "AlreadyInitialized";
    case ErrorCode::Timeout: return "Timeout";
    case ErrorCode::PeerDead: return "PeerDead";
    case ErrorCode::Bootstrap: return "Bootstrap";
    case ErrorCode::CollectiveMismatch: return "CollectiveMismatch";
    case ErrorCode::OutOfMemory: return "OutOfMemory";
    case ErrorCode::System: return "System";
    case ErrorCode::Unsupported: return "Unsupported";
    case ErrorCode::Internal: return "Internal";
    case ErrorCode::Cuda: return "Cuda";
    case ErrorCode::Ucx: return "Ucx";
    case ErrorCode::Truncated: return "Truncated";
    case ErrorCode::SpaceFull: return "SpaceFull";
    case ErrorCode::Evicted: return "Evicted";
    case ErrorCode::Incomplete: return "Incomplete";
    case ErrorCode::ServerLost: return "ServerLost";
    case ErrorCode::PermissionDenied: return "PermissionDenied";
    case ErrorCode::ServerUnreachable: return "ServerUnreachable";
  }
  return "Unknown";
}

Error::Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}

SystemError::SystemError(const std::string& what, int err)
    : Error(ErrorCode::System, what + ": " + std::strerror(err)), errno_(err) {}

}  // namespace axon
