#include "transport/ucx/ucx_registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "bootstrap/blob.hpp"

namespace axon::ucx {
namespace {

// The first byte of a registration: which memory it describes.
constexpr std::uint8_t kHostHeap = 0, kGpuHeap = 1, kRegion = 2;

}  // namespace

UcxRegistry::~UcxRegistry() {
  for (auto& peer : peers_) {
    for (auto& remote : peer) destroyKeys(remote);
  }
  for (auto& regions : peerRegions_) {
    for (auto& [id, remote] : regions) destroyKeys(remote);
  }
  const UcxApi& api = worker_.api();
  for (auto& local : local_) {
    for (ucp_mem_h m : local.memh) api.ucp_mem_unmap(worker_.context(), m);
  }
  for (auto& [id, region] : regions_) {
    api.ucp_mem_unmap(worker_.context(), region.memh);
    std::free(region.base);
  }
}

void UcxRegistry::destroyKeys(Remote& remote) {
  for (ucp_rkey_h k : remote.rkeys) {
    if (k) worker_.api().ucp_rkey_destroy(k);
  }
  remote.rkeys.clear();
}

std::pair<ucp_mem_h, std::string> UcxRegistry::mapAndPack(void* address, std::size_t length, ucs_memory_type_t type,
                                                          const std::string& where) {
  const UcxApi& api = worker_.api();
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH |
                      UCP_MEM_MAP_PARAM_FIELD_MEMORY_TYPE;
  params.address = address;
  params.length = length;
  params.memory_type = type;
  ucp_mem_h memh = nullptr;
  ucxCheck(api.ucp_mem_map(worker_.context(), &params, &memh), where + " (ucp_mem_map)");
  void* buf = nullptr;
  std::size_t len = 0;
  const ucs_status_t s = api.ucp_rkey_pack(worker_.context(), memh, &buf, &len);
  if (s != UCS_OK) {
    api.ucp_mem_unmap(worker_.context(), memh);
    throw UcxError(where + " (ucp_rkey_pack)", s);
  }
  std::string packed(static_cast<const char*>(buf), len);
  api.ucp_rkey_buffer_release(buf);
  return {memh, std::move(packed)};
}

std::string UcxRegistry::registration(const HeapSpace& heap, std::size_t from) {
  std::unique_lock lock(mutex_);
  Local& local = local_[index(heap.kind())];
  const std::uint64_t registered = local.ranges.size() ? local.ranges[local.ranges.size() - 1].end() : 0;
  const std::uint64_t mapped = heap.mapped();
  if (mapped > registered) {
    const std::string where = "PE " + std::to_string(worker_.setup().myPe) + ": registering " +
                              std::to_string(mapped - registered) + " bytes of the " + heapKindName(heap.kind()) +
                              " at offset " + std::to_string(registered) + " with UCX";
    auto [memh, packed] = mapAndPack(heap.base() + registered, mapped - registered,
                                     heap.kind() == HeapKind::Gpu ? UCS_MEMORY_TYPE_CUDA : UCS_MEMORY_TYPE_HOST, where);
    local.packed.push_back(std::move(packed));
    local.memh.push_back(memh);
    local.ranges.add(registered, mapped - registered);
    std::lock_guard spans(localMutex_);
    localHeaps_[index(heap.kind())] = Span{heap.base(), mapped};
  }
  wire::BlobWriter w(wire::BlobKind::Registration);
  std::uint32_t count = 0;
  for (std::size_t i = 0; i < local.ranges.size(); ++i) count += local.ranges[i].end() > from;
  if (count == 0) return {};
  w.u8(heap.kind() == HeapKind::Gpu ? kGpuHeap : kHostHeap).u64(reinterpret_cast<std::uintptr_t>(heap.base())).u32(count);
  for (std::size_t i = 0; i < local.ranges.size(); ++i) {
    if (local.ranges[i].end() > from) w.u64(local.ranges[i].offset).u64(local.ranges[i].bytes).str(local.packed[i]);
  }
  return w.take();
}

std::string UcxRegistry::exposeRegion(std::size_t bytes, std::uint32_t& id, void*& base) {
  const std::size_t length = (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096;
  void* memory = std::aligned_alloc(4096, length);
  if (!memory) {
    throw Error(ErrorCode::OutOfMemory, "PE " + std::to_string(worker_.setup().myPe) + ": allocating a region of " +
                                            std::to_string(length) + " bytes for peers on other nodes");
  }
  std::memset(memory, 0, length);
  std::unique_lock lock(mutex_);
  const std::uint32_t number = nextRegion_;
  std::pair<ucp_mem_h, std::string> mapped;
  try {
    mapped = mapAndPack(memory, length, UCS_MEMORY_TYPE_HOST,
                        "PE " + std::to_string(worker_.setup().myPe) + ": registering region " +
                            std::to_string(number) + " of " + std::to_string(length) + " bytes with UCX");
  } catch (...) {
    std::free(memory);
    throw;
  }
  ++nextRegion_;
  regions_[number] = LocalRegion{memory, length, mapped.first};
  {
    std::lock_guard spans(localMutex_);
    localRegions_[number] = Span{static_cast<char*>(memory), length};
  }
  id = number;
  base = memory;
  wire::BlobWriter w(wire::BlobKind::Registration);
  w.u8(kRegion).u32(number).u64(reinterpret_cast<std::uintptr_t>(memory)).u32(1);
  w.u64(0).u64(length).str(mapped.second);
  return w.take();
}

void UcxRegistry::withdrawRegion(std::uint32_t id) {
  std::unique_lock lock(mutex_);
  auto it = regions_.find(id);
  if (it == regions_.end()) return;
  {
    std::lock_guard spans(localMutex_);  // no active message writes into it from now on
    localRegions_.erase(id);
  }
  worker_.api().ucp_mem_unmap(worker_.context(), it->second.memh);
  std::free(it->second.base);
  regions_.erase(it);
}

void UcxRegistry::forgetRegion(int pe, std::uint32_t id) {
  std::unique_lock lock(mutex_);
  auto it = peerRegions_[pe].find(id);
  if (it == peerRegions_[pe].end()) return;
  destroyKeys(it->second);
  peerRegions_[pe].erase(it);
}

void UcxRegistry::accept(int pe, const std::string& registration, const std::string& origin) {
  struct Range {
    std::uint64_t offset, bytes;
    std::string key;
  };
  struct Decoded {
    std::uint8_t kind;
    std::uint32_t region = 0;
    std::uint64_t base;
    std::vector<Range> ranges;
  };
  Decoded d = wire::decodeBlob(registration, wire::BlobKind::Registration, origin, [](wire::ByteReader& in) {
    Decoded d;
    d.kind = in.u8();
    if (d.kind > kRegion) throw wire::Malformed("a registration of kind " + std::to_string(d.kind));
    if (d.kind == kRegion) {
      d.region = in.u32();
      if (d.region == 0) throw wire::Malformed("region number 0");
    }
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
  const HeapKind kind = d.kind == kGpuHeap ? HeapKind::Gpu : HeapKind::Host;
  const std::string what = d.region ? "region " + std::to_string(d.region) : std::string(heapKindName(kind));
  const UcxApi& api = worker_.api();
  ucp_ep_h ep = worker_.endpoint(pe, "unpacking a memory key");
  std::unique_lock lock(mutex_);
  Remote& remote = d.region ? peerRegions_[pe][d.region] : peers_[pe][index(kind)];
  if (remote.ranges.size() && remote.base != d.base) {
    throw Error(ErrorCode::Bootstrap, "malformed store value: " + origin + " moves PE " + std::to_string(pe) + "'s " +
                                          what + " (every registration of a heap has one base)");
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
                         "'s memory key for " + std::to_string(r.bytes) + " bytes of its " + what + " (" + origin + ")",
                     s);
    }
    remote.rkeys.push_back(rkey);
  }
}

void UcxRegistry::unregistered(int pe, HeapKind kind, std::uint32_t region, std::uint64_t offset,
                               const char* what) const {
  const std::string space = region ? "region " + std::to_string(region) : std::string(heapKindName(kind));
  throw Error(ErrorCode::Internal, "PE " + std::to_string(worker_.setup().myPe) + ": " + what + ": PE " +
                                       std::to_string(pe) + " never registered offset " + std::to_string(offset) +
                                       " of its " + space + " with UCX (no memory key reaches it)");
}

}  // namespace axon::ucx
