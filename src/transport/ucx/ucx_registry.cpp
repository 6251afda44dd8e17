#include "transport/ucx/ucx_registry.hpp"

#include <mutex>

#include "bootstrap/blob.hpp"

namespace axon::ucx {

UcxRegistry::~UcxRegistry() {
  const UcxApi& api = worker_.api();
  for (auto& peer : peers_) {
    for (auto& remote : peer) {
      for (ucp_rkey_h k : remote.rkeys) api.ucp_rkey_destroy(k);
    }
  }
  for (auto& local : local_) {
    for (ucp_mem_h m : local.memh) api.ucp_mem_unmap(worker_.context(), m);
  }
}

std::string UcxRegistry::registration(const HeapSpace& heap, std::size_t from) {
  const UcxApi& api = worker_.api();
  std::unique_lock lock(mutex_);
  Local& local = local_[index(heap.kind())];
  const std::uint64_t registered = local.ranges.size() ? local.ranges[local.ranges.size() - 1].end() : 0;
  const std::uint64_t mapped = heap.mapped();
  if (mapped > registered) {
    ucp_mem_map_params_t params{};
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                        UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
    params.address = heap.base() + registered;
    params.length = mapped - registered;
    params.memory_type = heap.kind() == HeapKind::Gpu ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST;
    const std::string where = "PE " + std::to_string(worker_.setup().myPe) + ": registering " +
                              std::to_string(params.length) + " bytes of the " + heapKindName(heap.kind()) +
                              " at offset " + std::to_string(registered) + " with UCX";
    ucp_mem_h memh = nullptr;
    ucxCheck(api.ucp_mem_map(worker_.context(), &params, &memh), where + " (ucp_mem_map)");
    void* buf = nullptr;
    std::size_t len = 0;
    const ucs_status_t s = api.ucp_rkey_pack(worker_.context(), memh, &buf, &len);
    if (s != UCS_OK) {
      api.ucp_mem_unmap(worker_.context(), memh);
      throw UcxError(where + " (ucp_rkey_pack)", s);
    }
    local.packed.emplace_back(static_cast<const char*>(buf), len);
    api.ucp_rkey_buffer_release(buf);
    local.memh.push_back(memh);
    local.ranges.add(registered, mapped - registered);
  }
  wire::BlobWriter w(wire::BlobKind::Registration);
  std::uint32_t count = 0;
  for (std::size_t i = 0; i < local.ranges.size(); ++i) count += local.ranges[i].end() > from;
  if (count == 0) return {};
  w.u8(static_cast<std::uint8_t>(heap.kind())).u64(reinterpret_cast<std::uintptr_t>(heap.base())).u32(count);
  for (std::size_t i = 0; i < local.ranges.size(); ++i) {
    if (local.ranges[i].end() > from) w.u64(local.ranges[i].offset).u64(local.ranges[i].bytes).str(local.packed[i]);
  }
  return w.take();
}

void UcxRegistry::accept(int pe, const std::string& registration, const std::string& origin) {
  struct Range {
    std::uint64_t offset, bytes;
    std::string key;
  };
  struct Decoded {
    HeapKind kind;
    std::uint64_t base;
    std::vector<Range> ranges;
  };
  Decoded d = wire::decodeBlob(registration, wire::BlobKind::Registration, origin, [](wire::ByteReader& in) {
    Decoded d;
    const std::uint8_t kind = in.u8();
    if (kind > 1) throw wire::Malformed("a heap of kind " + std::to_string(kind));
    d.kind = static_cast<HeapKind>(kind);
    d.base = in.u64();
    const std::uint32_t n = in.count(20);  // offset, size and the key's length at least
    for (std::uint32_t i = 0; i < n; ++i) {
      Range r;
      r.offset = in.u64();
      r.bytes = in.u64();
      r.key = in.str();
      d.ranges.push_back(std::move(r));
    }
    return d;
  });
  const UcxApi& api = worker_.api();
  ucp_ep_h ep = worker_.endpoint(pe, "unpacking a memory key");
  std::unique_lock lock(mutex_);
  Remote& remote = peers_[pe][index(d.kind)];
  if (remote.ranges.size() && remote.base != d.base) {
    throw Error(ErrorCode::Bootstrap, "malformed store value: " + origin + " moves PE " + std::to_string(pe) + "'s " +
                                          heapKindName(d.kind) + " (every registration of a heap has one base)");
  }
  remote.base = d.base;
  for (const Range& r : d.ranges) {
    bool added = false;
    try {
      added = remote.ranges.add(r.offset, r.bytes);
    } catch (const std::invalid_argument& e) {
      throw Error(ErrorCode::Bootstrap, "malformed store value: " + origin + ": " + e.what());
    }
    if (!added) continue;  // known already: its key is unpacked
    ucp_rkey_h rkey = nullptr;
    const ucs_status_t s = api.ucp_ep_rkey_unpack(ep, r.key.data(), &rkey);
    if (s != UCS_OK) {
      // Keep the indices of ranges and keys in step: the range stays, without a usable key.
      remote.rkeys.push_back(nullptr);
      throw UcxError("PE " + std::to_string(worker_.setup().myPe) + ": unpacking PE " + std::to_string(pe) +
                         "'s memory key for " + std::to_string(r.bytes) + " bytes of its " + heapKindName(d.kind) +
                         " (" + origin + ")",
                     s);
    }
    remote.rkeys.push_back(rkey);
  }
}

void UcxRegistry::unregistered(int pe, HeapKind kind, std::uint64_t offset, const char* what) const {
  throw Error(ErrorCode::Internal, "PE " + std::to_string(worker_.setup().myPe) + ": " + what + ": PE " +
                                       std::to_string(pe) + " never registered offset " + std::to_string(offset) +
                                       " of its " + heapKindName(kind) + " with UCX (no memory key reaches it)");
}

}  // namespace axon::ucx
