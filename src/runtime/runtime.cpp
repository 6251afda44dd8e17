#include "runtime/runtime.hpp"
#include "core/host_identity.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <limits>
#include <mutex>

#include "axon/error.hpp"
#include "axon/runtime.hpp"
#include "bootstrap/blob.hpp"
#include "bootstrap/setup_step.hpp"
#include "coll/plan.hpp"
#include "coll/team_collectives.hpp"
#include "core/log.hpp"
#include "core/team_state.hpp"
#include "onesided/make_device_proxy.hpp"
#include "onesided/team_barrier.hpp"
#include "p2p/engine.hpp"
#include "transport/network_setup.hpp"

namespace axon {
namespace {

std::unique_ptr<Runtime> g_runtime;
bool g_wasFinalized = false;
std::mutex g_lifecycle;

// The file that names this process's PID namespace ("pid:[4026531836]"). PEs in another
// namespace (a container, `unshare --pid`) see other pids, so their pids say nothing here.
std::string pidNamespace() {
  char buf[128] = {0};
  ssize_t n = ::readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string("unknown");
}

// What each PE tells the others at init.
struct PeerCard {
  std::string host;           // identity: PEs with the same one share memory
  std::string node;           // the node's name, for messages
  std::string pidNamespace;
  pid_t pid = 0;
  std::string segment;
  std::uint64_t mapped = 0;

  std::string encode() const {
    wire::BlobWriter w(wire::BlobKind::PeerCard);
    w.str(host).str(node).str(pidNamespace).i64(pid).str(segment).u64(mapped);
    return w.take();
  }
  static PeerCard decode(const std::string& blob, const std::string& origin) {
    return wire::decodeBlob(blob, wire::BlobKind::PeerCard, origin, [](wire::ByteReader& in) {
      PeerCard c;
      c.host = in.str();
      c.node = in.str();
      c.pidNamespace = in.str();
      const std::int64_t pid = in.i64();
      if (pid <= 0 || pid > std::numeric_limits<pid_t>::max()) throw wire::Malformed("a pid of " + std::to_string(pid));
      c.pid = static_cast<pid_t>(pid);
      c.segment = in.str();
      c.mapped = in.u64();
      return c;
    });
  }
};

}  // namespace

Runtime::Runtime(Env env) : env_(std::move(env)) {
  coll::checkForcedAlgorithms(env_);  // a bad AXON_ALGO_* fails before this PE joins the job
  logThreshold() = env_.logLevel;
  boot_ = std::make_unique<Bootstrap>(env_.launch, env_.timeoutSec, env_.jobKey);
  heap_ = std::make_shared<SymmetricHeap>(myPe(), nPes(), env_.heapMax, env_.heapChunk);
  // The control block is the first allocation, so it sits at offset 0 on every PE.
  controlOffset_ = *heap_->allocator().allocate(sizeof(ControlBlock), 4096);
  heap_->growLocal(heap_->allocator().top());
  exchangePeers();
  startGpu();
  connectNodes();

  std::vector<int> local;
  for (int pe = 0; pe < nPes(); ++pe) {
    if (nodeLocal_[pe]) local.push_back(pe);
  }
  bool allLocal = static_cast<int>(local.size()) == nPes();
  world_ = detail::TeamState::make(0, boot_->worldRanks(), myPe(), allLocal, "world");
  // Team names key the store's rendezvous, and each node's team has its own members: across nodes
  // each is named after its first PE ("node0", "node2"), so that two nodes' steps never meet.
  node_ = detail::TeamState::make(1, local, myPe(), true, allLocal ? "node" : "node" + std::to_string(local.front()));
  teamSlots_ = 0b11;
  attachCollectives(*world_.state());
  attachCollectives(*node_.state());
  startMessages();
}

void Runtime::startMessages() {
  p2p::RingLayout rings;
  rings.payload = env_.p2pEager;
  NetworkTransport* network = router_->network();
  p2p_ = std::make_unique<p2p::Engine>(*this, p2p::LocalChannel::create(*this, *node_.state(), rings),
                                       network ? &network->messageChannel() : nullptr);
  progress_.add(p2p_.get());
}

void Runtime::exchangePeers() {
  PeerCard me{hostIdentity(env_.node), env_.node.empty() ? hostName() : env_.node, pidNamespace(), ::getpid(),
              heap_->localName(), heap_->mapped()};
  SetupStep join(*boot_, "init", boot_->worldRanks(), "joining the job");
  auto cards = join.finish(me.encode());
  nodeLocal_.assign(nPes(), false);
  std::vector<pid_t> pids(nPes(), 0);
  std::vector<PeerCard> peers;
  for (int pe = 0; pe < nPes(); ++pe) {
    peers.push_back(PeerCard::decode(cards[pe], join.originOf(pe)));
    nodeNames_.push_back(peers.back().node);
  }
  SetupStep attach(*boot_, "init-attached", boot_->worldRanks(), "mapping the heaps of the PEs on each node");
  try {
    for (int pe = 0; pe < nPes(); ++pe) {
      if (peers[pe].host != me.host) continue;
      nodeLocal_[pe] = true;
      // A pid means something only in the namespace it came from.
      if (peers[pe].pidNamespace == me.pidNamespace && me.pidNamespace != "unknown") pids[pe] = peers[pe].pid;
      if (pe == myPe()) continue;
      heap_->attachPeer(pe, peers[pe].segment);
      heap_->mapPeer(pe, peers[pe].mapped);
    }
  } catch (const Error& e) {
    attach.fail(e);
  }
  // Everyone has opened every name it needs: the names can go, so a crash later leaks nothing.
  attach.finish();
  heap_->unlinkLocalName();
  liveness_ = Liveness(std::move(pids));

  int localCount = static_cast<int>(std::count(nodeLocal_.begin(), nodeLocal_.end(), true));
  if (localCount != env_.launch.localSize) {
    log(LogLevel::Warn, myPe(),
        "the launcher (" + env_.launch.source + ") says " + std::to_string(env_.launch.localSize) +
            " PEs per node but " + std::to_string(localCount) + " share this node");
  }
  router_ = std::make_unique<Router>(myPe(), nodeLocal_);
}

void Runtime::connectNodes() {
  // Every PE sees every card, so every PE decides alike whether the job spans nodes.
  if (std::count(nodeLocal_.begin(), nodeLocal_.end(), true) == nPes()) return;
  NetworkSetup setup{myPe(), nPes(), env_.timeoutSec,
                     [this] {
                       const int dead = findDeadPe();
                       if (dead >= 0) throw Error(ErrorCode::PeerDead, "PE " + std::to_string(myPe()) + ": " + deathOf(dead));
                     },
                     [this](const void* p) { return gpu_ && gpu_->isDeviceMemory(p); }, env_.ucxAtomics, {}, {}};
  setup.messageEagerMax = env_.p2pEager;
  if (gpu_) {
    // A peer's atomic on this PE's GPU heap, applied here by the GPU (no earlier stream failure is
    // reported: that is this PE's program's to see, at its next call).
    setup.gpuAtomic = [this](AtomicOp op, void* word, std::size_t width, const void* operand, const void* cond,
                             void* result) {
      gpu_->makeCurrent();
      const RemoteRef self{myPe(), gpu_->heap().offsetOf(word), word, HeapKind::Gpu};
      router_->gpuPeer()->atomic(op, self, width, operand, cond, result);
    };
    setup.gpuCopy = [this](void* dst, const void* src, std::size_t bytes) { gpu_->copyLocal(dst, src, bytes); };
  }
  std::vector<const HeapSpace*> heaps{heap_.get()};
  if (gpu_) heaps.push_back(&gpu_->heap());
  router_->setNetwork(connectNetwork(*boot_, setup, nodeLocal_, nodeNames_, heaps));
  progress_.add(router_->network());
  log(LogLevel::Info, myPe(), "PEs on other nodes through " + router_->network()->describe());
}

void Runtime::startGpu() {
  // A PE whose GPU set-up fails still joins the exchange below, so that every PE fails alike
  // instead of waiting for it.
  std::string failure;
  ErrorCode failureCode = ErrorCode::Internal;
  if (env_.backend == Backend::Host) {
    gpuWhyNot_ = "AXON_BACKEND=host";
  } else {
    try {
      gpu_ = makeGpuBackend(*this, gpuWhyNot_);
    } catch (const Error& e) {
      failure = e.what();
      failureCode = e.code();
    }
  }
  // Every PE must run the same backend: malloc allocates on the GPU heap on one and on the host
  // heap on another would break symmetry.
  SetupStep step(*boot_, "backend", boot_->worldRanks(), "the GPU backend");
  if (!failure.empty()) step.fail(failureCode, failure);
  auto all = step.finish(gpu_ ? std::string("gpu") : "host:" + gpuWhyNot_);
  std::string hostPes, gpuPes, why;
  for (int pe = 0; pe < nPes(); ++pe) {
    if (all[pe] == "gpu") {
      gpuPes += (gpuPes.empty() ? "" : ", ") + std::to_string(pe);
    } else {
      hostPes += (hostPes.empty() ? "" : ", ") + std::to_string(pe);
      if (why.empty()) why = "PE " + std::to_string(pe) + ": " + (all[pe].rfind("host:", 0) == 0 ? all[pe].substr(5) : all[pe]);
    }
  }
  if (!gpuPes.empty() && !hostPes.empty()) {
    throw Error(ErrorCode::Unsupported,
                "PE " + std::to_string(myPe()) + ": PEs " + gpuPes + " run the GPU backend but PEs " +
                    hostPes + " cannot (" + why + "); give every PE a GPU, or set AXON_BACKEND=host everywhere");
  }
  if (!gpu_) {
    if (env_.backend == Backend::Gpu) {
      throw Error(ErrorCode::Unsupported, "PE " + std::to_string(myPe()) +
                                              ": AXON_BACKEND=gpu but the GPU backend cannot start: " + gpuWhyNot_);
    }
    log(LogLevel::Info, myPe(), "host backend: " + gpuWhyNot_);
    return;
  }
  pinned_.assign(nPes(), 0);
  gpu_->connect(GpuSetup{*this, [this](GpuBackend& gpu) { return makeDeviceProxy(gpu, myPe(), nodeLocal_); }});
  GpuTransports transports = makeGpuTransports(GpuTransportSetup{*this, *gpu_, *heap_, [this] { pinHostHeap(); }});
  const bool stagedPath = transports.staged != nullptr;
  router_->setGpu(gpu_.get(), std::move(transports));
  // Served by the PE's one progress engine (its thread, and every wait for the proxy).
  if (router_->stageProxy()) progress_.add(router_->stageProxy());
  gpu_->finishConnect(stagedPath);
  pinHostHeap();
  log(LogLevel::Info, myPe(), "GPU backend on " + gpu_->description());
}

void Runtime::pinHostHeap() {
  if (!gpu_) return;
  for (int pe = 0; pe < nPes(); ++pe) {
    std::size_t mapped = heap_->mappedOf(pe);
    if (mapped <= pinned_[pe]) continue;
    char* start = static_cast<char*>(heap_->peerAddress(pe, 0)) + pinned_[pe];
    gpu_->pinHost(start, mapped - pinned_[pe]);
    pinnedRanges_.push_back(start);
    pinned_[pe] = mapped;
  }
}

HeapSpace* Runtime::heapContaining(const void* addr) const {
  if (heap_->contains(addr)) return heap_.get();
  if (gpu_ && gpu_->heap().contains(addr)) return &gpu_->heap();
  return nullptr;
}

std::shared_ptr<HeapSpace> Runtime::heapOwner(HeapKind kind) const {
  if (kind == HeapKind::Gpu && gpu_) return gpu_->heapOwner();
  return heap_;
}

Runtime::~Runtime() {
  // The stream host worker and the device proxy make host calls through the router's transports,
  // which go before the GPU backend: they stop first, after the progress engine's thread.
  progress_.stop();
  if (gpu_) gpu_->stopHostWork();
  // Pinned host ranges must be released while still mapped, each by its start.
  if (gpu_) {
    for (void* start : pinnedRanges_) gpu_->unpinHost(start);
  }
}

void Runtime::finalize() {
  // Every PE must be done touching every heap before any heap is unmapped.
  try {
    if (gpu_) gpu_->synchronize("finalize");
    // This PE's own writes into others' memory land first: a collective's last acks (a broadcast
    // root returns without them, coll/protocol.hpp) may still be in flight into a team's region
    // on a PE that unmaps it right after the barrier.
    quietAll();
    teamBarrier(*this, *world_.state(), "finalize");
  } catch (...) {
    boot_->finalize();
    throw;
  }
  std::atomic_ref<std::uint64_t>(control(myPe()).departed).store(1, std::memory_order_release);
  boot_->finalize();
}

void Runtime::checkPe(int pe, const char* api) const {
  if (pe < 0 || pe >= nPes()) {
    throw Error(ErrorCode::InvalidPe, "PE " + std::to_string(myPe()) + ": " + api + ": PE " +
                                          std::to_string(pe) + " is outside the world [0, " +
                                          std::to_string(nPes()) + ")");
  }
}

std::string Runtime::describe(const void* addr) const {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%p", addr);
  std::string s = buf;
  if (const HeapSpace* h = heapContaining(addr)) {
    s += std::string(" (") + (h->kind() == HeapKind::Gpu ? "GPU " : "") + "heap offset " +
         std::to_string(h->offsetOf(addr)) + ")";
  }
  return s;
}

RemoteRef Runtime::resolve(const void* addr, std::size_t bytes, int pe, const char* api,
                           const char* role) const {
  checkPe(pe, api);
  auto who = [&] { return "PE " + std::to_string(myPe()) + ": " + api + ": " + role + " "; };
  HeapSpace* heap = heapContaining(addr);
  if (!heap) {
    throw Error(ErrorCode::OutOfBounds,
                who() + describe(addr) + " is not in the symmetric heap (allocate it with "
                        "axon::malloc, or pass it as the local side of the call)");
  }
  std::size_t off = heap->offsetOf(addr);
  auto block = heap->allocator().find(off);
  // The first block of each heap is the runtime's own (control words at offset 0).
  if (!block || block->offset == controlOffset_) {
    throw Error(ErrorCode::OutOfBounds,
                who() + describe(addr) + " is in the heap but not in a live allocation (freed?)");
  }
  if (bytes > block->end() - off) {
    throw Error(ErrorCode::OutOfBounds,
                who() + "range of " + std::to_string(bytes) + " bytes at " + describe(addr) +
                    " runs " + std::to_string(bytes - (block->end() - off)) +
                    " bytes past its allocation (" + std::to_string(block->size) +
                    " bytes at heap offset " + std::to_string(block->offset) + ")");
  }
  return RemoteRef{pe, off, heap->peerAddress(pe, off), heap->kind()};
}

Transport& Runtime::transportFor(const RemoteRef& ref, const void* local, const char* api) const {
  return router_->transportFor(ref, local, api);
}

RemoteRef Runtime::controlRef(int pe, const std::uint64_t* localWord) const {
  const std::size_t off = heap_->offsetOf(localWord);
  return RemoteRef{pe, off, heap_->peerAddress(pe, off), HeapKind::Host};
}

int Runtime::findDeadPe() const {
  // Node-local PEs in our PID namespace first: a pid answers in microseconds.
  for (int pe = 0; pe < nPes(); ++pe) {
    if (liveness_.pidOf(pe) <= 0 || Liveness::processAlive(liveness_.pidOf(pe))) continue;
    if (std::atomic_ref<std::uint64_t>(control(pe).departed).load(std::memory_order_acquire)) continue;
    return pe;
  }
  // Every other PE through the store, which sees each one's connection drop.
  const int gone = boot_->goneRank();
  if (gone >= 0 && gone != myPe()) return gone;
  // A PE on another node whose endpoint failed (it died, or the way to it is gone).
  if (router_ && router_->network()) return router_->network()->failedPeer(nullptr);
  return -1;
}

std::string Runtime::deathOf(int pe) const {
  if (liveness_.pidOf(pe) > 0 && !Liveness::processAlive(liveness_.pidOf(pe))) {
    return "PE " + std::to_string(pe) + " (pid " + std::to_string(liveness_.pidOf(pe)) + ") exited";
  }
  std::string network;
  if (router_ && router_->network() && router_->network()->failedPeer(&network) == pe && boot_->goneRank() != pe) {
    return "PE " + std::to_string(pe) + " (node " + nodeNames_[pe] + ") cannot be reached: " + network;
  }
  std::string why = boot_->store().goneReason();
  return "PE " + std::to_string(pe) + " is gone (" + (why.empty() ? "its store connection closed" : why) + ")";
}

ControlBlock& Runtime::control(int pe) const {
  return *static_cast<ControlBlock*>(heap_->peerAddress(pe, controlOffset_));
}

Runtime& runtime(const char* api) {
  if (!g_runtime) {
    throw Error(ErrorCode::NotInitialized,
                std::string("axon: ") + api + " called " +
                    (g_wasFinalized ? "after finalize()" : "before init()"));
  }
  return *g_runtime;
}

PeContext& peContext(const char* api) { return runtime(api); }

void init() {
  std::lock_guard lock(g_lifecycle);
  if (g_runtime) {
    throw Error(ErrorCode::AlreadyInitialized,
                "axon: init() called twice (PE " + std::to_string(g_runtime->myPe()) +
                    " is already initialized); call finalize() first");
  }
  g_runtime = std::make_unique<Runtime>(Env::fromProcess());
}

void finalize() {
  std::lock_guard lock(g_lifecycle);
  Runtime& rt = runtime("finalize");
  // Whatever finalize meets (a dead peer, a timeout), this PE leaves: the runtime goes.
  struct Leave {
    ~Leave() {
      g_runtime.reset();
      g_wasFinalized = true;
    }
  } leave;
  rt.finalize();
}

bool isInitialized() noexcept { return static_cast<bool>(g_runtime); }
int myPe() { return runtime("my_pe").myPe(); }
int nPes() { return runtime("n_pes").nPes(); }
std::string launcherName() { return runtime("launcher_name").env().launch.source; }
std::string pathTo(int pe) {
  Runtime& rt = runtime("path_to");
  rt.checkPe(pe, "path_to");
  return rt.router().pathTo(pe, rt.defaultHeap().kind());
}

void Runtime::attachCollectives(const detail::TeamState& team) {
  team.collectives = coll::makeTeamCollectives(*this, router_->network(), team, env_.collBuffer);
  team.syncOrder = team.collectives;
}

}  // namespace axon
