// What one run of the tiled attention kernels computes (attn::Problem), apart from the kernels
// (tiled.hpp, tiled_bf16.hpp), so that code built without the kernels' ISA can describe a run.
#pragma once

#include <cstdint>

#include <stag/ops/attention/mods.hpp>

namespace stag::attn {

// The built-in masks (attrs i[0] of the attention op). Query q sits at key position
// q + (Sk - Sq), as in causal_mask<Sq, Sk>: with a KV cache the queries are the last positions.
enum class MaskKind : std::int8_t { none = 0, causal = 1, sliding_window = 2 };
// The built-in score modifications (attrs i[6]), applied to the scaled score s of query q and
// key k before the mask: ALiBi adds -m_h (q' - k) with m_h = 2^(-8 (h + 1) / H) (Press et al.),
// soft-capping replaces s by c tanh(s / c) (Gemma 2).
enum class ScoreMod : std::int8_t { none = 0, alibi = 1, softcap = 2 };

// Everything one run needs. Strides are in elements; the last dim of q, k, v, o and do is
// contiguous. Outputs are contiguous [B, H, S, D].
struct Problem {
  std::int64_t B = 1, Hq = 1, Hkv = 1, Sq = 1, Sk = 1, Dk = 1, Dv = 1;
  float scale = 1.f;
  MaskKind mask = MaskKind::none;
  ScoreMod score_mod = ScoreMod::none;
  float softcap = 0.f;      // ScoreMod::softcap: c
  std::int64_t window = 0;  // sliding_window: keys in (q' - window, q'] are kept
  // Cache positions [B] (or null): query q of row b sits at key position pos[b] + q instead of
  // q + Sk - Sq; pos[b] < 0 makes row b inactive (nothing kept, zeros out).
  const std::int32_t* pos = nullptr;
  // A dense keep mask broadcast to [B, Hq, Sq, Sk] (strides 0 on broadcast dims), or null.
  const bool* keep = nullptr;
  std::int64_t keep_st[4] = {};
  // Dropout of the probabilities: element ((b Hq + h) Sq + q) Sk + k is kept when
  // mix(stream ^ index) >> 11 >= threshold (ops/random.hpp, the same as the dropout op).
  // index_offset: the global index of element 0 (data parallelism, see global_index_offset).
  bool dropout = false;
  std::uint64_t stream = 0, threshold = 0, index_offset = 0;
  float drop_scale = 1.f;
  // User-defined score_mod / mask_mod (ops/attention/mods.hpp), or null, and their run data.
  const Mods* mods = nullptr;
  ModRun run;
  // With a mask_mod: the class of every (batch, head, query tile, key tile), computed by
  // compute_blocks() when the step runs (tile_class() reads it).
  const std::uint8_t* blocks = nullptr;
  // Inputs: strides of the batch, head and sequence axes.
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  std::int64_t q_st[3] = {}, k_st[3] = {}, v_st[3] = {};
  // bf16 q, k and v (stag::autocast) with the same strides, read by the kernels with bf16 tile
  // products (tiled_bf16.hpp) instead of q, k and v.
  const std::uint16_t *qh = nullptr, *kh = nullptr, *vh = nullptr;
};

}  // namespace stag::attn
