// rpc::Node over UCX: a context and worker of its own (not a PE's), the socket-address listener
// for servers, and active messages for every message. Endpoints ask for UCX's peer error handling,
// so that a peer that dies or a link that breaks fails the endpoint (and its requests) instead of
// leaving them pending: the staging space depends on it to free what a dead client held.
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/net.hpp"
#include "transport/rpc.hpp"
#include "transport/ucx/ucx_am_ids.hpp"
#include "transport/ucx/ucx_api.hpp"

namespace axon::rpc {
namespace {

using ucx::statusText;
using ucx::ucxCheck;
using ucx::UcxApi;

class UcxNode;

struct Conn {
  UcxNode* node = nullptr;
  ConnId id = 0;
  ucp_ep_h ep = nullptr;
  std::string peer;                  // "10.0.0.2:4711" or "client 3 (10.0.0.5:51234)"
  std::atomic<int> status{UCS_OK};   // the endpoint's failure, once it failed
};

// A send or receive UCX has not completed: keeps the caller's completion until then.
struct Pending {
  const UcxApi* api;
  Done done;
  std::string header;  // a send's header must live until UCX is done with it
  UcxNode* node = nullptr;
};

// "host:port" -> a socket address (IPv4 or IPv6; names resolved).
sockaddr_storage resolve(const std::string& hostPort, socklen_t& len, const std::string& role) {
  net::HostPort hp = net::parseHostPort(hostPort, role + " address");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = hp.host.empty() || hp.host == "0.0.0.0" ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(hp.port);
  const int rc = ::getaddrinfo(hp.host.empty() || hp.host == "0.0.0.0" ? nullptr : hp.host.c_str(), port.c_str(),
                               &hints, &res);
  if (rc != 0 || !res) {
    throw Error(ErrorCode::InvalidArgument,
                role + ": cannot resolve '" + hp.host + "' of address " + hostPort + ": " + ::gai_strerror(rc));
  }
  sockaddr_storage ss{};
  std::memcpy(&ss, res->ai_addr, res->ai_addrlen);
  len = res->ai_addrlen;
  ::freeaddrinfo(res);
  return ss;
}

class UcxNode final : public Node {
 public:
  UcxNode(const UcxApi& api, std::string role) : api_(api), role_(std::move(role)) {
    ucp_config_t* config = nullptr;
    ucxCheck(api_.ucp_config_read(nullptr, nullptr, &config), role_ + ": ucp_config_read");
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
    const ucs_status_t s = api_.ucp_init_version(UCP_API_MAJOR, UCP_API_MINOR, &params, config, &context_);
    api_.ucp_config_release(config);
    ucxCheck(s, role_ + ": ucp_init");
    try {
      ucp_worker_params_t wp{};
      wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
      wp.thread_mode = UCS_THREAD_MODE_MULTI;
      ucxCheck(api_.ucp_worker_create(context_, &wp, &worker_), role_ + ": ucp_worker_create");
      ucxCheck(api_.ucp_worker_get_efd(worker_, &efd_), role_ + ": ucp_worker_get_efd");
      ucp_worker_attr_t attr{};
      attr.field_mask = UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER;
      if (api_.ucp_worker_query && api_.ucp_worker_query(worker_, &attr) == UCS_OK) maxHeader_ = attr.max_am_header;
      ucp_am_handler_param_t h{};
      h.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
      h.id = ucx::kAmRpc;
      h.cb = &UcxNode::onMessage;
      h.arg = this;
      ucxCheck(api_.ucp_worker_set_am_recv_handler(worker_, &h), role_ + ": ucp_worker_set_am_recv_handler");
    } catch (...) {
      if (worker_) api_.ucp_worker_destroy(worker_);
      api_.ucp_cleanup(context_);
      throw;
    }
  }

  ~UcxNode() override {
    if (listener_) api_.ucp_listener_destroy(listener_);
    for (Event& e : inbox_) {
      if (e.payload.handle) api_.ucp_am_data_release(worker_, e.payload.handle);
    }
    inbox_.clear();
    std::map<ConnId, std::unique_ptr<Conn>> conns;
    {
      std::lock_guard lock(mu_);
      conns.swap(conns_);
    }
    for (auto& [id, c] : conns) closeEp(*c, true);
    api_.ucp_worker_destroy(worker_);
    api_.ucp_cleanup(context_);
  }

  void setHandlers(Handlers h) override { handlers_ = std::move(h); }

  std::string listen(const std::string& hostPort) override {
    socklen_t len = 0;
    sockaddr_storage ss = resolve(hostPort, len, role_);
    ucp_listener_params_t p{};
    p.field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&ss);
    p.sockaddr.addrlen = len;
    p.conn_handler.cb = &UcxNode::onConnectRequest;
    p.conn_handler.arg = this;
    ucxCheck(api_.ucp_listener_create(worker_, &p, &listener_), role_ + ": listening on " + hostPort);
    ucp_listener_attr_t attr{};
    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    ucxCheck(api_.ucp_listener_query(listener_, &attr), role_ + ": ucp_listener_query");
    const net::HostPort asked = net::parseHostPort(hostPort, role_ + " address");
    const int port = net::parseHostPort(net::describeSockaddr(attr.sockaddr), "UCX").port;
    const std::string host = asked.host.empty() || asked.host == "0.0.0.0" ? net::primaryAddress() : asked.host;
    return host + ":" + std::to_string(port);
  }

  ConnId connect(const std::string& hostPort) override {
    socklen_t len = 0;
    sockaddr_storage ss = resolve(hostPort, len, role_);
    auto c = std::make_unique<Conn>();
    c->node = this;
    c->peer = hostPort;
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                   UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    p.sockaddr.addr = reinterpret_cast<const sockaddr*>(&ss);
    p.sockaddr.addrlen = len;
    p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb = &UcxNode::onEndpointError;
    p.err_handler.arg = c.get();
    ucxCheck(api_.ucp_ep_create(worker_, &p, &c->ep), role_ + ": connecting to " + hostPort);
    return adopt(std::move(c));
  }

  void send(ConnId id, std::string header, const void* data, std::size_t bytes, Memory m, Done done) override {
    if (header.size() > maxHeader_) {
      throw Error(ErrorCode::Internal, role_ + ": a message header of " + std::to_string(header.size()) +
                                           " bytes exceeds UCX's limit of " + std::to_string(maxHeader_));
    }
    ucp_ep_h ep = nullptr;
    std::string why;
    {
      std::lock_guard lock(mu_);
      auto it = conns_.find(id);
      if (it == conns_.end() || !it->second->ep) why = "the connection is closed";
      else if (auto s = static_cast<ucs_status_t>(it->second->status.load()); s != UCS_OK)
        why = "the connection failed: " + statusText(s);
      else ep = it->second->ep;
    }
    if (!ep) {
      done(why);
      return;
    }
    auto* pending = new Pending{&api_, std::move(done), std::move(header), this};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_MEMORY_TYPE | UCP_OP_ATTR_FIELD_CALLBACK |
                     UCP_OP_ATTR_FIELD_USER_DATA;
    p.flags = UCP_AM_SEND_FLAG_REPLY;
    p.memory_type = m == Memory::Cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    p.cb.send = [](void* request, ucs_status_t status, void* user) {
      auto* pd = static_cast<Pending*>(user);
      pd->api->ucp_request_free(request);
      finish(pd, status);
    };
    p.user_data = pending;
    ucs_status_ptr_t r = api_.ucp_am_send_nbx(ep, ucx::kAmRpc, pending->header.data(), pending->header.size(),
                                              bytes ? data : nullptr, bytes, &p);
    if (!UCS_PTR_IS_PTR(r)) finish(pending, UCS_PTR_STATUS(r));
  }

  void receive(Payload& payload, void* dst, Memory m, Done done) override {
    if (!payload.rendezvous()) {
      if (payload.bytes) std::memcpy(dst, payload.eager.data(), payload.bytes);
      payload.eager.clear();
      done({});
      return;
    }
    auto* pending = new Pending{&api_, std::move(done), {}, this};
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMORY_TYPE;
    p.memory_type = m == Memory::Cuda ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    p.cb.recv_am = [](void* request, ucs_status_t status, std::size_t, void* user) {
      auto* pd = static_cast<Pending*>(user);
      pd->api->ucp_request_free(request);
      finish(pd, status);
    };
    p.user_data = pending;
    void* handle = payload.handle;
    payload.handle = nullptr;
    ucs_status_ptr_t r = api_.ucp_am_recv_data_nbx(worker_, handle, dst, payload.bytes, &p);
    if (!UCS_PTR_IS_PTR(r)) finish(pending, UCS_PTR_STATUS(r));
  }

  void drop(Payload& payload) override {
    if (payload.handle) api_.ucp_am_data_release(worker_, payload.handle);
    payload.handle = nullptr;
    payload.eager.clear();
  }

  void close(ConnId id) override {
    std::unique_ptr<Conn> c;
    {
      std::lock_guard lock(mu_);
      auto it = conns_.find(id);
      if (it == conns_.end()) return;
      c = std::move(it->second);
      conns_.erase(it);
      byEp_.erase(c->ep);
    }
    closeEp(*c, true);
  }

  std::string describe(ConnId id) const override {
    std::lock_guard lock(mu_);
    auto it = conns_.find(id);
    return it == conns_.end() ? "connection " + std::to_string(id) + " (closed)" : it->second->peer;
  }

  std::size_t maxHeader() const override { return maxHeader_; }

  bool failed(ConnId id) const override {
    std::lock_guard lock(mu_);
    auto it = conns_.find(id);
    return it == conns_.end() || it->second->status.load() != UCS_OK;
  }

  bool progress() override {
    const bool ucx = api_.ucp_worker_progress(worker_) != 0;
    return deliver() || ucx;
  }

  int armForSleep() override {
    {
      std::lock_guard lock(inboxMutex_);
      if (!inbox_.empty()) return kBusy;
    }
    const ucs_status_t s = api_.ucp_worker_arm(worker_);
    if (s == UCS_ERR_BUSY) return kBusy;
    return s == UCS_OK ? efd_ : kNoFd;
  }

 private:
  // A completion runs from progress() (deliver), never inside UCX's callback: a handler may then
  // close connections or send, which UCX does not allow from its callbacks.
  static void finish(Pending* pd, ucs_status_t status) {
    Event e{Event::Completed, 0, status == UCS_OK ? std::string() : statusText(status), {}};
    e.done = std::move(pd->done);
    UcxNode* node = pd->node;
    delete pd;
    if (e.done) node->post(std::move(e));
  }

  ConnId adopt(std::unique_ptr<Conn> c) {
    std::lock_guard lock(mu_);
    c->id = ++lastId_;
    const ConnId id = c->id;
    byEp_[c->ep] = id;
    conns_[id] = std::move(c);
    return id;
  }

  void closeEp(Conn& c, bool force) {
    if (!c.ep) return;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    ucs_status_ptr_t r = api_.ucp_ep_close_nbx(c.ep, &p);
    c.ep = nullptr;
    if (!UCS_PTR_IS_PTR(r)) return;
    // A forced close completes within a few polls; bounded in case UCX misbehaves.
    const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (api_.ucp_request_check_status(r) == UCS_INPROGRESS && std::chrono::steady_clock::now() < end) {
      api_.ucp_worker_progress(worker_);
    }
    api_.ucp_request_free(r);
  }

  // UCX's callbacks only record what happened; progress() hands it to the handlers afterwards,
  // outside UCX's callbacks, so that a handler may call anything (send, receive, close).
  struct Event {
    enum Kind { Accepted, Closed, Message, Completed } kind;
    ConnId id;
    std::string text;  // Closed: why; Message: header; Completed: the failure, or empty
    Payload payload;
    Done done;  // Completed
  };

  void post(Event e) {
    std::lock_guard lock(inboxMutex_);
    inbox_.push_back(std::move(e));
  }

  bool deliver() {
    std::vector<Event> events;
    {
      std::lock_guard lock(inboxMutex_);
      if (inbox_.empty()) return false;
      events.swap(inbox_);
    }
    for (auto& e : events) {
      switch (e.kind) {
        case Event::Accepted:
          if (handlers_.accepted) handlers_.accepted(e.id);
          break;
        case Event::Closed:
          if (handlers_.closed) handlers_.closed(e.id, e.text);
          break;
        case Event::Message:
          if (handlers_.message) handlers_.message(e.id, std::move(e.text), std::move(e.payload));
          else drop(e.payload);
          break;
        case Event::Completed:
          e.done(e.text);
          break;
      }
    }
    return true;
  }

  static void onConnectRequest(ucp_conn_request_h request, void* arg) {
    auto* self = static_cast<UcxNode*>(arg);
    auto c = std::make_unique<Conn>();
    c->node = self;
    std::string from = "?";
    ucp_conn_request_attr_t attr{};
    attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
    if (self->api_.ucp_conn_request_query && self->api_.ucp_conn_request_query(request, &attr) == UCS_OK) {
      from = net::describeSockaddr(attr.client_address);
    }
    ucp_ep_params_t p{};
    p.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    p.conn_request = request;
    p.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    p.err_handler.cb = &UcxNode::onEndpointError;
    p.err_handler.arg = c.get();
    if (self->api_.ucp_ep_create(self->worker_, &p, &c->ep) != UCS_OK) return;  // the client sees a failure
    const ConnId id = self->adopt(std::move(c));
    {
      std::lock_guard lock(self->mu_);
      self->conns_[id]->peer = "client " + std::to_string(id) + " (" + from + ")";
    }
    self->post(Event{Event::Accepted, id, {}, {}, {}});
  }

  static void onEndpointError(void* arg, ucp_ep_h, ucs_status_t status) {
    auto* c = static_cast<Conn*>(arg);
    int ok = UCS_OK;
    if (!c->status.compare_exchange_strong(ok, status)) return;
    c->node->post(Event{Event::Closed, c->id, statusText(status), {}, {}});
  }

  static ucs_status_t onMessage(void* arg, const void* header, std::size_t headerLength, void* data,
                                std::size_t length, const ucp_am_recv_param_t* param) {
    auto* self = static_cast<UcxNode*>(arg);
    ConnId from = 0;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) {
      std::lock_guard lock(self->mu_);
      auto it = self->byEp_.find(param->reply_ep);
      if (it != self->byEp_.end()) from = it->second;
    }
    if (from == 0) return UCS_OK;  // from an endpoint closed meanwhile: UCX drops the data
    Payload payload;
    payload.bytes = length;
    ucs_status_t keep = UCS_OK;
    if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) {
      payload.handle = data;  // UCX keeps it until received or dropped
      keep = UCS_INPROGRESS;
    } else if (length) {
      payload.eager.assign(static_cast<const char*>(data), length);
    }
    self->post(Event{Event::Message, from, std::string(static_cast<const char*>(header), headerLength),
                     std::move(payload), {}});
    return keep;
  }

  const UcxApi& api_;
  std::string role_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  ucp_listener_h listener_ = nullptr;
  int efd_ = -1;
  std::size_t maxHeader_ = 1024;
  Handlers handlers_;
  mutable std::mutex mu_;
  std::map<ConnId, std::unique_ptr<Conn>> conns_;
  std::map<ucp_ep_h, ConnId> byEp_;
  ConnId lastId_ = 0;
  std::mutex inboxMutex_;
  std::vector<Event> inbox_;
};

}  // namespace

std::unique_ptr<Node> makeNode(const std::string& role) {
  const UcxApi* api = ucx::ucxApi();
  if (!api) throw Error(ErrorCode::Unsupported, role + ": " + ucx::ucxUnavailableReason());
  return std::make_unique<UcxNode>(*api, role);
}

}  // namespace axon::rpc
