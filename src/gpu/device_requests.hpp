// The host side of the device API's proxy ring, as the GPU backend holds it: kernels post the
// one-sided requests they cannot carry out by load/store (PEs on other nodes), and the proxy
// (onesided/device_proxy.hpp, built beside the backend) carries them out with the host API. A
// client of the PE's progress engine.
#pragma once

#include <optional>

#include "axon/device/types.hpp"
#include "axon/error.hpp"
#include "axon/team.hpp"
#include "core/progress_engine.hpp"

namespace axon {

class DeviceRequests : public ProgressClient {
 public:
  // What kernels get in Context::proxy.
  virtual device::ProxyChannel channel() const = 0;
  // The first failure of a request no kernel waited for, since the last call (then cleared).
  virtual std::optional<Error> takeError() = 0;
  // Device collectives on `team` (which spans nodes; `slot` is its team slot) run through the
  // proxy until forgetTeam(slot).
  virtual void serveTeam(const Team& team, int slot) = 0;
  virtual void forgetTeam(int slot) = 0;
};

}  // namespace axon
