// One UCX context and worker per PE (thread mode multi: any thread may call), an endpoint to each
// PE on another node, and bounded waits for UCX requests. A failure UCX reports on an endpoint is
// recorded and named in later errors. Endpoints do not ask for UCX's peer error handling: with it,
// UCX 1.22 offers no emulated atomics over TCP (no protocol at all for a posted atomic), so a dead
// peer is found by the store (its connection closes) and a lost link by the bounded waits here.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "core/progress_engine.hpp"
#include "transport/network_transport.hpp"
#include "transport/ucx/ucx_api.hpp"

namespace axon::ucx {

class UcxWorker final : public ProgressClient {
 public:
  UcxWorker(const UcxApi& api, const NetworkSetup& setup);
  ~UcxWorker() override;
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  const UcxApi& api() const { return api_; }
  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  const NetworkSetup& setup() const { return setup_; }
  const std::string& address() const { return address_; }

  void connect(int pe, const std::string& address, const std::string& nodeName);
  // Flushes every endpoint, which completes once it is wired up: keys unpacked on an endpoint
  // still wiring up keep the protocols of its temporary configuration (UCX then finds no protocol
  // for atomics on the final one).
  void wireUp();
  // Whether an endpoint to `pe` was made at set-up (it may have failed since).
  bool connected(int pe) const noexcept {
    return pe >= 0 && static_cast<std::size_t>(pe) < peers_.size() && peers_[pe]->connected;
  }
  // The endpoint to `pe`; throws (PeerDead or Ucx) naming the PE when it failed or never existed.
  ucp_ep_h endpoint(int pe, const char* what) const;
  const std::string& nodeName(int pe) const { return peers_[pe]->node; }
  // "PE 3 (node axon-node1)", for messages.
  std::string describePe(int pe) const;
  // Registers `cb` (with `arg`) for active message `id` (ucx_am_ids.hpp); a null cb removes it.
  void setAmHandler(unsigned id, ucp_am_recv_callback_t cb, void* arg);

  // Waits for `request` (the result of a *_nbx call to `pe`), progressing the worker, bounded by
  // AXON_TIMEOUT; `what` describes the operation for errors ("put of 8 bytes to PE 2 ..."). A
  // request still open at the timeout is cancelled by closing the endpoint, so nothing writes into
  // the caller's buffer afterwards, and later operations to that PE fail at once.
  void wait(ucs_status_ptr_t request, int pe, const std::function<std::string()>& what);
  // Progresses the worker until done() holds, bounded and checked as wait() is; a wait given up
  // on closes the endpoint to `pe` (when not -1), so that later operations to it fail at once.
  void pollUntil(const std::function<bool()>& done, int pe, const std::function<std::string()>& what);
  // Lets go of a request nobody waits for (nbi operations); completion is found by flush.
  void release(ucs_status_ptr_t request, int pe, const std::function<std::string()>& what);
  // Every operation issued so far is complete (remotely, for puts), bounded as wait() is.
  void flush(const char* what);
  // The same for the operations to `pes` alone (their endpoints): every flush is posted first, so
  // their round trips overlap; a timeout names the PE whose flush did not complete.
  void flushTo(std::span<const int> pes, const char* what);

  bool progress() override;
  int armForSleep() override;

  int failedPeer(std::string* why) const;
  std::string transportsTo(int pe) const;  // "tcp", or "" when UCX cannot tell (before 1.14)

 private:
  struct Peer {
    UcxWorker* owner = nullptr;
    int pe = -1;
    std::string node;
    ucp_ep_h ep = nullptr;
    bool connected = false;           // an endpoint was made (set-up only; ep goes null when closed)
    std::atomic<int> status{UCS_OK};  // the endpoint's failure, once it failed
  };
  static void onEndpointError(void* arg, ucp_ep_h ep, ucs_status_t status);
  // The error for a request to `pe` (-1: the worker) that ended with `status`.
  Error failure(ucs_status_t status, const std::string& what) const;
  void closeEndpoint(int pe, ucs_status_t why);
  // Progresses until `request` is no longer in progress, for kCancelBound at most (it completes
  // within a few polls unless UCX misbehaves or a peer is gone), then frees it.
  void settle(ucs_status_ptr_t request);

  const UcxApi& api_;
  NetworkSetup setup_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int efd_ = -1;
  std::string address_;
  std::vector<std::unique_ptr<Peer>> peers_;  // [pe]; ep null for node-local PEs and this PE
  mutable std::mutex closeMutex_;             // one thread closes an endpoint
};

}  // namespace axon::ucx
