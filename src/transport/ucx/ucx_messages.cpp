#include "transport/ucx/ucx_messages.hpp"

#include <cstring>

#include "core/log.hpp"
#include "transport/ucx/ucx_am_ids.hpp"

namespace axon::ucx {

// A message's header on the wire: fixed-size, the same build on every PE (init refuses a mix).
struct UcxMessages::Wire {
  std::int32_t fromPe;
  std::int32_t context;
  std::int32_t tag;
  std::uint32_t reserved;
  std::uint64_t bytes;
  std::uint64_t sendId;
  std::uint64_t credit;
  std::uint64_t seq;  // this pair's message number
};

namespace {

struct CreditWire {
  std::int32_t fromPe;
  std::uint32_t reserved;
  std::uint64_t bytes;
};

// A send UCX has not completed yet: keeps its header and its operation alive until then.
struct InFlight {
  const UcxApi* api;
  std::shared_ptr<p2p::Operation> op;
  UcxMessages::Wire wire;
  bool rendezvous;
  int pe;
};

void endSend(InFlight& f, ucs_status_t status) {
  // A rendezvous the receiver declined (its buffer was too small, its team went) ends the send
  // normally, as in MPI: the receive reports the failure.
  if (status == UCS_OK || (f.rendezvous && status == UCS_ERR_CANCELED)) {
    f.op->complete();
    return;
  }
  f.op->fail(ErrorCode::Ucx, "PE " + std::to_string(f.wire.fromPe) + ": " + f.op->describe() + ": UCX failed it (" +
                                 statusText(status) + ")");
}

}  // namespace

UcxMessages::UcxMessages(UcxWorker& worker, std::uint64_t eagerMax)
    : worker_(worker),
      eagerMax_(eagerMax),
      sent_(static_cast<std::size_t>(worker.setup().nPes), 0),
      expected_(static_cast<std::size_t>(worker.setup().nPes), 0),
      early_(static_cast<std::size_t>(worker.setup().nPes)) {
  worker_.setAmHandler(kAmMessage, &UcxMessages::onMessage, this);
  worker_.setAmHandler(kAmMessageCredit, &UcxMessages::onCredit, this);
}

UcxMessages::~UcxMessages() {
  worker_.setAmHandler(kAmMessage, nullptr, this);
  worker_.setAmHandler(kAmMessageCredit, nullptr, this);
  // Rendezvous data never fetched goes back to UCX.
  const UcxApi& api = worker_.api();
  auto drop = [&](p2p::Arrived& m) {
    if (!m.eager && m.handle) api.ucp_am_data_release(worker_.worker(), m.handle);
  };
  for (auto& [seq, m] : inbox_) drop(*m);
  for (auto& held : early_) {
    for (auto& [seq, m] : held) drop(*m);
  }
}

bool UcxMessages::sendEager(int pe, const p2p::Header& h, const std::shared_ptr<p2p::Operation>& op) {
  return send(pe, h, op, true);
}

bool UcxMessages::sendRendezvous(int pe, const p2p::Header& h, const std::shared_ptr<p2p::Operation>& op) {
  return send(pe, h, op, false);
}

bool UcxMessages::send(int pe, const p2p::Header& h, const std::shared_ptr<p2p::Operation>& op, bool eager) {
  const UcxApi& api = worker_.api();
  ucp_ep_h ep = worker_.endpoint(pe, "send");
  auto* f = new InFlight{&api, op,
                         Wire{worker_.setup().myPe, h.context, h.tag, 0, h.bytes, h.sendId, h.credit, sent_[pe]},
                         !eager, pe};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FIELD_CALLBACK |
                   UCP_OP_ATTR_FIELD_USER_DATA;
  p.flags = eager ? UCP_AM_SEND_FLAG_EAGER : UCP_AM_SEND_FLAG_RNDV;
  p.memory_type = op->onDevice ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  p.cb.send = [](void* request, ucs_status_t status, void* user) {
    auto* in = static_cast<InFlight*>(user);
    endSend(*in, status);
    in->api->ucp_request_free(request);
    delete in;
  };
  p.user_data = f;
  ucs_status_ptr_t r = api.ucp_am_send_nbx(ep, kAmMessage, &f->wire, sizeof(Wire), op->buffer, op->bytes, &p);
  ++sent_[pe];
  if (UCS_PTR_IS_PTR(r)) return true;  // the callback ends it
  endSend(*f, UCS_PTR_STATUS(r));
  delete f;
  return true;
}

void UcxMessages::sendCredit(int pe, std::uint64_t bytes) {
  struct Box {
    const UcxApi* api;
    CreditWire wire;
  };
  const UcxApi& api = worker_.api();
  ucp_ep_h ep = worker_.endpoint(pe, "message credit");
  auto* box = new Box{&api, CreditWire{worker_.setup().myPe, 0, bytes}};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.flags = UCP_AM_SEND_FLAG_EAGER;
  p.cb.send = [](void* request, ucs_status_t, void* user) {
    auto* b = static_cast<Box*>(user);
    const UcxApi* a = b->api;
    delete b;
    a->ucp_request_free(request);
  };
  p.user_data = box;
  ucs_status_ptr_t r = api.ucp_am_send_nbx(ep, kAmMessageCredit, &box->wire, sizeof(CreditWire), nullptr, 0, &p);
  if (UCS_PTR_IS_PTR(r)) return;
  delete box;
  if (UCS_PTR_IS_ERR(r)) {
    throw UcxError("PE " + std::to_string(worker_.setup().myPe) + ": returning message credit to " +
                       worker_.describePe(pe),
                   UCS_PTR_STATUS(r));
  }
}

ucs_status_t UcxMessages::onMessage(void* arg, const void* header, std::size_t headerLength, void* data,
                                    std::size_t length, const ucp_am_recv_param_t* param) {
  auto* self = static_cast<UcxMessages*>(arg);
  Wire w;
  if (headerLength != sizeof w) return UCS_OK;  // not ours: a peer of another build, which init refuses
  std::memcpy(&w, header, sizeof w);
  if (w.fromPe < 0 || w.fromPe >= self->worker_.setup().nPes) return UCS_OK;
  auto m = std::make_unique<p2p::Arrived>();
  m->sourcePe = w.fromPe;
  m->header = p2p::Header{w.context, w.tag, w.bytes, w.sendId, w.credit};
  m->channel = self;
  ucs_status_t keep = UCS_OK;
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
    m->eager = false;
    m->handle = data;  // UCX's descriptor, until fetched or declined
    keep = UCS_INPROGRESS;
  } else {
    const char* p = static_cast<const char*>(data);
    m->owned.assign(p, p + length);
    m->data = m->owned.data();
    m->header.bytes = length;
  }
  std::lock_guard lock(self->inboxMutex_);
  self->inbox_.emplace_back(w.seq, std::move(m));
  return keep;
}

ucs_status_t UcxMessages::onCredit(void* arg, const void* header, std::size_t headerLength, void*, std::size_t,
                                   const ucp_am_recv_param_t*) {
  auto* self = static_cast<UcxMessages*>(arg);
  CreditWire w;
  if (headerLength != sizeof w) return UCS_OK;
  std::memcpy(&w, header, sizeof w);
  if (w.fromPe < 0 || w.fromPe >= self->worker_.setup().nPes) return UCS_OK;
  std::lock_guard lock(self->inboxMutex_);
  self->credits_.emplace_back(w.fromPe, w.bytes);
  return UCS_OK;
}

bool UcxMessages::poll(p2p::Sink& sink) {
  decltype(inbox_) arrived;
  decltype(credits_) credits;
  {
    std::lock_guard lock(inboxMutex_);
    if (inbox_.empty() && credits_.empty()) return false;
    arrived.swap(inbox_);
    credits.swap(credits_);
  }
  for (auto& [pe, bytes] : credits) sink.credited(pe, bytes);
  for (auto& [seq, m] : arrived) {
    const int pe = m->sourcePe;
    early_[pe].emplace(seq, std::move(m));
    // Hand over what is next in this pair's order.
    auto& held = early_[pe];
    while (!held.empty() && held.begin()->first == expected_[pe]) {
      std::unique_ptr<p2p::Arrived> next = std::move(held.begin()->second);
      held.erase(held.begin());
      ++expected_[pe];
      sink.arrived(std::move(next));
    }
  }
  return true;
}

void UcxMessages::fetch(p2p::Arrived& m, const std::shared_ptr<p2p::Operation>& recv) {
  struct Landing {
    const UcxApi* api;
    std::shared_ptr<p2p::Operation> recv;
    int myPe;
  };
  const UcxApi& api = worker_.api();
  auto* l = new Landing{&api, recv, worker_.setup().myPe};
  static constexpr auto end = [](Landing& to, ucs_status_t status) {
    if (status == UCS_OK) to.recv->complete();
    else to.recv->fail(ErrorCode::Ucx, "PE " + std::to_string(to.myPe) + ": " + to.recv->describe() +
                                           ": receiving the data failed (" + statusText(status) + ")");
  };
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
  p.memory_type = recv->onDevice ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
  p.cb.recv_am = [](void* request, ucs_status_t status, std::size_t, void* user) {
    auto* to = static_cast<Landing*>(user);
    end(*to, status);
    to->api->ucp_request_free(request);
    delete to;
  };
  p.user_data = l;
  void* handle = m.handle;
  m.handle = nullptr;  // UCX owns it again from here
  ucs_status_ptr_t r = api.ucp_am_recv_data_nbx(worker_.worker(), handle, recv->buffer, m.header.bytes, &p);
  if (UCS_PTR_IS_PTR(r)) return;
  end(*l, UCS_PTR_STATUS(r));
  delete l;
}

void UcxMessages::decline(p2p::Arrived& m) {
  if (m.eager || !m.handle) return;
  worker_.api().ucp_am_data_release(worker_.worker(), m.handle);
  m.handle = nullptr;
}

std::string UcxMessages::describePath(int pe, std::uint64_t, bool onDevice, bool eager) const {
  const std::string to = "to " + worker_.describePe(pe) + " by UCX active message over " +
                         (worker_.transportsTo(pe).empty() ? std::string("UCX") : worker_.transportsTo(pe));
  if (eager) return "eager: the data travels with the message " + to;
  return std::string("rendezvous: once matched, UCX moves the data once from the send buffer into the receive "
                     "buffer ") +
         to + (onDevice ? " (GPU memory: GPUDirect RDMA where UCX has it, else its pipelined staging)" : "");
}

}  // namespace axon::ucx
