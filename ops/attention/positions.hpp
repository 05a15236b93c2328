// Run-time helper shared by the fused attention's reference and CPU kernels (not part of the
// op's graph-building header, which must not need the run-time types).
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include <stag/ops/attention/attention.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::kernel {

// The problem's dims: q [B, Hq, Sq, Dk], k [B, Hkv, Sk, Dk], v [B, Hkv, Sk, Dv], or the 3-d
// (one head) forms read as H = 1.
struct AttentionDims {
  std::int64_t B = 1, Hq = 1, Hkv = 1, Sq = 1, Sk = 1, Dk = 1, Dv = 1;
};
inline AttentionDims attention_dims(const TensorView& q, const TensorView& k, const TensorView& v) {
  const int r = q.rank;
  return {q.dims[0],     r == 4 ? q.dims[1] : 1, r == 4 ? k.dims[1] : 1, q.dims[r - 2],
          k.dims[r - 2], q.dims[r - 1],          v.dims[r - 1]};
}
// Strides that read the keep mask [B|1, (H|1,) Sq|1, Sk] as [B, Hq, Sq, Sk] (a 3-d mask gets a
// head axis of stride 0; size-1 dims broadcast with stride 0).
inline void keep_strides(TensorView m, const AttentionDims& d, std::int64_t* st) {
  if (m.rank == 3) {
    m.rank = 4;
    m.dims[3] = m.dims[2], m.dims[2] = m.dims[1], m.dims[1] = 1;
    m.strides[3] = m.strides[2], m.strides[2] = m.strides[1], m.strides[1] = 0;
  }
  const std::int64_t sd[4] = {d.B, d.Hq, d.Sq, d.Sk};
  broadcast_strides(m, 4, sd, st);
}

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
