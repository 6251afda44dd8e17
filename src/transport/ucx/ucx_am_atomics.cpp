#include "transport/ucx/ucx_am_atomics.hpp"

#include <cstring>
#include <memory>
#include <sstream>

#include "core/log.hpp"
#include "transport/apply_atomic.hpp"
#include "transport/ucx/ucx_am_ids.hpp"

namespace axon::ucx {
namespace {

// A handler's header as the sender's struct; false when its length differs (not ours: a peer of
// another build, which init refuses anyway).
template <class T>
bool readHeader(const void* header, std::size_t length, T& out) {
  if (length != sizeof(T)) return false;
  std::memcpy(&out, header, sizeof out);
  return true;
}

}  // namespace

// What travels: fixed-size, trivially copyable, the same build on every PE (init refuses mixed
// versions of axon and UCX).
struct UcxAmAtomics::Request {
  std::uint64_t offset;
  std::uint64_t operand;
  std::uint64_t compare;
  std::uint64_t token;  // 0: nobody waits for the old value
  std::uint32_t region;
  std::int32_t fromPe;
  std::uint8_t op;  // AtomicOp
  std::uint8_t width;  // 4 or 8; 0: no operation, only the reply (quiet)
  std::uint8_t heap;  // HeapKind
};

// Followed by the data (the message's payload), which lands at `offset` of heap `heap` (or region
// `region`) before `signal` is applied.
struct UcxAmAtomics::PutSignal {
  Request signal;
  std::uint64_t offset;
  std::uint32_t region;
  std::uint8_t heap;
};

// Followed by the data (a rendezvous), which the target receives at `offset` of its GPU heap, then
// answers `token` (Reply) once it is there.
struct GpuPutHeader {
  std::int32_t fromPe;
  std::uint64_t token;
  std::uint64_t offset;
};

struct UcxAmAtomics::Reply {
  static constexpr std::int32_t kBadAddress = 1;
  static constexpr std::int32_t kGpuFailed = 2;  // the target's kernel failed (its log says why)
  std::uint64_t token;
  std::uint64_t value;
  std::int32_t status;
};

bool hardwareAtomics(const std::string& transports) {
  std::stringstream in(transports);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.rfind("rc", 0) == 0 || name.rfind("dc", 0) == 0) return true;
  }
  return false;
}

UcxAmAtomics::UcxAmAtomics(UcxWorker& worker, const UcxRegistry& registry, RemoteAtomics path)
    : worker_(worker),
      registry_(registry),
      path_(path),
      useAm_(worker.setup().nPes, false),
      gpuAm_(worker.setup().nPes, false),
      unapplied_(new std::atomic<bool>[worker.setup().nPes]) {
  for (int pe = 0; pe < worker.setup().nPes; ++pe) unapplied_[pe].store(false, std::memory_order_relaxed);
  worker_.setAmHandler(kAmAtomic, &UcxAmAtomics::onRequest, this);
  worker_.setAmHandler(kAmAtomicReply, &UcxAmAtomics::onReply, this);
  worker_.setAmHandler(kAmPutSignal, &UcxAmAtomics::onPutSignal, this);
  worker_.setAmHandler(kAmGpuPut, &UcxAmAtomics::onGpuPut, this);
  worker_.setAmHandler(kAmGpuGet, &UcxAmAtomics::onGpuGet, this);
  worker_.setAmHandler(kAmGpuGetData, &UcxAmAtomics::onGpuGetData, this);
}

UcxAmAtomics::~UcxAmAtomics() {
  // The worker outlives this object: no handler may find it gone.
  worker_.setAmHandler(kAmAtomic, nullptr, this);
  worker_.setAmHandler(kAmAtomicReply, nullptr, this);
  worker_.setAmHandler(kAmPutSignal, nullptr, this);
  worker_.setAmHandler(kAmGpuPut, nullptr, this);
  worker_.setAmHandler(kAmGpuGet, nullptr, this);
  worker_.setAmHandler(kAmGpuGetData, nullptr, this);
}

void UcxAmAtomics::choosePaths() {
  for (int pe = 0; pe < worker_.setup().nPes; ++pe) {
    if (!worker_.connected(pe)) continue;
    gpuAm_[pe] = !hardwareAtomics(worker_.transportsTo(pe));
    switch (path_) {
      case RemoteAtomics::ActiveMessage: useAm_[pe] = true; break;
      case RemoteAtomics::Native: useAm_[pe] = false; break;
      // Unknown transports (UCX before 1.14 cannot tell) get active messages: right everywhere.
      case RemoteAtomics::Auto: useAm_[pe] = !hardwareAtomics(worker_.transportsTo(pe)); break;
    }
  }
}

const char* UcxAmAtomics::pathName(int pe) const {
  return pe >= 0 && static_cast<std::size_t>(pe) < useAm_.size() && useAm_[pe] ? "active messages" : "native";
}

std::string UcxAmAtomics::describe(const char* what, const RemoteRef& ref) const {
  return std::string(what) + " to " + worker_.describePe(ref.pe) + " at " + (ref.region ? "collective region " + std::to_string(ref.region) : std::string(heapKindName(ref.heap))) +
         " offset " + std::to_string(ref.offset) + ", by active message";
}

void UcxAmAtomics::send(int pe, unsigned id, const void* message, std::size_t bytes,
                        const std::function<std::string()>& what, const void* data, std::size_t dataBytes) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  p.memory_type = UCS_MEMORY_TYPE_HOST;
  ucp_ep_h ep = worker_.endpoint(pe, "atomic");
  worker_.wait(worker_.api().ucp_am_send_nbx(ep, id, message, bytes, data, dataBytes, &p), pe, what);
}

void UcxAmAtomics::sendFromHandler(int pe, unsigned id, const void* message, std::size_t bytes, const void* data,
                                   std::size_t dataBytes, bool dataOnDevice) {
  struct Box {
    const UcxApi* api;
    std::unique_ptr<char[]> bytes;
  };
  const UcxApi& api = worker_.api();
  ucp_ep_h ep = nullptr;
  try {
    ep = worker_.endpoint(pe, "atomic reply");
  } catch (const Error& e) {
    log(LogLevel::Warn, worker_.setup().myPe, std::string("dropping an atomic's reply: ") + e.what());
    return;
  }
  auto* box = new Box{&api, std::make_unique<char[]>(bytes)};
  std::memcpy(box->bytes.get(), message, bytes);
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FIELD_CALLBACK |
                   UCP_OP_ATTR_FIELD_USER_DATA;
  p.flags = data && dataBytes > kGpuEagerMax ? UCP_AM_SEND_FLAG_RNDV : UCP_AM_SEND_FLAG_EAGER;
  p.memory_type = data && dataOnDevice ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  p.cb.send = [](void* request, ucs_status_t, void* userData) {
    auto* b = static_cast<Box*>(userData);
    const UcxApi* a = b->api;
    delete b;
    a->ucp_request_free(request);
  };
  p.user_data = box;
  ucs_status_ptr_t req = api.ucp_am_send_nbx(ep, id, box->bytes.get(), bytes, data, data ? dataBytes : 0, &p);
  if (UCS_PTR_IS_PTR(req)) return;  // the callback frees the box
  delete box;
  if (UCS_PTR_IS_ERR(req)) {
    // The requester's wait ends at its timeout, or sooner when it learns this PE or link failed.
    log(LogLevel::Warn, worker_.setup().myPe,
        "an atomic's reply to PE " + std::to_string(pe) + " failed: " + statusText(UCS_PTR_STATUS(req)));
  }
}

namespace {
UcxAmAtomics::Request signalRequest(const RemoteRef& sig, std::uint64_t value, SignalOp op, int me) {
  UcxAmAtomics::Request r{};
  r.offset = sig.offset;
  r.operand = value;
  r.region = sig.region;
  r.fromPe = me;
  r.op = static_cast<std::uint8_t>(op == SignalOp::Set ? AtomicOp::Set : AtomicOp::Add);
  r.width = 8;
  r.heap = static_cast<std::uint8_t>(sig.heap);
  return r;
}
}  // namespace

void UcxAmAtomics::signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) {
  const Request r = signalRequest(sig, value, op, worker_.setup().myPe);
  unapplied_[sig.pe].store(true, std::memory_order_relaxed);
  send(sig.pe, kAmAtomic, &r, sizeof r, [&] { return describe("signal", sig); });
}

void UcxAmAtomics::putSignal(const RemoteRef& dst, const void* src, std::size_t bytes, const RemoteRef& sig,
                             std::uint64_t value, SignalOp op) {
  PutSignal m{};
  m.signal = signalRequest(sig, value, op, worker_.setup().myPe);
  m.offset = dst.offset;
  m.region = dst.region;
  m.heap = static_cast<std::uint8_t>(dst.heap);
  unapplied_[sig.pe].store(true, std::memory_order_relaxed);
  send(sig.pe, kAmPutSignal, &m, sizeof m, [&] { return describe("put_signal", sig); }, src, bytes);
}

void UcxAmAtomics::atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
                          const void* cond, void* result) {
  Request r{};
  r.offset = dst.offset;
  if (operand) std::memcpy(&r.operand, operand, width);
  if (cond) std::memcpy(&r.compare, cond, width);
  r.region = dst.region;
  r.fromPe = worker_.setup().myPe;
  r.op = static_cast<std::uint8_t>(op);
  r.width = static_cast<std::uint8_t>(width);
  r.heap = static_cast<std::uint8_t>(dst.heap);
  const auto what = [&] { return describe("atomic", dst); };
  const bool fetching = op != AtomicOp::Add && op != AtomicOp::Set;
  if (!fetching) {
    unapplied_[dst.pe].store(true, std::memory_order_relaxed);
    send(dst.pe, kAmAtomic, &r, sizeof r, what);
    return;
  }
  Awaited reply(*this);
  r.token = reply.token;
  send(dst.pe, kAmAtomic, &r, sizeof r, what);
  reply.wait(dst.pe, what);
  if (reply.status == Reply::kBadAddress) {
    throw Error(ErrorCode::InvalidArgument, "PE " + std::to_string(worker_.setup().myPe) + ": " + what() +
                                                ": the target has no registered memory there");
  }
  if (reply.status == Reply::kGpuFailed) {
    throw Error(ErrorCode::Cuda, "PE " + std::to_string(worker_.setup().myPe) + ": " + what() +
                                     ": the target's GPU could not apply it (its log says why)");
  }
  if (result) std::memcpy(result, &reply.value, width);
}

UcxAmAtomics::Awaited::Awaited(UcxAmAtomics& o) : owner(o) {
  std::lock_guard lock(owner.pendingMutex_);
  token = owner.nextToken_++;
  owner.pending_.emplace(token, this);
}

UcxAmAtomics::Awaited::~Awaited() {
  std::lock_guard lock(owner.pendingMutex_);
  owner.pending_.erase(token);
}

void UcxAmAtomics::Awaited::wait(int pe, const std::function<std::string()>& what) {
  owner.worker_.pollUntil([&] { return done.load(std::memory_order_acquire); }, pe, what);
}

void UcxAmAtomics::quiet() {
  std::vector<std::pair<int, std::unique_ptr<Awaited>>> replies;
  for (int pe = 0; pe < worker_.setup().nPes; ++pe) {
    if (unapplied_[pe].exchange(false, std::memory_order_relaxed)) replies.emplace_back(pe, std::make_unique<Awaited>(*this));
  }
  if (replies.empty()) return;
  // The request follows the messages before it on the endpoint (eager active messages arrive in
  // order; UcxTransport::quiet flushed the rest first), and the target answers it after them.
  for (auto& [pe, reply] : replies) {
    Request r{};
    r.fromPe = worker_.setup().myPe;
    r.width = 0;
    r.token = reply->token;
    send(pe, kAmAtomic, &r, sizeof r, [&] { return "quiet: the active messages to " + worker_.describePe(pe); });
  }
  for (auto& [pe, reply] : replies) {
    reply->wait(pe, [&] { return "quiet: the signals and atomics sent to " + worker_.describePe(pe) + " being applied there"; });
  }
}

void UcxAmAtomics::apply(const Request& r) {
  const auto heap = static_cast<HeapKind>(r.heap);
  const auto op = static_cast<AtomicOp>(r.op);
  Reply reply{r.token, 0, 0};
  if (r.width == 0) {  // quiet: everything before this message from that PE is applied
    if (r.token) sendFromHandler(r.fromPe, kAmAtomicReply, &reply, sizeof reply);
    return;
  }
  bool applied = false;
  const bool gpu = heap == HeapKind::Gpu;
  const auto& gpuAtomic = worker_.setup().gpuAtomic;
  if ((r.width == 4 || r.width == 8) && r.op <= static_cast<std::uint8_t>(AtomicOp::FetchXor) && (!gpu || gpuAtomic)) {
    registry_.withLocal(heap, r.region, r.offset, r.width, [&](char* word) {
      if (reinterpret_cast<std::uintptr_t>(word) % r.width != 0) return;
      applied = true;
      if (gpu) {
        // A one-thread kernel with system-scope atomics, waited for: after it, whoever reads the
        // word sees it, and the data UCX stored before this message is visible first.
        const bool fetching = op != AtomicOp::Add && op != AtomicOp::Set;
        try {
          gpuAtomic(op, word, r.width, &r.operand, &r.compare, fetching ? &reply.value : nullptr);
        } catch (const std::exception& e) {
          log(LogLevel::Error, worker_.setup().myPe,
              "an atomic from PE " + std::to_string(r.fromPe) + " on GPU heap offset " + std::to_string(r.offset) +
                  " failed: " + e.what());
          reply.status = Reply::kGpuFailed;
        }
        return;
      }
      // Sequentially consistent, so a signal is a release: the data its sender put before it,
      // which this PE's worker stored before this message, is seen by whoever sees the signal.
      if (r.width == 4) applyAtomic(op, reinterpret_cast<std::uint32_t*>(word), &r.operand, &r.compare, &reply.value);
      else applyAtomic(op, reinterpret_cast<std::uint64_t*>(word), &r.operand, &r.compare, &reply.value);
    });
  }
  if (!applied) {
    // The sender checked all of this against this PE's registration: a bug or a foreign message.
    log(LogLevel::Warn, worker_.setup().myPe,
        "an atomic from PE " + std::to_string(r.fromPe) + " names offset " + std::to_string(r.offset) +
            " of width " + std::to_string(r.width) + ", which this PE has not registered: ignored");
    reply.status = Reply::kBadAddress;
  }
  if (r.token) sendFromHandler(r.fromPe, kAmAtomicReply, &reply, sizeof reply);
}

ucs_status_t UcxAmAtomics::onRequest(void* arg, const void* header, std::size_t headerLength, void*, std::size_t,
                                     const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxAmAtomics*>(arg);
  Request r;
  if (!readHeader(header, headerLength, r)) return UCS_OK;
  if (r.fromPe < 0 || r.fromPe >= self->worker_.setup().nPes) return UCS_OK;
  self->apply(r);
  return UCS_OK;
}

ucs_status_t UcxAmAtomics::onPutSignal(void* arg, const void* header, std::size_t headerLength, void* data,
                                       std::size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxAmAtomics*>(arg);
  PutSignal m;
  if (!readHeader(header, headerLength, m)) return UCS_OK;
  const int me = self->worker_.setup().myPe;
  if (m.signal.fromPe < 0 || m.signal.fromPe >= self->worker_.setup().nPes) return UCS_OK;
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    // Sent eager (UCP_AM_SEND_FLAG_EAGER), so UCX never does this; were it to, say so.
    log(LogLevel::Error, me, "a put_signal from PE " + std::to_string(m.signal.fromPe) +
                                 " arrived as a rendezvous, which this PE does not take: its data and signal are lost");
    return UCS_OK;
  }
  const auto heap = static_cast<HeapKind>(m.heap);
  const bool landed = length == 0 || (heap != HeapKind::Gpu &&
                                      self->registry_.withLocal(heap, m.region, m.offset, length,
                                                                [&](char* dest) { std::memcpy(dest, data, length); }));
  if (!landed) {
    log(LogLevel::Warn, me, "a put_signal from PE " + std::to_string(m.signal.fromPe) + " names " +
                                std::to_string(length) + " bytes at offset " + std::to_string(m.offset) +
                                ", which this PE has not registered: ignored, and its signal with it");
    return UCS_OK;
  }
  self->apply(m.signal);  // a release: the data is seen first
  return UCS_OK;
}

void UcxAmAtomics::gpuPut(const RemoteRef& dst, const void* src, std::size_t bytes, bool srcOnDevice) {
  const auto what = [&] { return describe("put", dst); };
  Awaited reply(*this);
  const GpuPutHeader h{worker_.setup().myPe, reply.token, dst.offset};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  // Large data as a rendezvous, which the target receives straight into its GPU heap.
  p.flags = bytes <= kGpuEagerMax ? UCP_AM_SEND_FLAG_EAGER : UCP_AM_SEND_FLAG_RNDV;
  p.memory_type = srcOnDevice ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  ucp_ep_h ep = worker_.endpoint(dst.pe, "put");
  worker_.wait(worker_.api().ucp_am_send_nbx(ep, kAmGpuPut, &h, sizeof h, src, bytes, &p), dst.pe, what);
  reply.wait(dst.pe, what);
  checkGpuData(reply.status, what);
}

ucs_status_t UcxAmAtomics::onGpuPut(void* arg, const void* header, std::size_t headerLength, void* data,
                                    std::size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxAmAtomics*>(arg);
  GpuPutHeader h;
  if (!readHeader(header, headerLength, h)) return UCS_OK;
  const int me = self->worker_.setup().myPe;
  if (h.fromPe < 0 || h.fromPe >= self->worker_.setup().nPes) return UCS_OK;
  char* dest = nullptr;
  self->registry_.withLocal(HeapKind::Gpu, 0, h.offset, length, [&](char* d) { dest = d; });
  if (!dest) {
    log(LogLevel::Warn, me, "a put from PE " + std::to_string(h.fromPe) + " names " + std::to_string(length) +
                                " bytes at GPU heap offset " + std::to_string(h.offset) + ", which this PE has not registered");
    // Not received: returning UCS_OK lets UCX drop the rendezvous and acknowledge it.
    self->complete(Landing{self, h.fromPe, h.token}, Reply::kBadAddress);
    return UCS_OK;
  }
  self->land(Landing{self, h.fromPe, h.token}, data, length, param, dest, true, "a put into the GPU heap");
  return UCS_OK;
}

// A get's request (no data) and its answer (the data, as a rendezvous, or a status alone).
struct GpuGetHeader {
  std::int32_t fromPe;
  std::uint64_t token;
  std::uint64_t offset;
  std::uint64_t bytes;
};
struct GpuGetData {
  std::uint64_t token;
};

void UcxAmAtomics::gpuGet(void* dst, const RemoteRef& src, std::size_t bytes, bool dstOnDevice) {
  if (bytes == 0) return;
  const auto what = [&] { return describe("get", src); };
  Awaited reply(*this);
  reply.landing = dst;
  reply.landingBytes = bytes;
  reply.landingOnDevice = dstOnDevice;
  const GpuGetHeader h{worker_.setup().myPe, reply.token, src.offset, bytes};
  send(src.pe, kAmGpuGet, &h, sizeof h, what);
  reply.wait(src.pe, what);
  checkGpuData(reply.status, what);
}

ucs_status_t UcxAmAtomics::onGpuGet(void* arg, const void* header, std::size_t headerLength, void*, std::size_t,
                                    const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxAmAtomics*>(arg);
  GpuGetHeader h;
  if (!readHeader(header, headerLength, h)) return UCS_OK;
  if (h.fromPe < 0 || h.fromPe >= self->worker_.setup().nPes) return UCS_OK;
  const char* source = nullptr;
  self->registry_.withLocal(HeapKind::Gpu, 0, h.offset, h.bytes, [&](char* s) { source = s; });
  if (!source) {
    log(LogLevel::Warn, self->worker_.setup().myPe,
        "a get from PE " + std::to_string(h.fromPe) + " names " + std::to_string(h.bytes) + " bytes at GPU heap offset " +
            std::to_string(h.offset) + ", which this PE has not registered");
    self->complete(Landing{self, h.fromPe, h.token}, Reply::kBadAddress);
    return UCS_OK;
  }
  // The heap stays mapped while the job runs: UCX may read it after this handler returns.
  const GpuGetData d{h.token};
  self->sendFromHandler(h.fromPe, kAmGpuGetData, &d, sizeof d, source, h.bytes, true);
  return UCS_OK;
}

ucs_status_t UcxAmAtomics::onGpuGetData(void* arg, const void* header, std::size_t headerLength, void* data,
                                        std::size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxAmAtomics*>(arg);
  GpuGetData d;
  if (!readHeader(header, headerLength, d)) return UCS_OK;
  void* landing = nullptr;
  bool onDevice = false;
  {
    std::lock_guard lock(self->pendingMutex_);
    auto it = self->pending_.find(d.token);
    // A wait that already ended (timed out, failed), or an answer of the wrong size: dropped
    // (UCX acknowledges a rendezvous nobody receives).
    if (it == self->pending_.end() || it->second->landingBytes != length) return UCS_OK;
    landing = it->second->landing;
    onDevice = it->second->landingOnDevice;
  }
  self->land(Landing{self, -1, d.token}, data, length, param, landing, onDevice, "a get's data");
  return UCS_OK;
}

void UcxAmAtomics::land(Landing to, void* data, std::size_t length, const ucp_am_recv_param_t* param, void* dest,
                        bool onDevice, const char* what) {
  const int me = worker_.setup().myPe;
  if (!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV)) {
    // Small enough that UCX sent it along (host memory here): one copy to its place.
    std::int32_t status = 0;
    try {
      if (onDevice && length) worker_.setup().gpuCopy(dest, data, length);
      else std::memcpy(dest, data, length);
    } catch (const std::exception& e) {
      log(LogLevel::Error, me, std::string(what) + " could not be copied to GPU memory: " + e.what());
      status = Reply::kGpuFailed;
    }
    complete(to, status);
    return;
  }
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.memory_type = onDevice ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  p.cb.recv_am = [](void* request, ucs_status_t status, std::size_t, void* user) {
    auto* l = static_cast<Landing*>(user);
    if (status != UCS_OK) log(LogLevel::Error, l->self->worker_.setup().myPe, "receiving data failed: " + statusText(status));
    l->self->complete(*l, status == UCS_OK ? 0 : Reply::kGpuFailed);
    l->self->worker_.api().ucp_request_free(request);
    delete l;
  };
  auto* held = new Landing(to);
  p.user_data = held;
  ucs_status_ptr_t req = worker_.api().ucp_am_recv_data_nbx(worker_.worker(), data, dest, length, &p);
  if (UCS_PTR_IS_PTR(req)) return;  // the callback completes it
  delete held;
  if (UCS_PTR_IS_ERR(req)) log(LogLevel::Error, me, std::string("receiving ") + what + " failed: " + statusText(UCS_PTR_STATUS(req)));
  complete(to, UCS_PTR_IS_ERR(req) ? Reply::kGpuFailed : 0);
}

void UcxAmAtomics::complete(const Landing& to, std::int32_t status) {
  if (to.answerPe < 0) {
    finish(to.token, status);
    return;
  }
  const Reply r{to.token, 0, status};
  sendFromHandler(to.answerPe, kAmAtomicReply, &r, sizeof r);
}

void UcxAmAtomics::checkGpuData(std::int32_t status, const std::function<std::string()>& what) const {
  if (status == Reply::kBadAddress) {
    throw Error(ErrorCode::InvalidArgument, "PE " + std::to_string(worker_.setup().myPe) + ": " + what() +
                                                ": the target has no registered GPU heap there");
  }
  if (status != 0) {
    throw Error(ErrorCode::Ucx, "PE " + std::to_string(worker_.setup().myPe) + ": " + what() +
                                    ": the data could not be moved (the log of this PE or the target says why)");
  }
}

void UcxAmAtomics::finish(std::uint64_t token, std::int32_t status, std::uint64_t value) {
  std::lock_guard lock(pendingMutex_);
  auto it = pending_.find(token);
  if (it == pending_.end()) return;  // its wait already ended
  it->second->value = value;
  it->second->status = status;
  it->second->done.store(true, std::memory_order_release);
  pending_.erase(it);
}

ucs_status_t UcxAmAtomics::onReply(void* arg, const void* header, std::size_t headerLength, void*, std::size_t,
                                   const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxAmAtomics*>(arg);
  Reply r;
  if (!readHeader(header, headerLength, r)) return UCS_OK;
  self->finish(r.token, r.status, r.value);
  return UCS_OK;
}

}  // namespace axon::ucx
