// The staging-space client (axon/space.hpp): requests to every server of the space over rpc::Node
// (UCX), data through the servers' mapped arenas where they share this node, and the reassembly
// of a get's box from its fragments (host threads, or one fused kernel for GPU memory).
//
// This file only puts the client together; each job has a file of its own:
//   client_connection  finding the space, connecting, and every request's call, reply and deadline
//   client_catalog     variables, versions (wait_version, release) and the servers' statistics
//   client_puts        puts: placement, and the path of each part (mapped arena, message, pipeline)
//   client_batches     small nonblocking puts gathered into one message per server
//   client_gets        gets: queries, then the reassembly planned in assembly.hpp, run, leases ended
//   client_requests    the life of a put or get once issued (Request), and close()'s wait for them
//   client_stats       what this client did (ClientStats)
//   client_parts       the parts above that puts and gets share
#include "axon/space.hpp"

#include "axon/error.hpp"
#include "core/env.hpp"
#include "core/host_identity.hpp"
#include "space/client_batches.hpp"
#include "space/client_catalog.hpp"
#include "space/client_connection.hpp"
#include "space/client_gets.hpp"
#include "space/client_puts.hpp"
#include "space/client_requests.hpp"
#include "space/client_stats.hpp"
#include "space/gpu_side.hpp"

namespace axon::space {

class Client::Impl {
 public:
  explicit Impl(const ConnectOptions& o) {
    const Env env = Env::fromProcess();
    const double timeoutSec = callTimeout(o.timeoutSec, env.timeoutSec, "connect");
    const std::uint64_t batchBytes = o.batchBytes >= 0 ? static_cast<std::uint64_t>(o.batchBytes) : env.spaceBatch;
    const std::string identity = hostIdentity(env.node);
    const ServerContact first = findServer(o, env);
    std::string why;
    gpu_ = makeGpuSide(why);
    conn_ = std::make_unique<Connection>(o, identity, timeoutSec, first, gpu_.get());
    catalog_ = std::make_unique<Catalog>(*conn_, timeoutSec);
    batches_ = std::make_unique<Batcher>(*conn_, stats_, batchBytes);
    requests_ = std::make_unique<Requests>(*conn_, *batches_, timeoutSec);
    const ClientParts parts{o.gpuPath, *conn_, gpu_.get(), *catalog_, *requests_, *batches_, stats_};
    puts_ = std::make_unique<Puts>(parts);
    gets_ = std::make_unique<Gets>(parts);
  }

  ~Impl() {
    try {
      close();
    } catch (...) {
    }
    conn_->stop();
  }

  // Waits for every request, then disconnects.
  void close() {
    requests_->finishAll();
    conn_->disconnect();
  }

  Stats stats() {
    Stats out;
    out.servers = catalog_->serverStats();
    out.client = stats_.snapshot();
    return out;
  }

  // Destroyed in reverse: the parts that issue calls before the connection, the connection (its
  // progress thread, UCX, the mapped arenas) before the GPU side its buffers go back to.
  std::unique_ptr<GpuSide> gpu_;
  std::unique_ptr<Connection> conn_;
  StatsBook stats_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<Batcher> batches_;
  std::unique_ptr<Requests> requests_;
  std::unique_ptr<Puts> puts_;
  std::unique_ptr<Gets> gets_;
};

Client::Client(const ConnectOptions& options) : impl_(std::make_unique<Impl>(options)) {}
Client::~Client() = default;

void Client::define(const std::string& name, const Index& shape, DataType dtype, int keepVersions) {
  Variable v;
  v.name = name;
  if (shape.empty() || shape.size() > static_cast<std::size_t>(kMaxDims)) {
    throw Error(ErrorCode::InvalidArgument, "define of '" + name + "': " + std::to_string(shape.size()) +
                                                " dimensions; 1 to " + std::to_string(kMaxDims) + " are allowed");
  }
  v.shape = Box::whole(shape);
  v.dtype = dtype;
  v.keepVersions = keepVersions;
  impl_->catalog_->define(v);
}

void Client::put(const std::string& name, std::int64_t version, const Index& offset, const Index& count,
                 const void* data, double timeoutSec) {
  impl_->puts_->iput(name, version, offset, count, data, timeoutSec, true);
}

Request Client::iput(const std::string& name, std::int64_t version, const Index& offset, const Index& count,
                     const void* data, double timeoutSec) {
  return Request(impl_->puts_->iput(name, version, offset, count, data, timeoutSec, false));
}

void Client::get(const std::string& name, std::int64_t version, const Index& lo, const Index& hi, void* out,
                 std::size_t outBytes, double timeoutSec) {
  impl_->gets_->iget(name, version, lo, hi, out, outBytes, timeoutSec, true);
}

Request Client::iget(const std::string& name, std::int64_t version, const Index& lo, const Index& hi, void* out,
                     std::size_t outBytes, double timeoutSec) {
  return Request(impl_->gets_->iget(name, version, lo, hi, out, outBytes, timeoutSec, false));
}

std::int64_t Client::waitVersion(const std::string& name, std::int64_t atLeast, double timeoutSec) {
  return impl_->catalog_->waitVersion(name, atLeast, timeoutSec);
}

void Client::release(const std::string& name, std::int64_t version) { impl_->catalog_->release(name, version); }
void Client::remove(const std::string& name) {
  impl_->batches_->flush();  // this client's batched puts reach the servers before the remove
  impl_->catalog_->remove(name);
}
Stats Client::stats() { return impl_->stats(); }
void Client::close() { impl_->close(); }
std::vector<std::string> Client::servers() const { return impl_->conn_->addresses(); }
DataType Client::dtypeOf(const std::string& name) const { return impl_->catalog_->variable(name).dtype; }
Index Client::shapeOf(const std::string& name) const {
  const Variable v = impl_->catalog_->variable(name);
  return Index(v.shape.hi.begin(), v.shape.hi.begin() + v.shape.ndim);
}

}  // namespace axon::space
