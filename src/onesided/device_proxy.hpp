// The host proxy of the device API: it drains the ring where this PE's kernels post the one-sided
// requests they cannot carry out by load/store (axon/device/proxy_ring.hpp) and carries each out
// with the host API, whose router picks the transport (UCX across nodes, the staged path for a
// node-local GPU it cannot map). A client of the PE's progress engine, served by its thread alone
// (engineOnly): a request may wait (a put completes, a get returns its data), and the thread keeps
// serving while the program's own threads wait.
//
// Order: requests are carried out in ticket order, one at a time; before a request that follows
// one whose delivery may still be under way (a put, a signal), the proxy fences, so requests from
// one thread to one PE arrive in the order posted and a signal is never seen before its data.
//
// Errors: a request the host API refuses (an address outside the heap, a dead peer, a timeout) is
// logged with the host API's message, its slot's done word gets kProxyFailed (the kernel waiting
// on it prints a line and traps), and a failed request nobody waits for is also reported by the
// next device quiet and by the next host call into the GPU backend.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "axon/device/proxy_ring.hpp"
#include "axon/device/types.hpp"
#include "axon/error.hpp"
#include "axon/team.hpp"
#include "core/poll_pacer.hpp"
#include "gpu/device_requests.hpp"
#include "gpu/driver.hpp"

namespace axon::onesided {

class DeviceProxy final : public DeviceRequests {
 public:
  // `gpuHeapBase`: this PE's GPU heap, whose first bytes are the device barriers' control words
  // (increments to them are the runtime's own, not a user's signal). `nodeLocal[pe]`: shares this
  // node (kernels reach node-local PEs by load/store only).
  DeviceProxy(const gpu::DriverApi& cu, CUcontext ctx, int myPe, char* gpuHeapBase, std::vector<bool> nodeLocal);
  ~DeviceProxy() override;
  DeviceProxy(const DeviceProxy&) = delete;
  DeviceProxy& operator=(const DeviceProxy&) = delete;

  // What kernels get in Context::proxy.
  device::ProxyChannel channel() const override { return device::ProxyChannel{ring_, tickets_}; }

  bool progress() override;
  int armForSleep() override { return pacer_.sleepHint(); }
  bool engineOnly() const override { return true; }

  // The first failure of a request no kernel waited for, since the last call (then cleared); never
  // on the proxy's own thread, whose host calls must not take it for their own.
  std::optional<Error> takeError() override;

  // Device collectives on `team` (which spans nodes; `slot` is its team slot) run here, as the
  // host's blocking collectives, until forgetTeam(slot) (the team's destruction).
  void serveTeam(const Team& team, int slot) override;
  void forgetTeam(int slot) override;

 private:
  // Carries out one request (a copy of the slot's); returns the result words through `result`.
  void carryOut(const device::ProxyRequest& r, unsigned long long* result);
  // A device barrier's increment of a member's control word (no user allocation holds it).
  void addToControlWord(const device::ProxyRequest& r);
  // A device collective: the host's blocking collective on the team in the request's slot.
  void runCollective(const device::ProxyRequest& r);
  std::string describe(const device::ProxyRequest& r) const;
  void releaseResources() noexcept;

  const gpu::DriverApi& cu_;
  CUcontext ctx_;
  int myPe_;
  char* gpuHeapBase_;
  std::vector<bool> nodeLocal_;
  device::ProxyRing* ring_ = nullptr;          // pinned host memory, mapped for the GPU
  unsigned long long* tickets_ = nullptr;      // GPU memory: the next ticket
  std::uint64_t head_ = 0;                     // the next ticket to read (the engine's thread alone)
  bool threadReady_ = false;                   // the engine's thread has the context, relaxed capture
  bool unordered_ = false;                     // a delivery may be under way: fence before the next
  PollPacer pacer_;
  std::mutex errorMutex_;
  std::optional<Error> error_;
  std::mutex teamsMutex_;
  // By team slot: the teams device collectives may name. A Team held here keeps its state alive
  // until forgetTeam (its destruction) or this proxy's end; that state's teardown calls no transport.
  std::unordered_map<int, Team> teams_;
};

}  // namespace axon::onesided
