// Memory planning: given each buffer's size and lifetime (first and last step in execution
// order), place buffers in one arena so that buffers alive at the same time never overlap and
// memory is reused otherwise. Greedy by size (largest first, lowest free offset), which packs
// transformer activations well; the peak is known before the first step.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace stag {

struct BufferReq {
  std::int64_t bytes = 0;
  int start = 0;  // first step that writes it
  int end = 0;    // last step that reads it (inclusive)
};

struct MemoryPlan {
  std::vector<std::int64_t> offsets;  // per buffer, in bytes from the arena's start
  std::int64_t peak = 0;              // arena size in bytes
  std::int64_t naive = 0;             // sum of all buffer sizes (no reuse), for reporting
};

inline constexpr std::int64_t kBufferAlign = 64;

MemoryPlan place_buffers(std::span<const BufferReq> bufs, std::int64_t align = kBufferAlign);

// True when no two buffers whose lifetimes intersect share a byte.
bool plan_is_valid(std::span<const BufferReq> bufs, const MemoryPlan& plan);

}  // namespace stag
