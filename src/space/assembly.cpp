// The plan of a get's reassembly (assembly.hpp).
#include "space/assembly.hpp"

namespace axon::space {

namespace {

std::uint64_t alignUp(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

}  // namespace

AssemblyPlan planAssembly(const std::vector<FragmentSource>& sources, const Box& box, std::size_t elementBytes,
                          bool device) {
  AssemblyPlan plan;
  plan.sources.reserve(sources.size());
  for (const FragmentSource& src : sources) {
    std::vector<FragmentPlan>& planned = plan.sources.emplace_back();
    planned.reserve(src.fragments.size());
    for (const Fragment& f : src.fragments) {
      FragmentPlan p;
      p.region = planCopy(f.piece, box, *intersect(f.piece, box), elementBytes);
      p.staged = !src.mapped || device;
      if (p.staged) {
        p.at = alignUp(plan.stagingBytes, kStagingAlign);
        plan.stagingBytes = p.at + f.rangeBytes;
      }
      planned.push_back(p);
      ++plan.fragments;
    }
  }
  return plan;
}

}  // namespace axon::space
