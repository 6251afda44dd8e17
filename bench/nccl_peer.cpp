#include "nccl_peer.hpp"

#include <dlfcn.h>

#include <cstring>
#include <stdexcept>

namespace axon::bench {
namespace {

// The parts of NCCL's C ABI used here (nccl.h, stable since NCCL 2.0): opaque handles, the
// 128-byte unique id, and the enum values of its data types and ops.
using NcclResult = int;
using NcclComm = void*;
struct NcclUniqueId {
  char internal[128];
};

int ncclType(DataType t) {
  switch (t) {
    case DataType::Int8: return 0;
    case DataType::Uint8: return 1;
    case DataType::Int32: return 2;
    case DataType::Uint32: return 3;
    case DataType::Int64: return 4;
    case DataType::Uint64: return 5;
    case DataType::Float16: return 6;
    case DataType::Float32: return 7;
    case DataType::Float64: return 8;
    case DataType::BFloat16: return 9;
  }
  return -1;
}

int ncclOp(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return 0;
    case ReduceOp::Prod: return 1;
    case ReduceOp::Max: return 2;
    case ReduceOp::Min: return 3;
  }
  return -1;
}

}  // namespace

struct NcclPeer::Api {
  void* lib = nullptr;
  NcclResult (*getVersion)(int*);
  NcclResult (*getUniqueId)(NcclUniqueId*);
  NcclResult (*commInitRank)(NcclComm*, int, NcclUniqueId, int);
  NcclResult (*commDestroy)(NcclComm);
  const char* (*getErrorString)(NcclResult);
  NcclResult (*allReduce)(const void*, void*, std::size_t, int, int, NcclComm, Stream);
  NcclResult (*broadcast)(const void*, void*, std::size_t, int, int, NcclComm, Stream);
  NcclResult (*reduce)(const void*, void*, std::size_t, int, int, int, NcclComm, Stream);
  NcclResult (*allGather)(const void*, void*, std::size_t, int, NcclComm, Stream);
  NcclResult (*reduceScatter)(const void*, void*, std::size_t, int, int, NcclComm, Stream);
  NcclResult (*send)(const void*, std::size_t, int, int, NcclComm, Stream);
  NcclResult (*recv)(void*, std::size_t, int, int, NcclComm, Stream);
  NcclResult (*groupStart)();
  NcclResult (*groupEnd)();

  template <class F>
  void bind(F& fn, const char* name) {
    void* sym = ::dlsym(lib, name);
    if (!sym) throw std::runtime_error(std::string("NCCL library lacks ") + name);
    fn = reinterpret_cast<F>(sym);
  }
  void check(NcclResult r, const char* what) const {
    if (r != 0) throw std::runtime_error(std::string(what) + ": " + (getErrorString ? getErrorString(r) : "error"));
  }
};

std::unique_ptr<NcclPeer> NcclPeer::open(const std::string& library) {
  std::unique_ptr<NcclPeer> peer(new NcclPeer());
  auto api = std::make_unique<Api>();
  // Every PE loads the library and says whether it could; all fail alike if one cannot.
  std::string failure;
  api->lib = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->lib) failure = std::string("cannot load ") + library + ": " + (::dlerror() ?: "unknown reason");
  try {
    if (failure.empty()) {
      api->bind(api->getVersion, "ncclGetVersion");
      api->bind(api->getUniqueId, "ncclGetUniqueId");
      api->bind(api->commInitRank, "ncclCommInitRank");
      api->bind(api->commDestroy, "ncclCommDestroy");
      api->bind(api->getErrorString, "ncclGetErrorString");
      api->bind(api->allReduce, "ncclAllReduce");
      api->bind(api->broadcast, "ncclBroadcast");
      api->bind(api->reduce, "ncclReduce");
      api->bind(api->allGather, "ncclAllGather");
      api->bind(api->reduceScatter, "ncclReduceScatter");
      api->bind(api->send, "ncclSend");
      api->bind(api->recv, "ncclRecv");
      api->bind(api->groupStart, "ncclGroupStart");
      api->bind(api->groupEnd, "ncclGroupEnd");
    }
  } catch (const std::exception& e) {
    failure = e.what();
  }
  int bad = failure.empty() ? 0 : 1, anyBad = 0;
  allreduce(Team::world(), &bad, &anyBad, 1, DataType::Int32, ReduceOp::Max);
  if (anyBad) throw std::runtime_error(failure.empty() ? "NCCL could not be loaded on another PE" : failure);
  NcclUniqueId id{};
  if (myPe() == 0) api->check(api->getUniqueId(&id), "ncclGetUniqueId");
  broadcast(Team::world(), &id, &id, sizeof(id), DataType::Uint8, 0);
  api->check(api->commInitRank(&peer->comm_, nPes(), id, myPe()), "ncclCommInitRank");
  int v = 0;
  api->getVersion(&v);
  peer->version_ = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  peer->api_ = std::move(api);
  return peer;
}

NcclPeer::~NcclPeer() {
  if (comm_) api_->commDestroy(comm_);
}

void NcclPeer::run(Collective c, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op, int root,
                   Stream stream) {
  const int t = ncclType(type), o = ncclOp(op);
  const Api& a = *api_;
  switch (c) {
    case Collective::Allreduce: a.check(a.allReduce(src, dst, count, t, o, comm_, stream), "ncclAllReduce"); break;
    case Collective::Broadcast: a.check(a.broadcast(src, dst, count, t, root, comm_, stream), "ncclBroadcast"); break;
    case Collective::Reduce: a.check(a.reduce(src, dst, count, t, o, root, comm_, stream), "ncclReduce"); break;
    case Collective::Allgather: a.check(a.allGather(src, dst, count, t, comm_, stream), "ncclAllGather"); break;
    case Collective::ReduceScatter:
      a.check(a.reduceScatter(src, dst, count, t, o, comm_, stream), "ncclReduceScatter");
      break;
    case Collective::Alltoall: {
      const std::size_t block = count * dataTypeSize(type);
      a.check(a.groupStart(), "ncclGroupStart");
      for (int pe = 0; pe < nPes(); ++pe) {
        a.check(a.send(static_cast<const char*>(src) + pe * block, count, t, pe, comm_, stream), "ncclSend");
        a.check(a.recv(static_cast<char*>(dst) + pe * block, count, t, pe, comm_, stream), "ncclRecv");
      }
      a.check(a.groupEnd(), "ncclGroupEnd");
      break;
    }
    case Collective::Barrier: break;
  }
}

}  // namespace axon::bench
