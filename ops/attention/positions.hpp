// Run-time helper shared by the fused attention's reference and CPU kernels (not part of the
// op's graph-building header, which must not need the run-time types).
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include <stag/ops/attention/attention.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::kernel {

// Checks the cache positions of sdpa over a cache: each of pos[0 .. batch) must be -1 (an
// inactive row) or in [0, sk - sq]; otherwise a stag::Error naming the node, the row and the
// bounds.
void check_cache_positions(const GraphView& g, int node, const std::int32_t* pos,
                           std::int64_t batch, std::int64_t sq, std::int64_t sk);

// The score_mod / mask_mod descriptor of an attention node (attrs i[4] == 2), or null.
inline const attn::Mods* mods_of(const Attrs& a) {
  return a.i[4] == 2 ? static_cast<const attn::Mods*>(a.ext) : nullptr;
}
// The run data of the captured tensors, which are inputs first, first + 1, ... of the node.
attn::ModRun mod_run(const attn::Mods& m, std::span<const TensorView> in, int first,
                     attn::Fault* fault);
// After a run: a read outside a captured tensor, or too many float reads per score for the
// gradient tape, is a stag::Error naming the node (and the fault is reset).
void check_mod_fault(const GraphView& g, int node, const attn::Mods& m, attn::Fault& fault);
// The elements of score_mod's float captured tensor j ahead of it in the backward's buffer of
// capture gradients (which holds one per float score capture, in order), and its size.
std::pair<std::int64_t, std::int64_t> cap_grad_slot(const attn::Mods& m,
                                                    std::span<const TensorView> caps, int j);

}  // namespace stag::kernel
