#include "transport/ucx/ucx_transport.hpp"

#include <cstring>
#include <memory>
#include <vector>

namespace axon::ucx {
namespace {

// A fetching atomic whose answer nobody needs (a signal's swap): the reply lands in a box freed
// when the operation completes, so the caller does not wait a round trip.
struct DiscardedReply {
  std::uint64_t value = 0;
  const UcxApi* api = nullptr;
};

// Counts an RMA operation in the fence ledger when it leaves scope: issued, or failed after some of
// its pieces were (a later fence must flush those too).
class CountRma {
 public:
  CountRma(UcxFenceLedger& ledger, int pe) : ledger_(ledger), pe_(pe) {}
  ~CountRma() { ledger_.issued(pe_, UcxFenceLedger::Kind::Rma); }
  CountRma(const CountRma&) = delete;
  CountRma& operator=(const CountRma&) = delete;

 private:
  UcxFenceLedger& ledger_;
  int pe_;
};

void onDiscardedReply(void* request, ucs_status_t, void* userData) {
  auto* box = static_cast<DiscardedReply*>(userData);
  const UcxApi* api = box->api;
  delete box;
  api->ucp_request_free(request);
}

ucp_atomic_op_t opcodeOf(AtomicOp op) {
  switch (op) {
    case AtomicOp::Fetch: return UCP_ATOMIC_OP_OR;  // or with zero: reads atomically
    case AtomicOp::Set: case AtomicOp::Swap: return UCP_ATOMIC_OP_SWAP;
    case AtomicOp::CompareSwap: return UCP_ATOMIC_OP_CSWAP;
    case AtomicOp::FetchAdd: case AtomicOp::Add: return UCP_ATOMIC_OP_ADD;
    case AtomicOp::FetchAnd: return UCP_ATOMIC_OP_AND;
    case AtomicOp::FetchOr: return UCP_ATOMIC_OP_OR;
    case AtomicOp::FetchXor: return UCP_ATOMIC_OP_XOR;
  }
  return UCP_ATOMIC_OP_ADD;
}

}  // namespace

bool UcxTransport::reaches(int pe) const noexcept { return worker_.connected(pe); }

ucp_request_param_t UcxTransport::paramsFor(const void* local) const {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.memory_type = onDevice(local) ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  return p;
}

std::string UcxTransport::describeOp(const char* what, const RemoteRef& ref, std::size_t bytes) const {
  return std::string(what) + " of " + std::to_string(bytes) + " bytes " + (std::strcmp(what, "get") == 0 ? "from" : "to") +
         " " + worker_.describePe(ref.pe) + " at " +
         (ref.region ? "collective region " + std::to_string(ref.region) : std::string(heapKindName(ref.heap))) +
         " offset " + std::to_string(ref.offset);
}

template <class Op>
void UcxTransport::rma(const RemoteRef& ref, std::size_t bytes, const void* local, const char* what, bool wait,
                       Op&& op) {
  ucp_ep_h ep = worker_.endpoint(ref.pe, what);
  ucp_request_param_t params = paramsFor(local);
  auto text = [&] { return describeOp(what, ref, bytes); };
  registry_.forEachPiece(ref.pe, ref.heap, ref.region, ref.offset, bytes, what,
                         [&](ucp_rkey_h rkey, std::uint64_t remote, std::uint64_t at, std::uint64_t n) {
                           ucs_status_ptr_t req = op(ep, rkey, remote, at, n, params);
                           if (wait) worker_.wait(req, ref.pe, text);
                           else worker_.release(req, ref.pe, text);
                         });
}

void UcxTransport::put(const RemoteRef& dst, const void* src, std::size_t bytes) {
  if (am_.carriesGpuData(dst)) {
    registry_.checkRegistered(dst.pe, dst.heap, dst.region, dst.offset, bytes, "put");
    am_.gpuPut(dst, src, bytes, onDevice(src));
    return;
  }
  const UcxApi& api = worker_.api();
  CountRma counted(fences_, dst.pe);  // done here means sent, not landed
  rma(dst, bytes, src, "put", true, [&](ucp_ep_h ep, ucp_rkey_h k, std::uint64_t remote, std::uint64_t at, std::uint64_t n,
                                       const ucp_request_param_t& p) {
    return api.ucp_put_nbx(ep, static_cast<const char*>(src) + at, n, remote, k, &p);
  });
}

void UcxTransport::putNbi(const RemoteRef& dst, const void* src, std::size_t bytes) {
  if (am_.carriesGpuData(dst)) {
    put(dst, src, bytes);  // complete on return: a rendezvous the target answers
    return;
  }
  const UcxApi& api = worker_.api();
  CountRma counted(fences_, dst.pe);
  rma(dst, bytes, src, "put_nbi", false, [&](ucp_ep_h ep, ucp_rkey_h k, std::uint64_t remote, std::uint64_t at,
                                            std::uint64_t n, const ucp_request_param_t& p) {
    return api.ucp_put_nbx(ep, static_cast<const char*>(src) + at, n, remote, k, &p);
  });
}

void UcxTransport::get(void* dst, const RemoteRef& src, std::size_t bytes) {
  if (am_.carriesGpuData(src)) {
    registry_.checkRegistered(src.pe, src.heap, src.region, src.offset, bytes, "get");
    am_.gpuGet(dst, src, bytes, onDevice(dst));
    return;
  }
  const UcxApi& api = worker_.api();
  rma(src, bytes, dst, "get", true, [&](ucp_ep_h ep, ucp_rkey_h k, std::uint64_t remote, std::uint64_t at, std::uint64_t n,
                                       const ucp_request_param_t& p) {
    return api.ucp_get_nbx(ep, static_cast<char*>(dst) + at, n, remote, k, &p);
  });
}

void UcxTransport::getNbi(void* dst, const RemoteRef& src, std::size_t bytes) {
  if (am_.carriesGpuData(src)) {
    get(dst, src, bytes);  // complete on return: the target sends the data back as a rendezvous
    return;
  }
  const UcxApi& api = worker_.api();
  CountRma counted(fences_, src.pe);
  rma(src, bytes, dst, "get_nbi", false, [&](ucp_ep_h ep, ucp_rkey_h k, std::uint64_t remote, std::uint64_t at,
                                            std::uint64_t n, const ucp_request_param_t& p) {
    return api.ucp_get_nbx(ep, static_cast<char*>(dst) + at, n, remote, k, &p);
  });
}

void UcxTransport::putSignal(const RemoteRef& dst, const void* src, std::size_t bytes, const RemoteRef& sig,
                             std::uint64_t value, SignalOp op, bool nbi) {
  if (onDevice(src) || !am_.carriesPutSignal(dst, bytes, sig)) {
    if (bytes > 0) {
      if (nbi) putNbi(dst, src, bytes);
      else put(dst, src, bytes);
    }
    signal(sig, value, op);  // fences the signal's PE (Transport::fence would fence every PE)
    return;
  }
  // Both registered there? (The target checks again, but cannot tell the sender.)
  if (bytes > 0) registry_.checkRegistered(dst.pe, dst.heap, dst.region, dst.offset, bytes, "put_signal");
  registry_.checkRegistered(sig.pe, sig.heap, sig.region, sig.offset, 8, "put_signal");
  fenceTo(sig.pe, false);  // puts issued before this one land first
  am_.putSignal(dst, src, bytes, sig, value, op);
  fences_.issued(sig.pe, UcxFenceLedger::Kind::ActiveMessage);
}

void UcxTransport::signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) {
  const UcxApi& api = worker_.api();
  ucp_ep_h ep = worker_.endpoint(sig.pe, "signal");
  // Everything issued before (the data) lands before the signal does.
  if (am_.handles(sig)) {
    fenceTo(sig.pe, false);
    registry_.checkRegistered(sig.pe, sig.heap, sig.region, sig.offset, 8, "signal");
    am_.signal(sig, value, op);
    fences_.issued(sig.pe, UcxFenceLedger::Kind::ActiveMessage);
    return;
  }
  fenceTo(sig.pe, true);
  CountRma counted(fences_, sig.pe);  // an RMA atomic nobody waits for
  auto text = [&] { return describeOp("signal", sig, 8); };
  registry_.forEachPiece(sig.pe, sig.heap, sig.region, sig.offset, 8, "signal",
                         [&](ucp_rkey_h rkey, std::uint64_t remote, std::uint64_t, std::uint64_t) {
    ucp_request_param_t p = paramsFor(nullptr);
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(8);
    if (op == SignalOp::Add) {
      worker_.release(api.ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_ADD, &value, 1, remote, rkey, &p), sig.pe, text);
      return;
    }
    // A set is a swap whose old value nobody reads.
    auto* box = new DiscardedReply{0, &api};
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.reply_buffer = &box->value;
    p.cb.send = &onDiscardedReply;
    p.user_data = box;
    ucs_status_ptr_t req = api.ucp_atomic_op_nbx(ep, UCP_ATOMIC_OP_SWAP, &value, 1, remote, rkey, &p);
    if (UCS_PTR_IS_PTR(req)) return;  // the callback frees the box
    delete box;
    worker_.release(req, sig.pe, text);  // completed at once, or failed (throws)
  });
}

void UcxTransport::atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
                          const void* cond, void* result) {
  if (width != 4 && width != 8) throw Error(ErrorCode::InvalidArgument, "atomic width must be 4 or 8 bytes");
  if (am_.handles(dst)) {
    registry_.checkRegistered(dst.pe, dst.heap, dst.region, dst.offset, width, "atomic");
    am_.atomic(op, dst, width, operand, cond, result);
    // A set or an add is one message nobody answers; the others are done when their answer is here.
    if (op == AtomicOp::Add || op == AtomicOp::Set) fences_.issued(dst.pe, UcxFenceLedger::Kind::ActiveMessage);
    return;
  }
  const UcxApi& api = worker_.api();
  ucp_ep_h ep = worker_.endpoint(dst.pe, "atomic");
  std::uint64_t value = 0, reply = 0;
  if (op == AtomicOp::CompareSwap) {
    // UCX's compare-swap takes the expected value as the operand and the new value in the reply
    // buffer, which then receives the old value.
    if (cond) std::memcpy(&value, cond, width);
    if (operand) std::memcpy(&reply, operand, width);
  } else if (operand && op != AtomicOp::Fetch) {
    std::memcpy(&value, operand, width);
  }
  const bool fetching = op != AtomicOp::Add;  // a fetching one is done when its answer is here
  auto text = [&] { return describeOp("atomic", dst, width); };
  registry_.forEachPiece(dst.pe, dst.heap, dst.region, dst.offset, width, "atomic",
                         [&](ucp_rkey_h rkey, std::uint64_t remote, std::uint64_t, std::uint64_t) {
    ucp_request_param_t p = paramsFor(nullptr);
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(width);
    if (fetching) {
      p.op_attr_mask |= UCP_OP_ATTR_FIELD_REPLY_BUFFER;
      p.reply_buffer = &reply;
    }
    ucs_status_ptr_t req = api.ucp_atomic_op_nbx(ep, opcodeOf(op), &value, 1, remote, rkey, &p);
    if (fetching) worker_.wait(req, dst.pe, text);
    else worker_.release(req, dst.pe, text);
  });
  if (result && fetching && op != AtomicOp::Set) std::memcpy(result, &reply, width);
  if (!fetching) fences_.issued(dst.pe, UcxFenceLedger::Kind::Rma);
}

void UcxTransport::fence() {
  std::vector<int> pes;  // those with something not covered, and their marks
  std::vector<UcxFenceLedger::Mark> marks;
  for (int pe = 0; pe < worker_.setup().nPes; ++pe) {
    const UcxFenceLedger::Mark m = fences_.mark(pe);
    if (fences_.covered(pe, m, true)) continue;
    pes.push_back(pe);
    marks.push_back(m);
  }
  if (pes.empty()) return;
  worker_.flushTo(pes, "fence");
  for (std::size_t i = 0; i < pes.size(); ++i) fences_.flushed(pes[i], marks[i]);
}

void UcxTransport::fenceTo(int pe, bool activeMessagesToo) {
  const UcxFenceLedger::Mark m = fences_.mark(pe);
  if (fences_.covered(pe, m, activeMessagesToo)) return;
  worker_.flushTo(std::span<const int>(&pe, 1), "fence");
  fences_.flushed(pe, m);
}

void UcxTransport::quiet() {
  const int n = worker_.setup().nPes;
  std::vector<UcxFenceLedger::Mark> marks(static_cast<std::size_t>(n));
  for (int pe = 0; pe < n; ++pe) marks[pe] = fences_.mark(pe);
  worker_.flush("quiet");
  for (int pe = 0; pe < n; ++pe) fences_.flushed(pe, marks[pe]);
  am_.quiet();  // and what went by active message is applied, not only sent
}

std::string UcxTransport::pathTo(int pe) const {
  const std::string tl = worker_.transportsTo(pe);
  return tl.empty() ? "ucx" : "ucx:" + tl;
}

std::string UcxTransport::describe() const {
  return "UCX " + worker_.api().version() + " (" + worker_.api().path + ")";
}

std::unique_ptr<NetworkTransport> makeUcxTransport(const NetworkSetup& setup) {
  const UcxApi* api = ucxApi();
  if (!api) {
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(setup.myPe) +
                                            ": PEs on other nodes are reached through UCX, which is not available: " +
                                            ucxUnavailableReason());
  }
  return std::make_unique<UcxTransport>(*api, setup);
}

}  // namespace axon::ucx

namespace axon {
std::unique_ptr<NetworkTransport> makeNetworkTransport(const NetworkSetup& setup) { return ucx::makeUcxTransport(setup); }

NetworkLibrary networkLibrary() {
  NetworkLibrary lib;
  lib.name = "UCX";
  if (const ucx::UcxApi* api = ucx::ucxApi()) {
    lib.available = true;
    lib.version = api->version();
    lib.path = api->path;
  } else {
    lib.whyNot = ucx::ucxUnavailableReason();
  }
  return lib;
}
}  // namespace axon
