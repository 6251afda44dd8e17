// A team of one PE ("local"): every collective is a copy from src to dst, or nothing.
#include <cstring>

#include "coll/team_collectives.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::coll {
namespace {

class LocalCollectives final : public TeamCollectives {
 public:
  LocalCollectives(PeContext& rt, const detail::TeamState& team) : rt_(rt), team_(team) {}

  void run(Request q, const char* api) override {
    auto [srcBytes, dstBytes] = extents(q, 1, dataTypeSize(q.type), 0);
    if (!dstBytes || !srcBytes || q.dst == q.src) return;
    if (rt_.gpu()) rt_.gpu()->copyLocal(q.dst, q.src, dstBytes);
    else std::memmove(q.dst, q.src, dstBytes);
  }
  void enqueue(const Team&, Request q, void* stream, const char* api) override {
    auto [srcBytes, dstBytes] = extents(q, 1, dataTypeSize(q.type), 0);
    if (srcBytes && dstBytes && q.src != q.dst) rt_.gpu()->copyLocalOnStream(q.dst, q.src, dstBytes, stream);
  }
  void explain(Explanation& e, std::size_t, DataType) const override { e.path = "local"; }
  device::CollHandle deviceHandle(const Team&) override { noDeviceHandle(rt_, team_); }

 private:
  PeContext& rt_;
  const detail::TeamState& team_;
};

}  // namespace

std::shared_ptr<TeamCollectives> localCollectives(PeContext& rt, const detail::TeamState& team) {
  return std::make_shared<LocalCollectives>(rt, team);
}

}  // namespace axon::coll
