// Gradient of the fused attention: one attention_backward node computes dq (and, on the CPU,
// dk, dv and the gradients of score_mod's float captures with it, in one pass over the tiles);
// attention_backward_kv nodes hand out dk, dv and those. All three recompute the probabilities from
// q, k and the forward's row statistics, so nothing of size [Sq, Sk] is stored between the passes.
#pragma once

#include <stag/ops/attention/attention.hpp>

namespace stag {

constexpr void OpDef<OpId::attention>::vjp(VjpCtx& c) {
  // The message stays on the line of the throw, which the compilers quote.
  // clang-format off
  if (c.attr().i[4] == 1) throw GraphError("stag::grad: sdpa over a key/value cache (cache_positions) has no gradient: it is for decoding; train with sdpa(q, k, v, {.mask = AttnMask::causal}) over the whole sequence");
  // clang-format on
  const Ref q = c.x(0), k = c.x(1), v = c.x(2);
  // Inputs from 3 on: the keep mask (no gradient) or the captured tensors of score_mod (float
  // ones get gradients) and mask_mod (none).
  const int n_extra = c.nin() - 3;
  Ref extra[kMaxInputs] = {};
  for (int j = 0; j < n_extra; ++j) extra[j] = c.x(3 + j);
  const Attrs a = c.attr();
  const Ref dq = attention_backward(q, k, v, c.y(), c.g(), extra, n_extra, a);
  c.grads[0] = dq;
  c.grads[1] = attention_backward_kv(dq, q, k, v, c.y(), c.g(), extra, n_extra, a, 0);
  c.grads[2] = attention_backward_kv(dq, q, k, v, c.y(), c.g(), extra, n_extra, a, 1);
  if (a.i[4] == 2) {
    const int n_score = static_cast<int>(a.i[7] % 16);
    for (int j = 0; j < n_score; ++j)
      if (is_float(extra[j].dtype()))
        c.grads[3 + j] = attention_backward_kv(dq, q, k, v, c.y(), c.g(), extra, n_extra, a, 2 + j);
  }
}

}  // namespace stag
