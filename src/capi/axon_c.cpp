// The C API: each call catches what the C++ API throws and turns it into a status.
#include "axon/axon.h"

#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>

#include "axon/axon.hpp"
#include "axon/space.hpp"

// C programs size their buffer for the device handle from axon.h alone; the two must not drift.
static_assert(sizeof(axon::device::CollHandle) == AXON_DEVICE_COLL_HANDLE_BYTES,
              "AXON_DEVICE_COLL_HANDLE_BYTES in axon.h must equal sizeof(axon::device::CollHandle)");
static_assert(std::is_trivially_copyable_v<axon::device::CollHandle>,
              "axon_device_coll_handle copies the handle as bytes");

namespace {

thread_local std::string g_lastError;

// Teams handed to C callers, by handle. World and node are fixed handles.
std::mutex g_teamsMutex;
std::map<axon_team_t, axon::Team> g_teams;
axon_team_t g_nextTeam = 2;

template <class F>
axon_status_t guarded(F&& f) {
  try {
    f();
    return AXON_SUCCESS;
  } catch (const axon::Error& e) {
    g_lastError = e.what();
    return static_cast<axon_status_t>(e.code());
  } catch (const std::exception& e) {
    g_lastError = std::string("internal error: ") + e.what();
    return AXON_ERR_INTERNAL;
  } catch (...) {
    g_lastError = "internal error: unknown exception";
    return AXON_ERR_INTERNAL;
  }
}

axon::Team teamOf(axon_team_t handle) {
  if (handle == AXON_TEAM_WORLD) return axon::Team::world();
  if (handle == AXON_TEAM_NODE) return axon::Team::node();
  std::lock_guard lock(g_teamsMutex);
  auto it = g_teams.find(handle);
  if (it == g_teams.end()) {
    throw axon::Error(axon::ErrorCode::InvalidArgument,
                      "axon: team handle " + std::to_string(handle) + " is not a live team");
  }
  return it->second;
}

template <class T>
void requireOut(T* p, const char* what) {
  if (!p) throw axon::Error(axon::ErrorCode::InvalidArgument, std::string("axon: ") + what + " is NULL");
}

}  // namespace

extern "C" {

const char* axon_last_error(void) { return g_lastError.c_str(); }

const char* axon_status_name(axon_status_t status) {
  if (status == AXON_SUCCESS) return "Success";
  if (status == AXON_IN_PROGRESS) return "InProgress";
  return axon::errorCodeName(static_cast<axon::ErrorCode>(status));
}

axon_status_t axon_init(void) { return guarded([] { axon::init(); }); }
axon_status_t axon_finalize(void) {
  return guarded([] {
    {
      std::lock_guard lock(g_teamsMutex);
      g_teams.clear();
    }
    axon::finalize();
  });
}
axon_status_t axon_my_pe(int* pe) { return guarded([&] { requireOut(pe, "pe"); *pe = axon::myPe(); }); }
axon_status_t axon_n_pes(int* n) { return guarded([&] { requireOut(n, "n"); *n = axon::nPes(); }); }
axon_status_t axon_path_to(int pe, char* buf, size_t len) {
  return guarded([&] {
    requireOut(buf, "buf");
    const std::string path = axon::pathTo(pe);
    if (path.size() >= len) {
      throw axon::Error(axon::ErrorCode::InvalidArgument, "axon_path_to: the path to PE " + std::to_string(pe) +
                                                              " needs " + std::to_string(path.size() + 1) +
                                                              " bytes; buf has " + std::to_string(len));
    }
    std::memcpy(buf, path.c_str(), path.size() + 1);
  });
}

axon_status_t axon_malloc(size_t bytes, void** out) {
  return guarded([&] { requireOut(out, "out"); *out = axon::malloc(bytes); });
}
axon_status_t axon_calloc(size_t count, size_t elem, void** out) {
  return guarded([&] { requireOut(out, "out"); *out = axon::calloc(count, elem); });
}
axon_status_t axon_free(void* ptr) { return guarded([&] { axon::free(ptr); }); }
axon_status_t axon_ptr(const void* addr, int pe, void** out) {
  return guarded([&] { requireOut(out, "out"); *out = axon::ptr(addr, pe); });
}

axon_status_t axon_put(void* d, const void* s, size_t n, int pe) { return guarded([&] { axon::put(d, s, n, pe); }); }
axon_status_t axon_get(void* d, const void* s, size_t n, int pe) { return guarded([&] { axon::get(d, s, n, pe); }); }
axon_status_t axon_put_nbi(void* d, const void* s, size_t n, int pe) { return guarded([&] { axon::putNbi(d, s, n, pe); }); }
axon_status_t axon_get_nbi(void* d, const void* s, size_t n, int pe) { return guarded([&] { axon::getNbi(d, s, n, pe); }); }

axon_status_t axon_put_signal(void* d, const void* s, size_t n, uint64_t* sig, uint64_t v,
                              axon_signal_op_t op, int pe) {
  return guarded([&] { axon::putSignal(d, s, n, sig, v, static_cast<axon::SignalOp>(op), pe); });
}
axon_status_t axon_put_signal_nbi(void* d, const void* s, size_t n, uint64_t* sig, uint64_t v,
                                  axon_signal_op_t op, int pe) {
  return guarded([&] { axon::putSignalNbi(d, s, n, sig, v, static_cast<axon::SignalOp>(op), pe); });
}
axon_status_t axon_signal_op(uint64_t* sig, uint64_t v, axon_signal_op_t op, int pe) {
  return guarded([&] { axon::signalOp(sig, v, static_cast<axon::SignalOp>(op), pe); });
}
axon_status_t axon_signal_fetch(const uint64_t* sig, uint64_t* out) {
  return guarded([&] { requireOut(out, "out"); *out = axon::signalFetch(sig); });
}
axon_status_t axon_signal_wait_until(uint64_t* sig, axon_cmp_t cmp, uint64_t v, uint64_t* seen) {
  return guarded([&] {
    uint64_t got = axon::signalWaitUntil(sig, static_cast<axon::Cmp>(cmp), v);
    if (seen) *seen = got;
  });
}

#define AXON_DEFINE_ATOMICS(T, CT)                                                                   \
  axon_status_t axon_atomic_fetch_##T(const CT* src, int pe, CT* out) {                            \
    return guarded([&] { CT r = axon::atomicFetch(src, pe); if (out) *out = r; });                 \
  }                                                                                                \
  axon_status_t axon_atomic_set_##T(CT* d, CT v, int pe) {                                         \
    return guarded([&] { axon::atomicSet(d, v, pe); });                                            \
  }                                                                                                \
  axon_status_t axon_atomic_swap_##T(CT* d, CT v, int pe, CT* out) {                               \
    return guarded([&] { CT r = axon::atomicSwap(d, v, pe); if (out) *out = r; });                 \
  }                                                                                                \
  axon_status_t axon_atomic_compare_swap_##T(CT* d, CT c, CT v, int pe, CT* out) {                 \
    return guarded([&] { CT r = axon::atomicCompareSwap(d, c, v, pe); if (out) *out = r; });       \
  }                                                                                                \
  axon_status_t axon_atomic_fetch_add_##T(CT* d, CT v, int pe, CT* out) {                          \
    return guarded([&] { CT r = axon::atomicFetchAdd(d, v, pe); if (out) *out = r; });             \
  }                                                                                                \
  axon_status_t axon_atomic_add_##T(CT* d, CT v, int pe) {                                         \
    return guarded([&] { axon::atomicAdd(d, v, pe); });                                            \
  }                                                                                                \
  axon_status_t axon_atomic_fetch_and_##T(CT* d, CT v, int pe, CT* out) {                          \
    return guarded([&] { CT r = axon::atomicFetchAnd(d, v, pe); if (out) *out = r; });             \
  }                                                                                                \
  axon_status_t axon_atomic_fetch_or_##T(CT* d, CT v, int pe, CT* out) {                           \
    return guarded([&] { CT r = axon::atomicFetchOr(d, v, pe); if (out) *out = r; });              \
  }                                                                                                \
  axon_status_t axon_atomic_fetch_xor_##T(CT* d, CT v, int pe, CT* out) {                          \
    return guarded([&] { CT r = axon::atomicFetchXor(d, v, pe); if (out) *out = r; });             \
  }
AXON_DEFINE_ATOMICS(int32, int32_t)
AXON_DEFINE_ATOMICS(int64, int64_t)
AXON_DEFINE_ATOMICS(uint32, uint32_t)
AXON_DEFINE_ATOMICS(uint64, uint64_t)
#undef AXON_DEFINE_ATOMICS

axon_status_t axon_fence(void) { return guarded([] { axon::fence(); }); }
axon_status_t axon_quiet(void) { return guarded([] { axon::quiet(); }); }
axon_status_t axon_barrier_all(void) { return guarded([] { axon::barrierAll(); }); }
axon_status_t axon_sync_all(void) { return guarded([] { axon::syncAll(); }); }

axon_status_t axon_team_my_pe(axon_team_t t, int* pe) {
  return guarded([&] { requireOut(pe, "pe"); *pe = teamOf(t).myPe(); });
}
axon_status_t axon_team_n_pes(axon_team_t t, int* n) {
  return guarded([&] { requireOut(n, "n"); *n = teamOf(t).nPes(); });
}
axon_status_t axon_team_translate_pe(axon_team_t from, int pe, axon_team_t to, int* out) {
  return guarded([&] { requireOut(out, "out"); *out = teamOf(from).translate(pe, teamOf(to)); });
}
namespace {
// Hands a split's result to C: a new handle, or AXON_TEAM_INVALID on PEs outside the new team.
void publishTeam(const axon::Team& team, axon_team_t* out) {
  *out = AXON_TEAM_INVALID;
  if (!team.valid()) return;
  std::lock_guard lock(g_teamsMutex);
  *out = g_nextTeam++;
  g_teams[*out] = team;
}
}  // namespace

axon_status_t axon_team_split_strided(axon_team_t parent, int start, int stride, int size, axon_team_t* out) {
  return guarded([&] {
    requireOut(out, "out");
    publishTeam(teamOf(parent).splitStrided(start, stride, size), out);
  });
}
axon_status_t axon_team_split(axon_team_t parent, int colour, int key, axon_team_t* out) {
  return guarded([&] {
    requireOut(out, "out");
    publishTeam(teamOf(parent).split(colour, key), out);
  });
}
axon_status_t axon_team_set_timeout(axon_team_t t, double seconds) {
  return guarded([&] { teamOf(t).setTimeout(seconds); });
}
axon_status_t axon_team_timeout(axon_team_t t, double* seconds) {
  return guarded([&] {
    requireOut(seconds, "seconds");
    *seconds = teamOf(t).timeout();
  });
}
namespace {
axon::DataType typeOf(axon_datatype_t t) { return static_cast<axon::DataType>(t); }
axon::ReduceOp opOf(axon_reduce_op_t op) { return static_cast<axon::ReduceOp>(op); }
}  // namespace

axon_status_t axon_barrier(axon_team_t t) { return guarded([&] { axon::barrier(teamOf(t)); }); }
axon_status_t axon_broadcast(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type, int root) {
  return guarded([&] { axon::broadcast(teamOf(t), src, dst, count, typeOf(type), root); });
}
axon_status_t axon_reduce(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type,
                          axon_reduce_op_t op, int root) {
  return guarded([&] { axon::reduce(teamOf(t), src, dst, count, typeOf(type), opOf(op), root); });
}
axon_status_t axon_allreduce(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type,
                             axon_reduce_op_t op) {
  return guarded([&] { axon::allreduce(teamOf(t), src, dst, count, typeOf(type), opOf(op)); });
}
axon_status_t axon_allgather(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type) {
  return guarded([&] { axon::allgather(teamOf(t), src, dst, count, typeOf(type)); });
}
axon_status_t axon_reduce_scatter(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type,
                                  axon_reduce_op_t op) {
  return guarded([&] { axon::reduceScatter(teamOf(t), src, dst, count, typeOf(type), opOf(op)); });
}
axon_status_t axon_alltoall(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type) {
  return guarded([&] { axon::alltoall(teamOf(t), src, dst, count, typeOf(type)); });
}

axon_status_t axon_team_barrier(axon_team_t t) { return guarded([&] { teamOf(t).barrier(); }); }
axon_status_t axon_team_sync(axon_team_t t) { return guarded([&] { teamOf(t).sync(); }); }
axon_status_t axon_team_destroy(axon_team_t t) {
  return guarded([&] {
    axon::Team team = teamOf(t);
    team.destroy();
    std::lock_guard lock(g_teamsMutex);
    g_teams.erase(t);
  });
}

axon_status_t axon_gpu_enabled(int* enabled) {
  return guarded([&] { requireOut(enabled, "enabled"); *enabled = axon::gpuEnabled() ? 1 : 0; });
}
axon_status_t axon_gpu_device(int* ordinal) {
  return guarded([&] { requireOut(ordinal, "ordinal"); *ordinal = axon::gpuDevice(); });
}
axon_status_t axon_malloc_host(size_t bytes, void** out) {
  return guarded([&] { requireOut(out, "out"); *out = axon::mallocHost(bytes); });
}
axon_status_t axon_put_on_stream(void* dest, const void* src, size_t bytes, int pe, void* stream) {
  return guarded([&] { axon::putOnStream(dest, src, bytes, pe, static_cast<axon::Stream>(stream)); });
}
axon_status_t axon_get_on_stream(void* dest, const void* src, size_t bytes, int pe, void* stream) {
  return guarded([&] { axon::getOnStream(dest, src, bytes, pe, static_cast<axon::Stream>(stream)); });
}
axon_status_t axon_put_signal_on_stream(void* dest, const void* src, size_t bytes, uint64_t* sig, uint64_t value,
                                        axon_signal_op_t op, int pe, void* stream) {
  return guarded([&] {
    axon::putSignalOnStream(dest, src, bytes, sig, value, static_cast<axon::SignalOp>(op), pe,
                            static_cast<axon::Stream>(stream));
  });
}
axon_status_t axon_signal_op_on_stream(uint64_t* sig, uint64_t value, axon_signal_op_t op, int pe, void* stream) {
  return guarded([&] {
    axon::signalOpOnStream(sig, value, static_cast<axon::SignalOp>(op), pe, static_cast<axon::Stream>(stream));
  });
}
axon_status_t axon_signal_wait_until_on_stream(uint64_t* sig, axon_cmp_t cmp, uint64_t value, void* stream) {
  return guarded([&] {
    axon::signalWaitUntilOnStream(sig, static_cast<axon::Cmp>(cmp), value, static_cast<axon::Stream>(stream));
  });
}
axon_status_t axon_quiet_on_stream(void* stream) {
  return guarded([&] { axon::quietOnStream(static_cast<axon::Stream>(stream)); });
}
axon_status_t axon_stream_synchronize(void* stream) {
  return guarded([&] { axon::streamSynchronize(static_cast<axon::Stream>(stream)); });
}
axon_status_t axon_barrier_on_stream(axon_team_t t, void* stream) {
  return guarded([&] { axon::barrierOnStream(teamOf(t), static_cast<axon::Stream>(stream)); });
}
axon_status_t axon_barrier_all_on_stream(void* stream) {
  return guarded([&] { axon::barrierAllOnStream(static_cast<axon::Stream>(stream)); });
}

axon_status_t axon_broadcast_on_stream(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type,
                                       int root, void* stream) {
  return guarded([&] {
    axon::broadcastOnStream(teamOf(t), src, dst, count, typeOf(type), root, static_cast<axon::Stream>(stream));
  });
}
axon_status_t axon_reduce_on_stream(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type,
                                    axon_reduce_op_t op, int root, void* stream) {
  return guarded([&] {
    axon::reduceOnStream(teamOf(t), src, dst, count, typeOf(type), opOf(op), root, static_cast<axon::Stream>(stream));
  });
}
axon_status_t axon_allreduce_on_stream(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type,
                                       axon_reduce_op_t op, void* stream) {
  return guarded([&] {
    axon::allreduceOnStream(teamOf(t), src, dst, count, typeOf(type), opOf(op), static_cast<axon::Stream>(stream));
  });
}
axon_status_t axon_allgather_on_stream(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type,
                                       void* stream) {
  return guarded([&] {
    axon::allgatherOnStream(teamOf(t), src, dst, count, typeOf(type), static_cast<axon::Stream>(stream));
  });
}
axon_status_t axon_reduce_scatter_on_stream(axon_team_t t, const void* src, void* dst, size_t count,
                                            axon_datatype_t type, axon_reduce_op_t op, void* stream) {
  return guarded([&] {
    axon::reduceScatterOnStream(teamOf(t), src, dst, count, typeOf(type), opOf(op),
                                static_cast<axon::Stream>(stream));
  });
}
axon_status_t axon_alltoall_on_stream(axon_team_t t, const void* src, void* dst, size_t count, axon_datatype_t type,
                                      void* stream) {
  return guarded([&] {
    axon::alltoallOnStream(teamOf(t), src, dst, count, typeOf(type), static_cast<axon::Stream>(stream));
  });
}

size_t axon_device_coll_handle_size(void) { return sizeof(axon::device::CollHandle); }
axon_status_t axon_device_coll_handle(axon_team_t t, void* out, size_t out_bytes) {
  return guarded([&] {
    requireOut(out, "out");
    if (out_bytes < sizeof(axon::device::CollHandle)) {
      throw axon::Error(axon::ErrorCode::InvalidArgument,
                        "axon: device_coll_handle: out_bytes " + std::to_string(out_bytes) + " is smaller than the " +
                            std::to_string(sizeof(axon::device::CollHandle)) +
                            " bytes of the handle (AXON_DEVICE_COLL_HANDLE_BYTES)");
    }
    const axon::device::CollHandle h = axon::deviceCollHandle(teamOf(t));
    std::memcpy(out, &h, sizeof h);
  });
}

}  // extern "C"

// Two-sided messages. A request handle owns a heap copy of the C++ request until the call that
// completes it.
struct axon_request_s {
  axon::Request request;
};

namespace {

void fillStatus(axon_msg_status_t* out, const axon::Status& s) {
  if (!out) return;
  out->source = s.source;
  out->tag = s.tag;
  out->bytes = s.bytes;
}

axon_request_s* requireRequest(axon_request_t* req, const char* api) {
  if (!req || !*req) {
    throw axon::Error(axon::ErrorCode::InvalidArgument, std::string("axon: ") + api + ": the request is NULL (already completed?)");
  }
  return *req;
}

}  // namespace

extern "C" {

axon_status_t axon_send(const void* buf, size_t bytes, int dest, int tag, axon_team_t team) {
  return guarded([&] { axon::send(buf, bytes, dest, tag, teamOf(team)); });
}
axon_status_t axon_recv(void* buf, size_t capacity, int source, int tag, axon_team_t team, axon_msg_status_t* status) {
  return guarded([&] { fillStatus(status, axon::recv(buf, capacity, source, tag, teamOf(team))); });
}
axon_status_t axon_isend(const void* buf, size_t bytes, int dest, int tag, axon_team_t team, axon_request_t* req) {
  return guarded([&] {
    requireOut(req, "req");
    *req = new axon_request_s{axon::isend(buf, bytes, dest, tag, teamOf(team))};
  });
}
axon_status_t axon_irecv(void* buf, size_t capacity, int source, int tag, axon_team_t team, axon_request_t* req) {
  return guarded([&] {
    requireOut(req, "req");
    *req = new axon_request_s{axon::irecv(buf, capacity, source, tag, teamOf(team))};
  });
}
axon_status_t axon_wait(axon_request_t* req, axon_msg_status_t* status) {
  return guarded([&] {
    std::unique_ptr<axon_request_s> r(requireRequest(req, "axon_wait"));
    *req = nullptr;
    fillStatus(status, r->request.wait());
  });
}
axon_status_t axon_test(axon_request_t* req, axon_msg_status_t* status) {
  bool done = false;
  axon_status_t rc = guarded([&] {
    axon_request_s* r = requireRequest(req, "axon_test");
    axon::Status s;
    try {
      done = r->request.test(&s);
    } catch (...) {
      delete r;  // it ended, with an error
      *req = nullptr;
      throw;
    }
    if (!done) return;
    fillStatus(status, s);
    delete r;
    *req = nullptr;
  });
  return rc == AXON_SUCCESS && !done ? AXON_IN_PROGRESS : rc;
}
axon_status_t axon_probe(int source, int tag, axon_team_t team, axon_msg_status_t* status) {
  return guarded([&] { fillStatus(status, axon::probe(source, tag, teamOf(team))); });
}
axon_status_t axon_iprobe(int source, int tag, axon_team_t team, int* found, axon_msg_status_t* status) {
  return guarded([&] {
    requireOut(found, "found");
    auto s = axon::iprobe(source, tag, teamOf(team));
    *found = s ? 1 : 0;
    if (s) fillStatus(status, *s);
  });
}
axon_status_t axon_send_on_stream(const void* buf, size_t bytes, int dest, axon_team_t team, void* stream) {
  return guarded([&] { axon::sendOnStream(buf, bytes, dest, static_cast<axon::Stream>(stream), teamOf(team)); });
}
axon_status_t axon_recv_on_stream(void* buf, size_t capacity, int source, axon_team_t team, void* stream) {
  return guarded([&] { axon::recvOnStream(buf, capacity, source, static_cast<axon::Stream>(stream), teamOf(team)); });
}
axon_status_t axon_group_start(void) {
  return guarded([] { axon::groupStart(); });
}
axon_status_t axon_group_end(void) {
  return guarded([] { axon::groupEnd(); });
}

}  // extern "C"

// --- the staging space ---------------------------------------------------------------------------

struct axon_space_s {
  axon::space::Client client;
};
struct axon_space_request_s {
  axon::space::Request request;
};

namespace {

axon::space::Index indexOf(int ndim, const int64_t* v, const char* what) {
  if (ndim < 1 || ndim > 8) {
    throw axon::Error(axon::ErrorCode::InvalidArgument,
                      std::string("axon_space: ndim ") + std::to_string(ndim) + " (1 to 8 dimensions are allowed)");
  }
  requireOut(v, what);
  return axon::space::Index(v, v + ndim);
}

axon::space::Client& clientOf(axon_space_t s) {
  requireOut(s, "space");
  return s->client;
}

const char* nameOf(const char* name) {
  requireOut(name, "name");
  return name;
}

}  // namespace

extern "C" {

axon_status_t axon_space_connect(const char* addr, double timeout, axon_space_t* out) {
  return axon_space_connect_key(addr, nullptr, timeout, out);
}
axon_status_t axon_space_connect_key(const char* addr, const char* key, double timeout, axon_space_t* out) {
  return guarded([&] {
    requireOut(out, "out");
    axon::space::ConnectOptions o;
    o.address = addr ? addr : "";
    o.key = key ? key : "";
    o.timeoutSec = timeout;
    *out = new axon_space_s{axon::space::Client(o)};
  });
}
axon_status_t axon_space_close(axon_space_t space) {
  return guarded([&] {
    std::unique_ptr<axon_space_s> owned(space);
    clientOf(space).close();
  });
}
axon_status_t axon_space_define(axon_space_t space, const char* name, int ndim, const int64_t* shape,
                                axon_datatype_t type, int keep_versions) {
  return guarded([&] {
    clientOf(space).define(nameOf(name), indexOf(ndim, shape, "shape"), static_cast<axon::DataType>(type), keep_versions);
  });
}
axon_status_t axon_space_put(axon_space_t space, const char* name, int64_t version, int ndim, const int64_t* offset,
                             const int64_t* count, const void* data, double timeout) {
  return guarded([&] {
    clientOf(space).put(nameOf(name), version, indexOf(ndim, offset, "offset"), indexOf(ndim, count, "count"), data,
                        timeout);
  });
}
axon_status_t axon_space_get(axon_space_t space, const char* name, int64_t version, int ndim, const int64_t* lo,
                             const int64_t* hi, void* out, size_t out_bytes, double timeout) {
  return guarded([&] {
    clientOf(space).get(nameOf(name), version, indexOf(ndim, lo, "lo"), indexOf(ndim, hi, "hi"), out, out_bytes, timeout);
  });
}
axon_status_t axon_space_iput(axon_space_t space, const char* name, int64_t version, int ndim, const int64_t* offset,
                              const int64_t* count, const void* data, double timeout, axon_space_request_t* req) {
  return guarded([&] {
    requireOut(req, "req");
    *req = new axon_space_request_s{clientOf(space).iput(nameOf(name), version, indexOf(ndim, offset, "offset"),
                                                         indexOf(ndim, count, "count"), data, timeout)};
  });
}
axon_status_t axon_space_iget(axon_space_t space, const char* name, int64_t version, int ndim, const int64_t* lo,
                              const int64_t* hi, void* out, size_t out_bytes, double timeout, axon_space_request_t* req) {
  return guarded([&] {
    requireOut(req, "req");
    *req = new axon_space_request_s{clientOf(space).iget(nameOf(name), version, indexOf(ndim, lo, "lo"),
                                                         indexOf(ndim, hi, "hi"), out, out_bytes, timeout)};
  });
}
axon_status_t axon_space_wait(axon_space_request_t* req) {
  return guarded([&] {
    requireOut(req, "req");
    std::unique_ptr<axon_space_request_s> owned(*req);
    requireOut(owned.get(), "*req");
    *req = nullptr;
    owned->request.wait();
  });
}
axon_status_t axon_space_test(axon_space_request_t* req) {
  bool done = false;
  const axon_status_t rc = guarded([&] {
    requireOut(req, "req");
    requireOut(*req, "*req");
    try {
      done = (*req)->request.test();
    } catch (...) {
      done = true;
      delete *req;
      *req = nullptr;
      throw;
    }
    if (done) {
      delete *req;
      *req = nullptr;
    }
  });
  return rc == AXON_SUCCESS && !done ? AXON_IN_PROGRESS : rc;
}
axon_status_t axon_space_wait_version(axon_space_t space, const char* name, int64_t at_least, double timeout,
                                      int64_t* version) {
  return guarded([&] {
    requireOut(version, "version");
    *version = clientOf(space).waitVersion(nameOf(name), at_least, timeout);
  });
}
axon_status_t axon_space_release(axon_space_t space, const char* name, int64_t version) {
  return guarded([&] { clientOf(space).release(nameOf(name), version); });
}
axon_status_t axon_space_remove(axon_space_t space, const char* name) {
  return guarded([&] { clientOf(space).remove(nameOf(name)); });
}
axon_status_t axon_space_stats(axon_space_t space, axon_space_stats_t* out) {
  return guarded([&] {
    requireOut(out, "out");
    const axon::space::Stats s = clientOf(space).stats();
    *out = axon_space_stats_t{};
    out->servers = s.servers.size();
    for (const auto& v : s.servers) {
      out->capacity += v.capacity;
      out->bytes_in_use += v.bytesInUse;
      out->high_water += v.highWater;
      out->pieces += v.pieces;
      out->versions += v.versions;
    }
    out->puts = s.client.puts;
    out->bytes_put = s.client.bytesPut;
    out->gets = s.client.gets;
    out->bytes_got = s.client.bytesGot;
    out->batches = s.client.batches;
    out->fused_kernels = s.client.fusedKernels;
  });
}

}  // extern "C"
