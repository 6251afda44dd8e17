// The staging-space client: requests to every server of the space over rpc::Node (UCX), data
// through the servers' mapped arenas where they share this node, and the reassembly of a get's
// box from its fragments (host threads, or one fused kernel for GPU memory).
#include "axon/space.hpp"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>
#include <sstream>
#include <thread>

#include "axon/error.hpp"
#include "core/build_version.hpp"
#include "core/env.hpp"
#include "core/host_identity.hpp"
#include "core/log.hpp"  // secondsText
#include "space/arena.hpp"
#include "space/gpu_side.hpp"
#include "space/placement.hpp"
#include "space/protocol.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

using Clock = std::chrono::steady_clock;
using protocol::Op;

namespace {

// Pieces at least this large go through a same-node server's mapped arena (two short requests
// around one copy); smaller ones travel with their request (one message).
constexpr std::uint64_t kSharedMemoryMin = 64 * 1024;
// A pipelined GPU put's chunk: an eighth of the part, between 256 KiB and 4 MiB, so that copies
// and sends overlap from the first chunks on; kPipelineSlots pinned buffers are in flight.
constexpr std::uint64_t kPipelineChunkMin = 256 * 1024, kPipelineChunkMax = 4 * 1024 * 1024;
constexpr std::size_t kPipelineSlots = 4;
// Below this a GPU put's part is one copy into a pinned buffer and one message: a pipeline's
// reservation and commit would cost more round trips than its overlap saves.
constexpr std::uint64_t kPipelineMin = 4 * 1024 * 1024;
std::uint64_t pipelineChunk(std::uint64_t bytes) {
  return std::clamp<std::uint64_t>((bytes / 8 + 4095) / 4096 * 4096, kPipelineChunkMin, kPipelineChunkMax);
}
// A batch's list of items travels in its message header, which UCX bounds (8 KiB over TCP).
constexpr std::size_t kBatchHeaderMax = 4096;
// Staging offsets of fragments: aligned for wide loads in the reassembly kernel.
constexpr std::uint64_t kStagingAlign = 256;
// Servers answer a waiting get or version wait at the caller's deadline; the client allows this
// much more before it calls the server lost.
constexpr double kReplyGraceSec = 5.0;

std::uint64_t alignUp(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

Clock::time_point deadlineAfter(double sec) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(sec));
}

std::uint64_t millisUntil(Clock::time_point t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return left > 0 ? static_cast<std::uint64_t>(left) : 0;
}

// {"address": "10.0.0.2:4711", "epoch": 123, ...} -> address and epoch.
void readContactFile(const std::string& path, std::string& address, std::uint64_t& epoch) {
  std::ifstream f(path);
  if (!f) {
    throw Error(ErrorCode::ServerLost, "staging-space contact file " + path +
                                           " cannot be read (no server running, or the wrong path?)");
  }
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  auto field = [&](const std::string& key) -> std::string {
    const auto at = text.find("\"" + key + "\"");
    if (at == std::string::npos) return "";
    auto p = text.find(':', at);
    if (p == std::string::npos) return "";
    ++p;
    while (p < text.size() && (text[p] == ' ' || text[p] == '"')) ++p;
    auto e = p;
    while (e < text.size() && text[e] != '"' && text[e] != ',' && text[e] != '}' && text[e] != '\n') ++e;
    return text.substr(p, e - p);
  };
  address = field("address");
  const std::string e = field("epoch");
  if (address.empty() || e.empty()) {
    throw Error(ErrorCode::InvalidArgument, "staging-space contact file " + path + " is not one a server wrote: " + text);
  }
  epoch = std::stoull(e);
}

std::string listBoxes(const std::vector<Box>& boxes) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(boxes.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + describe(boxes[i]);
  if (boxes.size() > shown) out += " and " + std::to_string(boxes.size() - shown) + " more";
  return out;
}

}  // namespace

// One request to one server: its reply, and the data messages that land for it.
struct Call {
  int server = -1;
  Op op{};
  bool replied = false;
  bool answered = false;  // the server itself replied (not a failure found here)
  int status = 0;
  std::string message;
  std::string reply;  // the reply's fields, after status and message
  // Fetch: where each fragment lands.
  std::vector<void*> landing;
  std::shared_ptr<void> landingOwner;  // the staging the fragments land in, alive while UCX may write
  rpc::Memory memory = rpc::Memory::Host;
  std::size_t landed = 0;
  std::string dataFailure;
  bool done() const { return replied && (status != 0 || landed == landing.size()); }
};

// Small nonblocking puts gather per server; a batch goes out when full, or when anything waits.
struct Batch {
  wire::ByteWriter items;
  std::uint32_t count = 0;
  std::vector<char> data;
  std::shared_ptr<Call> call;  // set once sent
  Clock::time_point deadline;
};

struct Request::State {
  Client::Impl* client = nullptr;
  std::vector<std::shared_ptr<Call>> calls;
  Clock::time_point deadline;
  std::string what;
  std::vector<char> ownedCopy;  // a host-staged copy of GPU data, kept until the put is done
  std::vector<std::weak_ptr<Batch>> batches;  // batches holding some of a put's parts
  std::function<void()> finish;  // a get's reassembly, once every call is done
  bool ended = false;
  std::exception_ptr failure;
};

class Client::Impl {
 public:
  explicit Impl(const ConnectOptions& o) : options_(o) {
    try {
      connectAll(o);
    } catch (...) {
      // The progress thread and UCX's callbacks must end before the members they use go.
      engine_.stop();
      node_.reset();
      throw;
    }
  }

  void connectAll(const ConnectOptions& o) {
    const Env env = Env::fromProcess();
    timeoutSec_ = o.timeoutSec > 0 ? o.timeoutSec : env.timeoutSec;
    batchBytes_ = o.batchBytes >= 0 ? static_cast<std::uint64_t>(o.batchBytes) : env.spaceBatch;
    identity_ = hostIdentity(env.node);
    std::string address = o.address.empty() ? env.spaceAddr : o.address;
    std::uint64_t expectEpoch = 0;
    std::string origin = o.address.empty() ? "AXON_SPACE_ADDR" : "the address given";
    if (address.empty()) {
      const std::string file = !o.contactFile.empty() ? o.contactFile : env.spaceFile;
      if (file.empty()) {
        throw Error(ErrorCode::InvalidArgument,
                    "no staging server to connect to: pass an address, or set AXON_SPACE_ADDR (host:port) or "
                    "AXON_SPACE_FILE (a server's --contact-file)");
      }
      readContactFile(file, address, expectEpoch);
      origin = "contact file " + file;
    }
    std::string why;
    gpu_ = makeGpuSide(why);
    node_ = rpc::makeNode("space client");
    node_->setHandlers({[this](rpc::ConnId c, std::string h, rpc::Payload p) { onMessage(c, std::move(h), std::move(p)); },
                        [this](rpc::ConnId c, const std::string& w) { onLost(c, w); }, nullptr});
    engine_.add(node_.get());
    const auto deadline = deadlineAfter(timeoutSec_);
    const std::uint64_t epoch = connectServer(address, deadline, origin);
    if (expectEpoch && epoch != expectEpoch) {
      throw Error(ErrorCode::ServerLost, "the " + origin + " is stale: it names server " + address + " of epoch " +
                                             std::to_string(expectEpoch) + ", but the server there now has epoch " +
                                             std::to_string(epoch) + " (restarted?)");
    }
    // The rest of the space, then all of it in placement order (the handlers, which may run on
    // the progress thread meanwhile, read servers_ under mu_).
    for (std::size_t i = 0; i < members_.size(); ++i) {
      if (static_cast<int>(i) != servers_[0].index) connectServer(members_[i], deadline, "the space's member list");
    }
    std::lock_guard lock(mu_);
    std::vector<ServerConn> ordered(members_.size());
    for (ServerConn& sc : servers_) ordered[sc.index] = std::move(sc);
    servers_ = std::move(ordered);
  }

  ~Impl() {
    try {
      close();
    } catch (...) {
    }
    engine_.stop();
  }

  void close() {
    std::unordered_map<Request::State*, std::shared_ptr<Request::State>> open;
    {
      std::lock_guard lock(mu_);
      open.swap(open_);
    }
    flushBatches();
    for (auto& [p, s] : open) {
      try {
        finishRequest(*s);
      } catch (...) {
      }
    }
    std::vector<rpc::ConnId> conns;
    {
      std::lock_guard lock(mu_);
      for (auto& s : servers_) {
        if (s.conn) conns.push_back(s.conn);
        s.conn = 0;
        if (s.lost.empty()) s.lost = "the client was closed";
      }
    }
    for (rpc::ConnId c : conns) node_->close(c);
  }

  // --- variables ------------------------------------------------------------------------------

  void define(const Variable& v) {
    checkDefinition(v);
    std::vector<std::shared_ptr<Call>> calls;
    const auto deadline = deadlineAfter(timeoutSec_);
    for (std::size_t s = 0; s < servers_.size(); ++s) {
      wire::ByteWriter w = protocol::begin(Op::Define, 0);
      protocol::writeVariable(w, v);
      calls.push_back(issue(static_cast<int>(s), Op::Define, w));
    }
    for (auto& c : calls) check(*c, waitCall(c, deadline, "define of '" + v.name + "'"));
    std::lock_guard lock(mu_);
    vars_[v.name] = v;
  }

  Variable variable(const std::string& name) {
    checkName(name);
    {
      std::lock_guard lock(mu_);
      auto it = vars_.find(name);
      if (it != vars_.end()) return it->second;
    }
    wire::ByteWriter w = protocol::begin(Op::Describe, 0);
    w.str(name);
    auto c = issue(0, Op::Describe, w);
    check(*c, waitCall(c, deadlineAfter(timeoutSec_), "describe of '" + name + "'"));
    wire::ByteReader r(c->reply);
    Variable v = protocol::readVariable(r);
    std::lock_guard lock(mu_);
    vars_[name] = v;
    return v;
  }

  // --- puts -----------------------------------------------------------------------------------

  std::shared_ptr<Request::State> iput(const std::string& name, std::int64_t version, const Index& offset,
                                       const Index& count, const void* data, double timeoutSec, bool blocking) {
    const Variable v = variable(name);
    Index hi(offset.size());
    if (offset.size() != count.size()) {
      throw Error(ErrorCode::InvalidArgument, "put of '" + name + "': offset has " + std::to_string(offset.size()) +
                                                  " entries but count has " + std::to_string(count.size()));
    }
    for (std::size_t d = 0; d < offset.size(); ++d) {
      if (__builtin_add_overflow(offset[d], count[d], &hi[d])) {
        throw Error(ErrorCode::InvalidArgument, "put of '" + name + "': offset + count overflows in dimension " +
                                                    std::to_string(d));
      }
    }
    const Box box = Box::of(offset, hi);
    const std::string what = "put of '" + name + "' version " + std::to_string(version) + " box " + describe(box);
    checkBoxInShape(box, v.shape, what);
    if (!data) throw Error(ErrorCode::InvalidArgument, what + ": the data pointer is null");
    const std::size_t elem = dataTypeSize(v.dtype);
    const std::uint64_t bytes = static_cast<std::uint64_t>(byteSize(box, elem));
    auto state = newRequest(what, timeoutSec);
    bool device = gpu_ && gpu_->isDevice(data);
    const char* src = static_cast<const char*>(data);
    if (device && (options_.gpuPath == GpuPath::HostStaged || bytes < kSharedMemoryMin)) {
      // The baseline: the whole block to host memory first, then a host put. Small blocks take
      // this way on every path: one message after a short copy.
      state->ownedCopy.resize(bytes);
      gpu_->copy(state->ownedCopy.data(), data, bytes);
      src = state->ownedCopy.data();
      device = false;
      if (options_.gpuPath == GpuPath::HostStaged) bump(&ClientStats::hostStagedCopies);
    }
    // One row range per part: contiguous in the block.
    std::int64_t rowBytes = static_cast<std::int64_t>(bytes) / std::max<std::int64_t>(1, box.extent(0));
    const Placement placement(v.shape, static_cast<int>(servers_.size()));
    for (const auto& [s, part] : placement.split(box)) {
      const char* partData = src + (part.lo[0] - box.lo[0]) * rowBytes;
      const std::uint64_t partBytes = static_cast<std::uint64_t>(part.extent(0) * rowBytes);
      putPart(*state, s, name, version, part, partData, partBytes, device, !blocking && !device);
    }
    {
      std::lock_guard lock(mu_);
      stats_.puts += 1;
      stats_.bytesPut += bytes;
    }
    return handOver(std::move(state), blocking);
  }

  std::shared_ptr<Request::State> newRequest(const std::string& what, double timeoutSec) {
    auto state = std::make_shared<Request::State>();
    state->client = this;
    state->deadline = deadlineAfter(timeoutSec > 0 ? timeoutSec : timeoutSec_);
    state->what = what;
    return state;
  }

  // A blocking call waits here (nullptr back); a nonblocking one is kept until waited for.
  std::shared_ptr<Request::State> handOver(std::shared_ptr<Request::State> state, bool blocking) {
    if (blocking) {
      finishRequest(*state);
      return nullptr;
    }
    std::lock_guard lock(mu_);
    open_.emplace(state.get(), state);
    return state;
  }

  void putPart(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
               const char* data, std::uint64_t bytes, bool device, bool mayBatch) {
    ServerConn& server = servers_[s];
    const std::uint64_t timeoutMs = millisUntil(st.deadline);
    if (server.arena && (bytes >= kSharedMemoryMin || device)) {
      // Reserve, copy into the mapped arena, commit: one copy, no network.
      wire::ByteWriter w = protocol::begin(Op::Reserve, 0);
      w.str(name).i64(version);
      protocol::writeBox(w, part);
      w.u64(timeoutMs);
      auto c = issue(s, Op::Reserve, w);
      check(*c, waitCall(c, st.deadline + graceDuration(), st.what));
      wire::ByteReader r(c->reply);
      const std::uint64_t reservation = r.u64(), offset = r.u64();
      try {
        char* dst = server.arena->at(offset, bytes);
        if (device) {
          gpu_->copy(dst, data, bytes);
        } else {
          CopyRegion whole;
          whole.ndim = 1;
          whole.extent[0] = static_cast<std::int64_t>(bytes);
          copyRegions({HostRegionCopy{whole, data, dst}}, 0);
        }
      } catch (...) {
        wire::ByteWriter aw = protocol::begin(Op::Abort, 0);  // its memory goes back at once
        aw.u64(reservation);
        node_->send(server.conn, aw.bytes(), nullptr, 0, rpc::Memory::Host, [](const std::string&) {});
        throw;
      }
      wire::ByteWriter cw = protocol::begin(Op::Commit, 0);
      cw.u64(reservation);
      st.calls.push_back(issue(s, Op::Commit, cw));
      bump(&ClientStats::sharedMemoryPuts);
      setPath(device ? "GPU to the server's mapped memory (one DMA)" : "host copy into the server's mapped memory");
      return;
    }
    if (mayBatch && batchBytes_ > 0 && bytes <= batchBytes_) {
      addToBatch(st, s, name, version, part, data, bytes);
      return;
    }
    // The bytes stay where they are until UCX has sent them: the caller's buffer, or a pinned copy
    // of a GPU part too small to pipeline (kept alive by the send).
    std::shared_ptr<StagingBuffer> pinned;
    const char* path = device ? "GPU memory sent by UCX" : "host memory sent by UCX";
    if (device && options_.gpuPath == GpuPath::Direct) {
      if (bytes >= kPipelineMin) {
        putPipelined(st, s, name, version, part, data, bytes);
        return;
      }
      pinned = gpu_->pinnedStaging(bytes);
      gpu_->copy(pinned->data(), data, bytes);
      data = reinterpret_cast<const char*>(pinned->data());
      device = false;
      path = "GPU memory through a pinned host buffer, sent by UCX";
    }
    wire::ByteWriter w = protocol::begin(Op::Put, 0);
    w.str(name).i64(version);
    protocol::writeBox(w, part);
    w.u64(timeoutMs);
    st.calls.push_back(issue(s, Op::Put, w, data, bytes, device ? rpc::Memory::Cuda : rpc::Memory::Host, pinned));
    bump(&ClientStats::ucxPuts);
    setPath(path);
  }

  // GPU data to a server on another node: one reservation, filled by Writes of chunks that are
  // copied into pinned host buffers while the previous chunks are on the wire (kPipelineSlots in
  // flight), then committed. Nothing is visible before the commit; a failure aborts it.
  void putPipelined(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
                    const char* data, std::uint64_t bytes) {
    ServerConn& server = servers_[s];
    wire::ByteWriter w = protocol::begin(Op::Reserve, 0);
    w.str(name).i64(version);
    protocol::writeBox(w, part);
    w.u64(millisUntil(st.deadline));
    auto c = issue(s, Op::Reserve, w);
    check(*c, waitCall(c, st.deadline + graceDuration(), st.what));
    wire::ByteReader r(c->reply);
    const std::uint64_t reservation = r.u64();
    const std::uint64_t chunk = pipelineChunk(bytes);
    std::uint64_t chunks = 0;
    try {
      std::shared_ptr<StagingBuffer> slots[kPipelineSlots];
      std::shared_ptr<Call> writes[kPipelineSlots];
      for (std::uint64_t at = 0; at < bytes; at += chunk, ++chunks) {
        const std::size_t k = chunks % kPipelineSlots;
        if (writes[k]) check(*writes[k], waitCall(writes[k], st.deadline + graceDuration(), st.what));
        if (!slots[k]) slots[k] = gpu_->pinnedStaging(chunk);
        const std::uint64_t n = std::min(chunk, bytes - at);
        gpu_->copy(slots[k]->data(), data + at, n);
        wire::ByteWriter ww = protocol::begin(Op::Write, 0);
        ww.u64(reservation).u64(at);
        // The buffer stays alive until UCX has sent it, whatever becomes of this put.
        writes[k] = issue(s, Op::Write, ww, slots[k]->data(), n, rpc::Memory::Host, slots[k]);
      }
      for (auto& wc : writes) {
        if (wc) check(*wc, waitCall(wc, st.deadline + graceDuration(), st.what));
      }
    } catch (...) {
      wire::ByteWriter aw = protocol::begin(Op::Abort, 0);  // the server frees it once its data has landed
      aw.u64(reservation);
      if (server.conn) node_->send(server.conn, aw.bytes(), nullptr, 0, rpc::Memory::Host, [](const std::string&) {});
      throw;
    }
    wire::ByteWriter cw = protocol::begin(Op::Commit, 0);
    cw.u64(reservation);
    st.calls.push_back(issue(s, Op::Commit, cw));
    {
      std::lock_guard lock(mu_);
      stats_.pipelinedPuts += 1;
      stats_.pipelineChunks += chunks;
    }
    setPath("GPU memory through pinned host buffers (pipelined), sent by UCX");
  }

  void addToBatch(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
                  const char* data, std::uint64_t bytes) {
    std::shared_ptr<Batch> sendNow;
    {
      std::lock_guard lock(batchMutex_);
      auto& b = batches_[s];
      if (!b) {
        b = std::make_shared<Batch>();
        b->deadline = st.deadline;
      }
      b->items.str(name).i64(version);
      protocol::writeBox(b->items, part);
      b->items.u64(bytes);
      ++b->count;
      b->data.insert(b->data.end(), data, data + bytes);
      b->deadline = std::min(b->deadline, st.deadline);
      st.batches.push_back(b);
      // Full, or its item list near what a message header may hold.
      if (b->data.size() >= batchBytes_ || b->items.bytes().size() >= kBatchHeaderMax) {
        sendNow = b;
        b.reset();
      }
    }
    bump(&ClientStats::batchedPuts);
    setPath("host memory gathered into a batch, sent by UCX");
    if (sendNow) sendBatch(s, sendNow);
  }

  void sendBatch(int s, const std::shared_ptr<Batch>& b) {
    wire::ByteWriter w = protocol::begin(Op::PutBatch, 0);
    w.u32(b->count);
    std::string head = w.bytes() + b->items.bytes();
    wire::ByteWriter tail;
    tail.u64(millisUntil(b->deadline));
    head += tail.bytes();
    // The batch's bytes live until UCX is done with them (the send's completion holds it).
    b->call = issueCall(s, Op::PutBatch, std::move(head), std::make_shared<Call>(), b->data.data(), b->data.size(),
                        rpc::Memory::Host, b);
    bump(&ClientStats::batches);
  }

  void flushBatches() {
    std::map<int, std::shared_ptr<Batch>> pending;
    {
      std::lock_guard lock(batchMutex_);
      pending.swap(batches_);
    }
    for (auto& [s, b] : pending) {
      if (b) sendBatch(s, b);
    }
  }

  // --- gets -----------------------------------------------------------------------------------

  std::shared_ptr<Request::State> iget(const std::string& name, std::int64_t version, const Index& lo,
                                       const Index& hi, void* out, std::size_t outBytes, double timeoutSec,
                                       bool blocking) {
    const Variable v = variable(name);
    const Box box = Box::of(lo, hi);
    const std::string what = "get of '" + name + "' version " + std::to_string(version) + " box " + describe(box);
    checkBoxInShape(box, v.shape, what);
    const std::size_t elem = dataTypeSize(v.dtype);
    const std::uint64_t need = static_cast<std::uint64_t>(byteSize(box, elem));
    if (!out) throw Error(ErrorCode::InvalidArgument, what + ": the output pointer is null");
    if (outBytes < need) {
      throw Error(ErrorCode::InvalidArgument, what + ": the output buffer holds " + std::to_string(outBytes) +
                                                  " bytes; the box of " + dataTypeName(v.dtype) + " needs " +
                                                  std::to_string(need));
    }
    flushBatches();  // a get after puts of this client sees them
    auto state = newRequest(what, timeoutSec);
    const bool device = gpu_ && gpu_->isDevice(out);
    // One query per server, for its parts of the box.
    const Placement placement(v.shape, static_cast<int>(servers_.size()));
    std::map<int, std::vector<Box>> parts;
    for (const auto& [s, part] : placement.split(box)) parts[s].push_back(part);
    auto queries = std::make_shared<std::vector<std::pair<int, std::shared_ptr<Call>>>>();
    for (auto& [s, boxes] : parts) {
      wire::ByteWriter w = protocol::begin(Op::Query, 0);
      w.str(name).i64(version).u32(static_cast<std::uint32_t>(boxes.size()));
      for (const Box& b : boxes) protocol::writeBox(w, b);
      w.u64(millisUntil(state->deadline));
      auto c = issue(s, Op::Query, w);
      state->calls.push_back(c);
      queries->emplace_back(s, c);
    }
    if (device && (options_.gpuPath == GpuPath::HostStaged || need < kSharedMemoryMin)) {
      // The baseline: the box assembled in host memory, then copied to the GPU in one piece.
      // Small boxes take this way on every path: one copy, no kernel.
      const bool baseline = options_.gpuPath == GpuPath::HostStaged;
      state->finish = [this, state = state.get(), queries, box, elem, out, need, name, version, baseline] {
        state->ownedCopy.resize(need);
        assemble(*state, *queries, box, elem, reinterpret_cast<unsigned char*>(state->ownedCopy.data()), false, name,
                 version);
        gpu_->copy(out, state->ownedCopy.data(), need);
        if (baseline) bump(&ClientStats::hostStagedCopies);
      };
    } else {
      state->finish = [this, state = state.get(), queries, box, elem, out, device, name, version] {
        assemble(*state, *queries, box, elem, static_cast<unsigned char*>(out), device, name, version);
      };
    }
    return handOver(std::move(state), blocking);
  }

  // Every query answered: fetch the fragments (or read them from mapped arenas) and copy the box.
  void assemble(Request::State& st, const std::vector<std::pair<int, std::shared_ptr<Call>>>& queries, const Box& box,
                std::size_t elem, unsigned char* out, bool device, const std::string& name, std::int64_t version) {
    struct Source {
      int server;
      std::uint64_t lease;
      std::vector<Fragment> fragments;
    };
    std::vector<Source> sources;
    std::vector<Box> missing;
    const Call* failed = nullptr;
    std::uint64_t stagingBytes = 0;
    for (const auto& [s, c] : queries) {
      wire::ByteReader r(c->reply);
      if (c->status == static_cast<int>(ErrorCode::Incomplete)) {
        const std::uint32_t n = r.count(17);
        for (std::uint32_t i = 0; i < n; ++i) missing.push_back(protocol::readBox(r));
        continue;
      }
      if (c->status != 0) {
        if (!failed) failed = c.get();
        continue;
      }
      Source src{s, r.u64(), {}};
      const std::uint32_t n = r.count(17);
      for (std::uint32_t i = 0; i < n; ++i) {
        Fragment f;
        f.piece = protocol::readBox(r);
        f.offset = r.u64();
        f.rangeStart = r.u64();
        f.rangeBytes = r.u64();
        if (!servers_[s].arena || device) stagingBytes = alignUp(stagingBytes, kStagingAlign) + f.rangeBytes;
        src.fragments.push_back(f);
      }
      sources.push_back(std::move(src));
    }
    // Leases not yet handed to a Fetch are ended (Done) however this get ends, so that a failed
    // get (another server's part missing, a fetch failing) never leaves a version pinned.
    std::vector<std::pair<int, std::uint64_t>> openLeases;
    for (const Source& src : sources) {
      if (src.lease) openLeases.emplace_back(src.server, src.lease);
    }
    struct EndLeases {
      Impl* self;
      std::vector<std::pair<int, std::uint64_t>>* leases;
      ~EndLeases() {
        for (auto [s, lease] : *leases) self->sendDone(s, lease);
      }
    } endLeases{this, &openLeases};
    if (failed) check(*failed, true);
    if (!missing.empty()) {
      throw Error(ErrorCode::Incomplete, st.what + ": not fully written within the timeout; missing " +
                                             std::to_string(missing.size()) + " box(es): " + listBoxes(missing));
    }
    // Where fragments that are not read in place land: device staging for a GPU destination,
    // host staging for fragments that come over UCX to a host destination.
    // Owned through shared pointers that the fetch calls hold too: UCX may still be landing a
    // fragment when this get fails and unwinds.
    // Fragments from UCX for a GPU destination land in pinned host memory first (GpuPath::Direct),
    // then go up with the mapped ones: UCX's host path, and DMAs, beat UCX's own GPU staging.
    std::shared_ptr<void> stagingOwner;
    unsigned char* staging = nullptr;
    unsigned char* pinnedLanding = nullptr;
    if (stagingBytes) {
      if (device) {
        std::shared_ptr<StagingBuffer> d = gpu_->staging(stagingBytes);
        staging = d->data();
        stagingOwner = d;
        const bool anyUcx = std::any_of(sources.begin(), sources.end(),
                                        [&](const Source& src) { return servers_[src.server].arena == nullptr; });
        if (anyUcx && options_.gpuPath == GpuPath::Direct) {
          std::shared_ptr<StagingBuffer> h = gpu_->pinnedStaging(stagingBytes);
          pinnedLanding = h->data();
          stagingOwner = std::make_shared<std::pair<std::shared_ptr<StagingBuffer>, std::shared_ptr<StagingBuffer>>>(d, h);
        }
      } else {
        auto h = std::make_shared<std::vector<unsigned char>>(stagingBytes);
        staging = h->data();
        stagingOwner = h;
      }
    }
    std::vector<HostRegionCopy> hostCopies;
    std::vector<kernels::RegionCopy> deviceCopies;
    std::vector<GpuSide::Span> uploads;
    std::vector<std::pair<int, std::shared_ptr<Call>>> fetches;
    std::uint64_t at = 0;
    std::uint64_t fragments = 0;
    for (Source& src : sources) {
      ServerConn& server = servers_[src.server];
      const bool inPlace = server.arena != nullptr;
      auto fetch = std::make_shared<Call>();
      for (const Fragment& f : src.fragments) {
        const Box overlap = *intersect(f.piece, box);
        const CopyRegion region = planCopy(f.piece, box, overlap, elem);
        ++fragments;
        if (inPlace && !device) {
          hostCopies.push_back({region, server.arena->at(f.offset, f.rangeStart + f.rangeBytes), out});
          continue;
        }
        at = alignUp(at, kStagingAlign);
        unsigned char* landing = staging + at;
        // The piece's (virtual) start in staging: its needed bytes begin at rangeStart.
        const std::uint64_t pieceBase = reinterpret_cast<std::uint64_t>(landing) - f.rangeStart;
        if (inPlace) {
          uploads.push_back({landing, server.arena->at(f.offset, f.rangeStart + f.rangeBytes) + f.rangeStart, f.rangeBytes});
        } else if (pinnedLanding) {
          fetch->landing.push_back(pinnedLanding + at);
          uploads.push_back({landing, pinnedLanding + at, f.rangeBytes});
        } else {
          fetch->landing.push_back(landing);
        }
        if (device) {
          kernels::RegionCopy rc;
          rc.region = region;
          rc.src = pieceBase;
          rc.dst = reinterpret_cast<std::uint64_t>(out);
          deviceCopies.push_back(rc);
        } else {
          hostCopies.push_back({region, reinterpret_cast<const void*>(pieceBase), out});
        }
        at += f.rangeBytes;
      }
      if (!src.lease) continue;
      if (inPlace) continue;  // Done after the copies
      wire::ByteWriter w = protocol::begin(Op::Fetch, 0);
      w.u64(src.lease);
      fetch->memory = device && !pinnedLanding ? rpc::Memory::Cuda : rpc::Memory::Host;
      fetch->landingOwner = stagingOwner;
      openLeases.erase(std::remove(openLeases.begin(), openLeases.end(), std::make_pair(src.server, src.lease)),
                       openLeases.end());  // the server ends it once sent
      fetches.emplace_back(src.server, issueCall(src.server, Op::Fetch, w.bytes(), fetch));
    }
    for (auto& [s, c] : fetches) check(*c, waitCall(c, st.deadline + graceDuration(), st.what));
    if (!uploads.empty()) gpu_->copyAll(uploads);
    int threads = 0;
    if (!hostCopies.empty()) threads = copyRegions(hostCopies, 0);
    if (!deviceCopies.empty()) gpu_->reassemble(std::move(deviceCopies));
    std::lock_guard lock(mu_);
    stats_.gets += 1;
    stats_.bytesGot += static_cast<std::uint64_t>(byteSize(box, elem));
    stats_.fragments += fragments;
    if (device) ++stats_.fusedKernels;
    if (threads) stats_.hostCopyThreads = static_cast<std::uint64_t>(threads);
    bool anyShared = false, anyUcx = false;
    for (const Source& src : sources) (servers_[src.server].arena ? anyShared : anyUcx) = true;
    if (anyShared) ++stats_.sharedMemoryGets;
    if (anyUcx) ++stats_.ucxGets;
    stats_.lastPath = std::string(anyShared ? "from the server's mapped memory" : "by UCX") +
                      (pinnedLanding ? " into pinned host memory" : "") +
                      (device ? " into device staging, then one fused kernel" : ", then host copy threads");
    (void)name;
    (void)version;
  }

  // --- versions, release, stats ---------------------------------------------------------------

  std::int64_t waitVersion(const std::string& name, std::int64_t atLeast, double timeoutSec) {
    const Variable v = variable(name);
    const double t = timeoutSec > 0 ? timeoutSec : timeoutSec_;
    const auto deadline = deadlineAfter(t);
    const Placement placement(v.shape, static_cast<int>(servers_.size()));
    std::string seen;
    std::int64_t searchFrom = atLeast;
    do {
      std::vector<std::pair<int, std::shared_ptr<Call>>> calls;
      for (std::size_t s = 0; s < servers_.size(); ++s) {
        if (placement.ownedVolume(static_cast<int>(s)) == 0) continue;
        wire::ByteWriter w = protocol::begin(Op::WaitVersion, 0);
        w.str(name).i64(searchFrom).u64(millisUntil(deadline));
        calls.emplace_back(static_cast<int>(s), issue(static_cast<int>(s), Op::WaitVersion, w));
      }
      std::set<std::int64_t> common;
      bool first = true;
      std::int64_t newest = atLeast;
      seen.clear();
      for (auto& [s, c] : calls) {
        check(*c, waitCall(c, deadline + graceDuration(), "wait_version of '" + name + "'"));
        wire::ByteReader r(c->reply);
        const std::uint32_t n = r.count(8);
        std::set<std::int64_t> mine;
        for (std::uint32_t i = 0; i < n; ++i) mine.insert(r.i64());
        if (!mine.empty()) newest = std::max(newest, *mine.rbegin());
        seen += (seen.empty() ? "" : "; ") + servers_[s].address + " has " + std::to_string(mine.size());
        if (first) common = mine;
        else {
          std::set<std::int64_t> both;
          std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::inserter(both, both.end()));
          common.swap(both);
        }
        first = false;
      }
      if (!common.empty()) return *common.rbegin();
      // No version complete everywhere yet: ask from the newest one some server has, so that the
      // servers wait for it instead of answering at once again.
      searchFrom = newest;
    } while (Clock::now() < deadline);
    throw Error(ErrorCode::Timeout, "wait_version of '" + name + "': no version >= " + std::to_string(atLeast) +
                                        " was complete on every server within " + secondsText(t) +
                                        " (complete versions >= " + std::to_string(atLeast) + ": " + seen + ")");
  }

  void release(const std::string& name, std::int64_t version) {
    checkName(name);
    const auto deadline = deadlineAfter(timeoutSec_);
    std::vector<std::shared_ptr<Call>> calls;
    for (std::size_t s = 0; s < servers_.size(); ++s) {
      wire::ByteWriter w = protocol::begin(Op::Release, 0);
      w.str(name).i64(version);
      calls.push_back(issue(static_cast<int>(s), Op::Release, w));
    }
    for (auto& c : calls) check(*c, waitCall(c, deadline, "release of '" + name + "'"));
  }

  Stats stats() {
    Stats out;
    const auto deadline = deadlineAfter(timeoutSec_);
    for (std::size_t s = 0; s < servers_.size(); ++s) {
      auto c = issue(static_cast<int>(s), Op::Stats, protocol::begin(Op::Stats, 0));
      check(*c, waitCall(c, deadline, "stats"));
      wire::ByteReader r(c->reply);
      const StoreStats st = protocol::readStats(r);
      ServerStats ss;
      ss.address = servers_[s].address;
      ss.capacity = st.capacity;
      ss.bytesInUse = st.bytesInUse;
      ss.highWater = st.highWater;
      ss.pieces = st.pieces;
      ss.versions = st.versions;
      ss.variables = st.variables;
      ss.putsCommitted = st.putsCommitted;
      ss.putsAborted = st.putsAborted;
      ss.bytesPut = st.bytesPut;
      ss.lookups = st.lookups;
      ss.bytesServed = st.bytesServed;
      ss.versionsDropped = st.versionsDropped;
      ss.versionsEvicted = st.versionsEvicted;
      ss.putsRejectedFull = st.putsRejectedFull;
      ss.policy = r.str();
      ss.pinned = r.u8() != 0;
      out.servers.push_back(ss);
    }
    std::lock_guard lock(mu_);
    out.client = stats_;
    return out;
  }

  std::vector<std::string> serverAddresses() const {
    std::vector<std::string> out;
    for (const auto& s : servers_) out.push_back(s.address);
    return out;
  }

  // --- requests -------------------------------------------------------------------------------

  void finishRequest(Request::State& st) {
    if (st.ended) {
      if (st.failure) std::rethrow_exception(st.failure);
      return;
    }
    try {
      for (auto& b : st.batches) {
        std::shared_ptr<Batch> batch = b.lock();
        if (!batch) continue;
        if (!batch->call) flushBatches();
        if (batch->call) st.calls.push_back(batch->call);
      }
      st.batches.clear();
      for (auto& c : st.calls) {
        const bool answered = waitCall(c, st.deadline + graceDuration(), st.what);
        if (c->op != Op::Query) check(*c, answered);  // a get's answers are read by its finish
      }
      if (st.finish) st.finish();
    } catch (...) {
      st.failure = std::current_exception();
    }
    st.ended = true;
    st.ownedCopy.clear();
    st.finish = nullptr;
    {
      std::lock_guard lock(mu_);
      open_.erase(&st);
    }
    if (st.failure) std::rethrow_exception(st.failure);
  }

  bool testRequest(Request::State& st) {
    if (st.ended) return true;
    node_->progress();
    for (auto& b : st.batches) {
      if (auto batch = b.lock(); batch && !batch->call) return false;
    }
    std::lock_guard lock(mu_);
    for (auto& c : st.calls) {
      if (!c->done()) return false;
    }
    return true;
  }

  std::mutex mu_;  // calls_, vars_, stats_, open_
  ClientStats stats_;
  std::unordered_map<Request::State*, std::shared_ptr<Request::State>> open_;  // not yet waited for

 private:
  struct ServerConn {
    rpc::ConnId conn = 0;
    std::string address;
    int index = 0;
    std::unique_ptr<ArenaView> arena;  // when it shares this node and shared memory is allowed
    std::string lost;                  // why it is lost, once it is
  };

  Clock::duration graceDuration() const {
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kReplyGraceSec));
  }

  // Connects to one server and says hello; appends it to servers_ and returns its epoch.
  std::uint64_t connectServer(const std::string& address, Clock::time_point deadline, const std::string& origin) {
    ServerConn sc;
    sc.address = address;
    const int s = static_cast<int>(servers_.size());  // its place while connecting
    // Hello may be refused while the space still waits for servers to join: try again.
    for (;;) {
      sc.conn = node_->connect(address);
      {
        std::lock_guard lock(mu_);
        servers_.push_back(std::move(sc));
      }
      wire::ByteWriter w = protocol::begin(Op::Hello, 0);
      w.str(buildVersion()).str(identity_).u32(static_cast<std::uint32_t>(::getpid()));
      auto c = issue(s, Op::Hello, w);
      const bool answered = waitCall(c, deadline, "connecting to staging server " + address + " (from " + origin + ")");
      // The server said its space is still forming (servers yet to join): ask again.
      if (answered && c->answered && c->status == static_cast<int>(ErrorCode::ServerLost) &&
          Clock::now() < deadline) {
        {
          std::lock_guard lock(mu_);
          sc = std::move(servers_.back());
          servers_.pop_back();
        }
        node_->close(sc.conn);
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      check(*c, answered);
      wire::ByteReader r(c->reply);
      ServerConn& me = servers_.back();
      me.index = static_cast<int>(r.u32());
      const std::uint32_t count = r.u32();
      const std::uint64_t epoch = r.u64();
      const std::string node = r.str();
      const std::string arena = r.str();
      const std::uint64_t capacity = r.u64();
      const std::uint32_t n = r.count(4);
      std::vector<std::string> members;
      for (std::uint32_t i = 0; i < n; ++i) members.push_back(r.str());
      if (members.size() != count) {
        throw Error(ErrorCode::ServerLost, "staging server " + address + " lists " + std::to_string(members.size()) +
                                               " of its space's " + std::to_string(count) + " servers");
      }
      if (members_.empty()) members_ = members;
      if (node == identity_ && options_.sharedMemory) {
        try {
          me.arena = std::make_unique<ArenaView>(arena, capacity);
          if (gpu_) gpu_->addHostRange(me.arena->base(), capacity);
        } catch (const Error&) {
          me.arena.reset();  // same host name, other namespace: UCX carries it
        }
      }
      return epoch;
    }
  }

  // Ends a lease (no reply): the client copied the fragments, or gave up on them.
  void sendDone(int s, std::uint64_t lease) {
    wire::ByteWriter w = protocol::begin(Op::Done, 0);
    w.u64(lease);
    rpc::ConnId conn;
    {
      std::lock_guard lock(mu_);
      conn = servers_[s].conn;
    }
    if (conn) node_->send(conn, w.bytes(), nullptr, 0, rpc::Memory::Host, [](const std::string&) {});
  }

  std::shared_ptr<Call> issue(int s, Op op, const wire::ByteWriter& w, const void* data = nullptr,
                              std::size_t bytes = 0, rpc::Memory m = rpc::Memory::Host,
                              std::shared_ptr<void> keepAlive = nullptr) {
    return issueRaw(s, op, w.bytes(), data, bytes, m, std::move(keepAlive));
  }

  std::shared_ptr<Call> issueRaw(int s, Op op, std::string header, const void* data, std::size_t bytes, rpc::Memory m,
                                 std::shared_ptr<void> keepAlive = nullptr) {
    auto c = std::make_shared<Call>();
    c->memory = m;
    return issueCall(s, op, std::move(header), c, data, bytes, m, std::move(keepAlive));
  }

  // Numbers the call (patching the id into the header), registers it, and sends it.
  std::shared_ptr<Call> issueCall(int s, Op op, std::string header, std::shared_ptr<Call> c, const void* data = nullptr,
                                  std::size_t bytes = 0, rpc::Memory m = rpc::Memory::Host,
                                  std::shared_ptr<void> keepAlive = nullptr) {
    c->server = s;
    c->op = op;
    std::uint64_t id;
    {
      std::lock_guard lock(mu_);
      id = ++lastId_;
      calls_[id] = c;
      if (!servers_[s].lost.empty()) {
        fail(*c, ErrorCode::ServerLost, servers_[s].lost);
        calls_.erase(id);
        return c;
      }
    }
    std::memcpy(header.data() + 8, &id, 8);  // after magic, version and op
    node_->send(servers_[s].conn, std::move(header), data, bytes, m, [this, id, s, keepAlive](const std::string& f) {
      if (f.empty()) return;
      std::lock_guard lock(mu_);
      auto it = calls_.find(id);
      if (it == calls_.end()) return;
      fail(*it->second, ErrorCode::ServerLost, "staging server " + servers_[s].address + ": sending failed: " + f);
      calls_.erase(it);
    });
    return c;
  }

  static void fail(Call& c, ErrorCode code, const std::string& why) {
    c.replied = true;
    c.status = static_cast<int>(code);
    c.message = why;
    c.landed = c.landing.size();
  }

  // Waits for the call until `deadline`; false if it did not end by then (the server is then
  // considered lost for it). Progress happens here and in the engine's thread.
  bool waitCall(const std::shared_ptr<Call>& c, Clock::time_point deadline, const std::string& what) {
    ProgressEngine::Waiting waiting(engine_);
    ProgressClient::PolledHere here(*node_);
    int spins = 0;
    for (std::uint64_t round = 1;; ++round) {
      {
        std::lock_guard lock(mu_);
        if (c->done()) return true;
      }
      // The clock is read every 256 rounds even while other traffic keeps UCX busy.
      if (round % 256 == 0 && Clock::now() >= deadline) break;
      if (node_->progress()) continue;
      if (++spins < 2000) continue;
      if (Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::microseconds(spins < 20000 ? 20 : 200));
    }
    rpc::ConnId conn = 0;
    {
      std::lock_guard lock(mu_);
      if (c->done()) return true;
      ServerConn& server = servers_[c->server];
      const std::string why = "staging server " + server.address + " did not answer " + what + " in time (" +
                              protocol::opName(c->op) + " request): the server is stopped, overloaded or unreachable";
      fail(*c, ErrorCode::ServerLost, why);
      for (auto it = calls_.begin(); it != calls_.end(); ++it) {
        if (it->second == c) {
          calls_.erase(it);
          break;
        }
      }
      // Considered lost from now on: its connection is closed, which cancels UCX's transfers into
      // and out of this client's buffers before the caller unwinds.
      if (server.lost.empty()) server.lost = why;
      conn = server.conn;
      server.conn = 0;
    }
    if (conn) node_->close(conn);
    return false;
  }

  // Throws the call's failure as the matching axon error.
  void check(const Call& c, bool) {
    if (c.status == 0 && c.dataFailure.empty()) return;
    if (!c.dataFailure.empty() && c.status == 0) {
      throw Error(ErrorCode::ServerLost, "staging server " + servers_[c.server].address + ": data failed: " + c.dataFailure);
    }
    throw Error(static_cast<ErrorCode>(c.status), c.message);
  }

  void onMessage(rpc::ConnId conn, std::string header, rpc::Payload payload) {
    try {
      wire::ByteReader r(header);
      const protocol::Head h = protocol::readHead(r);
      std::shared_ptr<Call> c;
      {
        std::lock_guard lock(mu_);
        auto it = calls_.find(h.id);
        if (it != calls_.end()) c = it->second;
      }
      if (!c) {
        node_->drop(payload);
        return;
      }
      if (h.op == Op::Data) {
        const std::uint32_t i = r.u32();
        if (i >= c->landing.size()) {
          node_->drop(payload);
          return;
        }
        if (!payload.rendezvous() && c->memory == rpc::Memory::Cuda) {
          // Eager bytes for GPU memory: copied here (UCX delivered them to host memory).
          gpu_->copy(c->landing[i], payload.eager.data(), payload.bytes);
          std::lock_guard lock(mu_);
          ++c->landed;
          if (c->done()) calls_.erase(h.id);
          return;
        }
        const std::uint64_t id = h.id;
        // The lambda holds the call, and the call its staging: alive until UCX has landed it.
        node_->receive(payload, c->landing[i], c->memory, [this, c, id](const std::string& f) {
          std::lock_guard lock(mu_);
          if (c->replied && c->status != 0) return;  // failed meanwhile: nobody reads it
          if (!f.empty() && c->dataFailure.empty()) c->dataFailure = f;
          ++c->landed;
          if (c->done()) calls_.erase(id);
        });
        return;
      }
      if (r.left() == 0 && payload.bytes > 0) {
        // A reply too long for a message header travels as the message's data.
        auto body = std::make_shared<std::string>(payload.bytes, '\0');
        const std::uint64_t id = h.id;
        node_->receive(payload, body->data(), rpc::Memory::Host, [this, c, id, body](const std::string& f) {
          if (!f.empty()) {
            std::lock_guard lock(mu_);
            fail(*c, ErrorCode::ServerLost, "staging server " + servers_[c->server].address + ": a reply was lost: " + f);
            calls_.erase(id);
            return;
          }
          wire::ByteReader br(*body);
          takeReply(c, id, br);
        });
        return;
      }
      node_->drop(payload);
      takeReply(c, h.id, r);
    } catch (const wire::Malformed& e) {
      node_->drop(payload);
      // Another build's answer: its id sits at the same place in every version's head.
      if (header.size() >= protocol::kHeadBytes) {
        std::uint64_t id;
        std::memcpy(&id, header.data() + 8, 8);
        std::lock_guard lock(mu_);
        auto it = calls_.find(id);
        if (it != calls_.end()) {
          fail(*it->second, ErrorCode::InvalidArgument,
               "staging server " + servers_[it->second->server].address + " answered in words this client cannot "
               "read (" + e.what() + ")");
          calls_.erase(it);
        }
      }
    } catch (const std::exception&) {
      node_->drop(payload);
    }
    (void)conn;
  }

  void takeReply(const std::shared_ptr<Call>& c, std::uint64_t id, wire::ByteReader& r) {
    std::unique_lock lock(mu_);
    if (c->replied) {
      // Failed here already (timed out): a lease the late answer carries is ended at once.
      const int status = r.i32();
      r.str();
      if (status == 0 && c->op == Op::Query && r.left() >= 8) {
        const std::uint64_t lease = r.u64();
        const int s = c->server;
        lock.unlock();
        if (lease) sendDone(s, lease);
      }
      return;
    }
    c->status = r.i32();
    c->message = r.str();
    c->reply = std::string(r.rest());
    c->replied = true;
    c->answered = true;
    if (c->status != 0) c->landed = c->landing.size();
    if (c->done()) calls_.erase(id);
  }

  void onLost(rpc::ConnId conn, const std::string& why) {
    std::lock_guard lock(mu_);
    for (std::size_t s = 0; s < servers_.size(); ++s) {
      if (servers_[s].conn != conn) continue;
      servers_[s].lost = "staging server " + servers_[s].address + " was lost: " + why;
      for (auto it = calls_.begin(); it != calls_.end();) {
        if (it->second->server == static_cast<int>(s)) {
          fail(*it->second, ErrorCode::ServerLost, servers_[s].lost);
          it = calls_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  void bump(std::uint64_t ClientStats::*field) {
    std::lock_guard lock(mu_);
    ++(stats_.*field);
  }
  void setPath(const char* p) {
    std::lock_guard lock(mu_);
    stats_.lastPath = p;
  }

  ConnectOptions options_;
  double timeoutSec_ = 300;
  std::uint64_t batchBytes_ = 0;
  std::string identity_;
  std::unique_ptr<GpuSide> gpu_;
  std::unique_ptr<rpc::Node> node_;
  ProgressEngine engine_;
  std::vector<ServerConn> servers_;
  std::vector<std::string> members_;
  std::map<std::string, Variable> vars_;
  std::map<std::uint64_t, std::shared_ptr<Call>> calls_;
  std::uint64_t lastId_ = 0;
  std::mutex batchMutex_;
  std::map<int, std::shared_ptr<Batch>> batches_;

  friend class Client;
};

// --- Request -----------------------------------------------------------------------------------

Request::Request() = default;
Request::~Request() = default;
Request::Request(Request&&) noexcept = default;
Request& Request::operator=(Request&&) noexcept = default;
Request::Request(std::shared_ptr<State> s) : state_(std::move(s)) {}

bool Request::test() {
  if (!state_) throw Error(ErrorCode::InvalidArgument, "test of an empty space request");
  if (!state_->client->testRequest(*state_)) return false;
  state_->client->finishRequest(*state_);
  return true;
}

void Request::wait() {
  if (!state_) throw Error(ErrorCode::InvalidArgument, "wait on an empty space request");
  state_->client->finishRequest(*state_);
}

// --- Client ------------------------------------------------------------------------------------

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
  impl_->define(v);
}

void Client::put(const std::string& name, std::int64_t version, const Index& offset, const Index& count,
                 const void* data, double timeoutSec) {
  impl_->iput(name, version, offset, count, data, timeoutSec, true);
}

Request Client::iput(const std::string& name, std::int64_t version, const Index& offset, const Index& count,
                     const void* data, double timeoutSec) {
  return Request(impl_->iput(name, version, offset, count, data, timeoutSec, false));
}

void Client::get(const std::string& name, std::int64_t version, const Index& lo, const Index& hi, void* out,
                 std::size_t outBytes, double timeoutSec) {
  impl_->iget(name, version, lo, hi, out, outBytes, timeoutSec, true);
}

Request Client::iget(const std::string& name, std::int64_t version, const Index& lo, const Index& hi, void* out,
                     std::size_t outBytes, double timeoutSec) {
  return Request(impl_->iget(name, version, lo, hi, out, outBytes, timeoutSec, false));
}

std::int64_t Client::waitVersion(const std::string& name, std::int64_t atLeast, double timeoutSec) {
  return impl_->waitVersion(name, atLeast, timeoutSec);
}

void Client::release(const std::string& name, std::int64_t version) { impl_->release(name, version); }
Stats Client::stats() { return impl_->stats(); }
void Client::close() { impl_->close(); }
std::vector<std::string> Client::servers() const { return impl_->serverAddresses(); }
DataType Client::dtypeOf(const std::string& name) const { return impl_->variable(name).dtype; }
Index Client::shapeOf(const std::string& name) const {
  const Variable v = impl_->variable(name);
  return Index(v.shape.hi.begin(), v.shape.hi.begin() + v.shape.ndim);
}

}  // namespace axon::space
