// Gradient of the fused attention: one attention_backward node computes dq (and, on the CPU,
// dk and dv with it, in one pass over the tiles); attention_backward_kv nodes hand out dk and
// dv. All three recompute the probabilities from q, k and the forward's row statistics, so
// nothing of size [Sq, Sk] is stored between the passes.
#pragma once

#include <stag/ops/attention/attention.hpp>

namespace stag {

constexpr void OpDef<OpId::attention>::vjp(VjpCtx& c) {
  // The message stays on the line of the throw, which the compilers quote.
  // clang-format off
  if (c.attr().i[4] != 0) throw GraphError("stag::grad: sdpa over a key/value cache (cache_positions) has no gradient: it is for decoding; train with sdpa(q, k, v, {.mask = AttnMask::causal}) over the whole sequence");
  // clang-format on
  const Ref q = c.x(0), k = c.x(1), v = c.x(2);
  const Ref keep = c.nin() == 4 ? c.x(3) : Ref{};
  const Attrs a = c.attr();
  const Ref dq = attention_backward(q, k, v, c.y(), c.g(), keep, a);
  c.grads[0] = dq;
  c.grads[1] = attention_backward_kv(dq, q, k, v, c.y(), c.g(), keep, a, 0);
  c.grads[2] = attention_backward_kv(dq, q, k, v, c.y(), c.g(), keep, a, 1);
}

}  // namespace stag
