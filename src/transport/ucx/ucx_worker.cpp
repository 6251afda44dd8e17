#include "transport/ucx/ucx_worker.hpp"

#include <cstdlib>
#include <set>
#include <thread>
#include <utility>

namespace axon::ucx {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kCheckEvery = std::chrono::milliseconds(50);
constexpr int kSpinPolls = 4096;  // empty polls before a wait starts yielding the core
// After an endpoint is closed by force its requests complete (cancelled) within a few progress
// calls; this bounds that wait in case UCX misbehaves. Short, because it comes on top of
// AXON_TIMEOUT: across a link that went down, a forced close over TCP does not complete (endpoints
// use error mode NONE, where UCX leaves a forced close undefined), and a timed-out wait must still
// end close to its limit.
constexpr auto kCancelBound = std::chrono::milliseconds(500);

// Statuses that mean the peer or the way to it is gone, not a misuse of UCX.
bool peerFailure(ucs_status_t s) {
  return s == UCS_ERR_CONNECTION_RESET || s == UCS_ERR_ENDPOINT_TIMEOUT || s == UCS_ERR_UNREACHABLE ||
         s == UCS_ERR_CANCELED || s == UCS_ERR_REJECTED || s == UCS_ERR_TIMED_OUT;
}

}  // namespace

UcxWorker::UcxWorker(const UcxApi& api, const NetworkSetup& setup) : api_(api), setup_(setup) {
  const std::string me = "PE " + std::to_string(setup.myPe) + ": ";
  ucp_config_t* config = nullptr;
  ucxCheck(api_.ucp_config_read(nullptr, nullptr, &config), me + "ucp_config_read");
  // Where no transport does RMA or atomics itself (TCP, shared memory without a shared mapping),
  // UCX emulates them over active messages, served by the target's progress. Newer UCX leaves that
  // off unless asked; a user's own UCX_PROTO_EMULATION_ENABLE wins, and an older UCX, which
  // emulates anyway, does not know the key.
  if (!std::getenv("UCX_PROTO_EMULATION_ENABLE")) api_.ucp_config_modify(config, "PROTO_EMULATION_ENABLE", "y");
  // One lane for eager messages (UCX's default, pinned): active messages to a PE then arrive in
  // the order sent, which the fence relies on (ucx_fence_ledger.hpp). Older UCX names it LANES.
  if (api_.ucp_config_modify(config, "MAX_EAGER_RAILS", "1") != UCS_OK) {
    api_.ucp_config_modify(config, "MAX_EAGER_LANES", "1");
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AMO32 | UCP_FEATURE_AMO64 | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  const ucs_status_t s = api_.ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context_);
  api_.ucp_config_release(config);
  ucxCheck(s, me + "ucp_init");
  try {
    ucp_worker_params_t wp{};
    wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wp.thread_mode = UCS_THREAD_MODE_MULTI;  // waits on any thread and the progress thread
    ucxCheck(api_.ucp_worker_create(context_, &wp, &worker_), me + "ucp_worker_create");
    ucxCheck(api_.ucp_worker_get_efd(worker_, &efd_), me + "ucp_worker_get_efd");
    ucp_address_t* addr = nullptr;
    std::size_t len = 0;
    ucxCheck(api_.ucp_worker_get_address(worker_, &addr, &len), me + "ucp_worker_get_address");
    address_.assign(reinterpret_cast<const char*>(addr), len);
    api_.ucp_worker_release_address(worker_, addr);
  } catch (...) {
    if (worker_) api_.ucp_worker_destroy(worker_);
    api_.ucp_cleanup(context_);
    throw;
  }
  for (int pe = 0; pe < setup.nPes; ++pe) {
    peers_.push_back(std::make_unique<Peer>());
    peers_.back()->owner = this;
    peers_.back()->pe = pe;
  }
}

UcxWorker::~UcxWorker() {
  // Every PE is past finalize's barrier: what is in flight is a reply nobody waits for. Let it
  // finish (briefly: a peer may be gone), then close by force, which never waits for a peer.
  ucp_request_param_t param{};
  ucs_status_ptr_t flush = api_.ucp_worker_flush_nbx(worker_, &param);
  if (UCS_PTR_IS_PTR(flush)) settle(flush);
  for (auto& p : peers_) {
    if (p->ep) closeEndpoint(p->pe, UCS_ERR_CANCELED);
  }
  api_.ucp_worker_destroy(worker_);
  api_.ucp_cleanup(context_);
}

void UcxWorker::connect(int pe, const std::string& address, const std::string& nodeName) {
  Peer& p = *peers_[pe];
  p.node = nodeName;
  ucp_ep_params_t params{};
  params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER;
  params.address = reinterpret_cast<const ucp_address_t*>(address.data());
  // Not UCP_ERR_HANDLING_MODE_PEER: see the header (no emulated atomics with it in UCX 1.22).
  params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  params.err_handler.cb = &UcxWorker::onEndpointError;
  params.err_handler.arg = &p;
  ucxCheck(api_.ucp_ep_create(worker_, &params, &p.ep),
           "PE " + std::to_string(setup_.myPe) + ": ucp_ep_create to " + describePe(pe));
  p.connected = true;
}

void UcxWorker::wireUp() {
  for (auto& p : peers_) {
    if (!p->ep) continue;
    ucp_request_param_t param{};
    wait(api_.ucp_ep_flush_nbx(p->ep, &param), p->pe, [&] { return "connecting to " + describePe(p->pe); });
  }
}

void UcxWorker::onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* p = static_cast<Peer*>(arg);
  int ok = UCS_OK;
  p->status.compare_exchange_strong(ok, status, std::memory_order_acq_rel);
}

void UcxWorker::setAmHandler(unsigned id, ucp_am_recv_callback_t cb, void* arg) {
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = id;
  p.cb = cb;
  p.arg = arg;
  ucxCheck(api_.ucp_worker_set_am_recv_handler(worker_, &p),
           "PE " + std::to_string(setup_.myPe) + ": ucp_worker_set_am_recv_handler (id " + std::to_string(id) + ")");
}

std::string UcxWorker::describePe(int pe) const {
  const std::string& node = peers_[pe]->node;
  return "PE " + std::to_string(pe) + (node.empty() ? "" : " (node " + node + ")");
}

ucp_ep_h UcxWorker::endpoint(int pe, const char* what) const {
  const Peer& p = *peers_[pe];
  const auto status = static_cast<ucs_status_t>(p.status.load(std::memory_order_acquire));
  if (status != UCS_OK) {
    throw Error(ErrorCode::PeerDead, "PE " + std::to_string(setup_.myPe) + ": " + what + " to " + describePe(pe) +
                                         ": its UCX endpoint failed earlier: " + statusText(status));
  }
  if (!p.ep) {
    throw Error(ErrorCode::Internal, "PE " + std::to_string(setup_.myPe) + ": " + what + ": no UCX endpoint to " +
                                         describePe(pe) + " (a PE on this node takes another path)");
  }
  return p.ep;
}

void UcxWorker::closeEndpoint(int pe, ucs_status_t why) {
  std::lock_guard lock(closeMutex_);
  Peer& p = *peers_[pe];
  if (!p.ep) return;
  int ok = UCS_OK;
  p.status.compare_exchange_strong(ok, why, std::memory_order_acq_rel);
  ucp_request_param_t param{};
  param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
  param.flags = UCP_EP_CLOSE_FLAG_FORCE;
  ucs_status_ptr_t req = api_.ucp_ep_close_nbx(p.ep, &param);
  p.ep = nullptr;
  if (UCS_PTR_IS_PTR(req)) settle(req);
}

void UcxWorker::settle(ucs_status_ptr_t request) {
  const auto end = Clock::now() + kCancelBound;
  while (api_.ucp_request_check_status(request) == UCS_INPROGRESS && Clock::now() < end) {
    api_.ucp_worker_progress(worker_);
  }
  api_.ucp_request_free(request);
}

Error UcxWorker::failure(ucs_status_t status, const std::string& what) const {
  const std::string me = "PE " + std::to_string(setup_.myPe) + ": ";
  if (peerFailure(status)) return Error(ErrorCode::PeerDead, me + what + " failed: " + statusText(status));
  return UcxError(me + what, status);
}

void UcxWorker::wait(ucs_status_ptr_t request, int pe, const std::function<std::string()>& what) {
  if (request == nullptr) return;  // completed at once
  if (UCS_PTR_IS_ERR(request)) throw failure(UCS_PTR_STATUS(request), what());
  ucs_status_t status = UCS_INPROGRESS;
  try {
    pollUntil([&] { return (status = api_.ucp_request_check_status(request)) != UCS_INPROGRESS; }, pe, what);
  } catch (...) {
    // Given up on, the request is completed (cancelled) by the closing of its endpoint, so that it
    // cannot write into the caller's buffer once we have returned.
    settle(request);
    throw;
  }
  api_.ucp_request_free(request);
  if (status != UCS_OK) throw failure(status, what());
}

void UcxWorker::pollUntil(const std::function<bool()>& done, int pe, const std::function<std::string()>& what) {
  PolledHere here(*this);  // the progress engine's thread stands aside
  const auto start = Clock::now();
  const auto deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(setup_.timeoutSec));
  auto nextCheck = start + kCheckEvery;
  int polls = 0;
  while (!done()) {
    if (api_.ucp_worker_progress(worker_) != 0) continue;
    // Spin first: most requests complete within microseconds, and a yield is a system call (one
    // costs microseconds under a sandboxing kernel such as gVisor).
    if (++polls < kSpinPolls) continue;
    const auto now = Clock::now();
    if (now < nextCheck) {
      std::this_thread::yield();
      continue;
    }
    nextCheck = now + kCheckEvery;
    try {
      if (setup_.checkPeers) setup_.checkPeers();
    } catch (...) {
      if (pe >= 0) closeEndpoint(pe, UCS_ERR_CANCELED);
      throw;
    }
    if (now >= deadline) {
      if (pe >= 0) closeEndpoint(pe, UCS_ERR_TIMED_OUT);
      throw Error(ErrorCode::Timeout,
                  "PE " + std::to_string(setup_.myPe) + ": " + what() + " did not complete within " +
                      std::to_string(setup_.timeoutSec) + " s (AXON_TIMEOUT)" +
                      (pe >= 0 ? "; " + describePe(pe) + " may be unreachable, and later operations to it fail" : ""));
    }
  }
}

void UcxWorker::release(ucs_status_ptr_t request, int pe, const std::function<std::string()>& what) {
  if (request == nullptr) return;
  if (UCS_PTR_IS_ERR(request)) throw failure(UCS_PTR_STATUS(request), what());
  // Freed now, released by UCX when it completes; a failure shows in the endpoint's status.
  api_.ucp_request_free(request);
}

void UcxWorker::flush(const char* what) {
  ucp_request_param_t param{};
  wait(api_.ucp_worker_flush_nbx(worker_, &param), -1, [&] { return std::string(what) + " (flushing UCX)"; });
  // An nbi operation that failed surfaces here, as its endpoint's failure.
  std::string why;
  if (failedPeer(&why) >= 0) throw Error(ErrorCode::PeerDead, "PE " + std::to_string(setup_.myPe) + ": " + what + ": " + why);
}

void UcxWorker::flushTo(std::span<const int> pes, const char* what) {
  std::vector<std::pair<int, ucs_status_ptr_t>> open;
  open.reserve(pes.size());
  try {
    for (int pe : pes) {
      ucp_request_param_t param{};
      open.emplace_back(pe, api_.ucp_ep_flush_nbx(endpoint(pe, what), &param));
    }
    for (auto& [pe, request] : open) {
      const ucs_status_ptr_t r = std::exchange(request, nullptr);  // wait() frees or settles it
      wait(r, pe, [&, pe = pe] { return std::string(what) + " (flushing UCX's operations to " + describePe(pe) + ")"; });
    }
  } catch (...) {
    for (auto& [pe, request] : open) {
      if (request && UCS_PTR_IS_PTR(request)) settle(request);  // the flushes not waited for yet
    }
    throw;
  }
}

bool UcxWorker::progress() { return api_.ucp_worker_progress(worker_) != 0; }

int UcxWorker::armForSleep() {
  const ucs_status_t s = api_.ucp_worker_arm(worker_);
  if (s == UCS_ERR_BUSY) return kBusy;
  return s == UCS_OK ? efd_ : kNoFd;
}

int UcxWorker::failedPeer(std::string* why) const {
  for (const auto& p : peers_) {
    const auto status = static_cast<ucs_status_t>(p->status.load(std::memory_order_acquire));
    if (status == UCS_OK) continue;
    if (why) *why = "the UCX endpoint to " + describePe(p->pe) + " failed: " + statusText(status);
    return p->pe;
  }
  return -1;
}

std::string UcxWorker::transportsTo(int pe) const {
#if UCP_API_VERSION >= UCP_VERSION(1, 14)
  const Peer& p = *peers_[pe];
  if (!api_.ucp_ep_query || !p.ep) return "";
  ucp_transport_entry_t entries[16];
  ucp_ep_attr_t attr{};
  attr.field_mask = UCP_EP_ATTR_FIELD_TRANSPORTS;
  attr.transports.entries = entries;
  attr.transports.num_entries = 16;
  attr.transports.entry_size = sizeof(ucp_transport_entry_t);
  if (api_.ucp_ep_query(p.ep, &attr) != UCS_OK) return "";
  std::set<std::string> names;
  for (unsigned i = 0; i < attr.transports.num_entries; ++i) {
    if (entries[i].transport_name) names.insert(entries[i].transport_name);
  }
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
#else
  (void)pe;
  return "";
#endif
}

}  // namespace axon::ucx
