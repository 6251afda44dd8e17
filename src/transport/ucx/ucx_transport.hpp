// The UCX transport: one-sided operations on the heaps of PEs on other nodes. Every operation
// names the memory type of its local buffer (UCX would otherwise detect it, at 250-500 ns a call),
// signals are ordered after the data by a fence, and quiet is a worker flush. Atomics and signals
// go by active message where the NIC has no atomics (ucx_am_atomics.hpp).
//
// The fence is ours, not ucp_worker_fence: that one waits inside UCX (over TCP a flush of every
// endpoint) with no bound of ours, so a peer that stops answering held the caller forever. A
// fence flushes only the endpoints of PEs with operations it must order (ucx_fence_ledger.hpp),
// bounded by AXON_TIMEOUT and naming the PE; a signal or put_signal fences its own PE alone, and
// by active message it waits for none of the active messages before it, which arrive first
// anyway: with only active messages in flight (the collectives over TCP) it costs nothing. GPU
// data and fetching atomics are complete when their call returns.
#pragma once

#include "transport/network_transport.hpp"
#include "transport/ucx/ucx_am_atomics.hpp"
#include "transport/ucx/ucx_fence_ledger.hpp"
#include "transport/ucx/ucx_messages.hpp"
#include "transport/ucx/ucx_registry.hpp"
#include "transport/ucx/ucx_worker.hpp"
#include "transport/route.hpp"

namespace axon::ucx {

class UcxTransport final : public NetworkTransport {
 public:
  UcxTransport(const UcxApi& api, const NetworkSetup& setup)
      : worker_(api, setup), registry_(worker_), am_(worker_, registry_, setup.atomics),
        messages_(worker_, setup.messageEagerMax),
        fences_(setup.nPes) {}

  const char* name() const noexcept override { return routeName(Route::Network); }
  bool reaches(int pe) const noexcept override;
  void put(const RemoteRef& dst, const void* src, std::size_t bytes) override;
  void get(void* dst, const RemoteRef& src, std::size_t bytes) override;
  void putNbi(const RemoteRef& dst, const void* src, std::size_t bytes) override;
  void getNbi(void* dst, const RemoteRef& src, std::size_t bytes) override;
  void putSignal(const RemoteRef& dst, const void* src, std::size_t bytes, const RemoteRef& sig, std::uint64_t value,
                 SignalOp op, bool nbi) override;
  void signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) override;
  void atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand, const void* cond,
              void* result) override;
  void fence() override;
  void quiet() override;

  std::string version() const override { return worker_.api().version(); }
  std::string address() const override { return worker_.address(); }
  void connect(int pe, const std::string& address, const std::string& nodeName) override {
    worker_.connect(pe, address, nodeName);
  }
  void finishConnecting() override {
    worker_.wireUp();
    am_.choosePaths();
  }
  std::string registration(const HeapSpace& heap, std::size_t from) override { return registry_.registration(heap, from); }
  void acceptRegistration(int pe, const std::string& reg, const std::string& origin) override {
    registry_.accept(pe, reg, origin);
  }
  std::string exposeRegion(std::size_t bytes, std::uint32_t& id, void*& base) override {
    return registry_.exposeRegion(bytes, id, base);
  }
  void withdrawRegion(std::uint32_t id) override { registry_.withdrawRegion(id); }
  void forgetRegion(int pe, std::uint32_t id) override { registry_.forgetRegion(pe, id); }
  std::string pathTo(int pe) const override;
  std::string describe() const override;
  int failedPeer(std::string* why) const override { return worker_.failedPeer(why); }
  p2p::Channel& messageChannel() override { return messages_; }

  bool progress() override { return worker_.progress(); }
  int armForSleep() override { return worker_.armForSleep(); }

 private:
  bool onDevice(const void* local) const {
    const auto& isDevice = worker_.setup().isDeviceMemory;
    return local && isDevice && isDevice(local);
  }
  // The parameters of an operation whose local buffer is `local`: its memory type always given.
  ucp_request_param_t paramsFor(const void* local) const;
  // Issues op(rkey, remoteAddress, offsetInAccess, bytes, params) for each registered piece and
  // waits for each (or, with wait false, lets it complete by itself: nbi).
  template <class Op>
  void rma(const RemoteRef& ref, std::size_t bytes, const void* local, const char* what, bool wait, Op&& op);
  std::string describeOp(const char* what, const RemoteRef& ref, std::size_t bytes) const;
  // What was issued to `pe` before lands before anything issued after this: its RMA, and its
  // active messages too when `activeMessagesToo` (not needed before another active message).
  void fenceTo(int pe, bool activeMessagesToo);

  UcxWorker worker_;
  UcxRegistry registry_;
  UcxAmAtomics am_;
  UcxMessages messages_;
  UcxFenceLedger fences_;
};

}  // namespace axon::ucx
