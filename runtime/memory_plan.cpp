// Greedy-by-size buffer placement (as in TensorFlow Lite's arena planner).
#include <algorithm>
#include <numeric>

#include <stag/runtime/memory_plan.hpp>

namespace stag {

namespace {
std::int64_t round_up(std::int64_t v, std::int64_t a) {
  return (v + a - 1) / a * a;
}
bool lifetimes_meet(const BufferReq& a, const BufferReq& b) {
  return a.start <= b.end && b.start <= a.end;
}
}  // namespace

MemoryPlan place_buffers(std::span<const BufferReq> bufs, std::int64_t align) {
  MemoryPlan plan;
  const std::size_t n = bufs.size();
  plan.offsets.assign(n, 0);
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return bufs[a].bytes != bufs[b].bytes ? bufs[a].bytes > bufs[b].bytes
                                          : bufs[a].start < bufs[b].start;
  });
  std::vector<std::size_t> placed;
  std::vector<std::pair<std::int64_t, std::int64_t>> busy;  // [begin, end) of conflicting buffers
  for (std::size_t i : order) {
    const std::int64_t size = round_up(std::max<std::int64_t>(bufs[i].bytes, 1), align);
    plan.naive += size;
    busy.clear();
    for (std::size_t j : placed)
      if (lifetimes_meet(bufs[i], bufs[j]))
        busy.emplace_back(
            plan.offsets[j],
            plan.offsets[j] + round_up(std::max<std::int64_t>(bufs[j].bytes, 1), align));
    std::sort(busy.begin(), busy.end());
    std::int64_t offset = 0;
    for (const auto& [b, e] : busy) {
      if (offset + size <= b) break;  // fits in the gap before this block
      offset = std::max(offset, e);
    }
    plan.offsets[i] = offset;
    plan.peak = std::max(plan.peak, offset + size);
    placed.push_back(i);
  }
  return plan;
}

bool plan_is_valid(std::span<const BufferReq> bufs, const MemoryPlan& plan) {
  for (std::size_t i = 0; i < bufs.size(); ++i)
    for (std::size_t j = i + 1; j < bufs.size(); ++j) {
      if (!lifetimes_meet(bufs[i], bufs[j])) continue;
      const std::int64_t ai = plan.offsets[i], bi = ai + std::max<std::int64_t>(bufs[i].bytes, 1);
      const std::int64_t aj = plan.offsets[j], bj = aj + std::max<std::int64_t>(bufs[j].bytes, 1);
      if (ai < bj && aj < bi) return false;
    }
  return true;
}

}  // namespace stag
