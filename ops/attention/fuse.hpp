// The compile-time attention fusion pass. `stag::model` runs it on every model graph when the
// model function has returned (graph/builder.hpp, graph_passes); it rewrites the chain that
// the articles write by hand, and that the library's layers build with fused = false,
//
//   matmul(dropout?(softmax<-1>(matmul_nt(q, k) * scale (+ bias), keep?)), v)
//
// into one attention op (ops/attention/attention.hpp): no [Sq, Sk] tensor is stored, the
// masked tiles of a causal_mask are skipped, and the gradient is the fused op's.
//   - q k^T: matmul_nt(q, k) or matmul(q, transpose<-2, -1>(k)).
//   - scale: `* c` or `/ c` with a [] constant c > 0 (either operand of the product), none
//     (scale 1), or `* rsqrt(numel(q, last axis))` / `/ sqrt(...)` (1 / sqrt(Dk) for a symbolic
//     head dim, as models/attention.hpp writes it).
//   - bias: `+ b` or `- b` with a float tensor that broadcasts to the scores (ALiBi's distances, a
//     relative-position table, an additive mask with -inf): captured by a built-in score_mod
//     "bias", so a learned bias gets its gradient from the kernel.
//   - keep: softmax's bool mask. A causal_mask<Sq, Sk> in it (through unsqueeze, reshape to
//     leading 1s, and `&`) also becomes the op's analytic causal mask, whose tiles are skipped.
//   - dropout: its p and salt, so the kernel draws the same masks as the chain.
// Legal, and done, when the chain's intermediate nodes (q k^T, the scaled and biased scores,
// the weights, their dropout) have no reader but the next node of the chain. Graph outputs do
// not count: a chain whose weights are an output is fused, and the weights are recomputed by
// the (otherwise dead) chain for that output only. Shapes and dtypes must be the fused op's
// (equal batch dims, heads a multiple of the key/value heads, f32 or f64).
// Semantics are the chain's: stag's softmax gives zeros on a fully masked (or all -inf) row,
// and so does the fused op. NOT fused: masked_fill / where with a finite fill (-1e9 gives a
// fully masked row uniform weights, the fused op zeros; write softmax(scores, keep)), and
// weights that another op reads (an entropy term: fusing would compute them twice).
// Opting out: `g.fuse_attention = false;` in the model function (the whole model), or
// keep_unfused(t) on the chain's final matmul (the library's AttentionOptions::fused = false).
// `static_assert(net.count(op::attention) == layers)` proves that the pass fired.
#pragma once

#include <vector>

#include <stag/ops/attention/attention.hpp>

namespace stag {

namespace attn {
// The built-in score_mod "bias" (score + bias or score - bias, its size-1 dims broadcast) and
// mask_mod "keep" (softmax's bool mask read as a capture, next to the bias), compiled once in
// ops/attention/fuse.cpp: [scores rank - 3][bias rank][with keep][subtracted].
extern const Mods kFusedMods[2][5][2][2];
}  // namespace attn

// Marks t's node so that graph passes leave it as written.
template <class S, DType T>
constexpr Tensor<S, T> keep_unfused(Tensor<S, T> t) {
  t.b->nodes[static_cast<std::size_t>(t.id)].flags |= kFlagNoFuse;
  return t;
}

namespace detail {

// One matched chain: the fused op's inputs and options.
struct AttnChain {
  int q = -1, k = -1, v = -1, keep = -1, bias = -1;
  bool subtract = false;  // scores - bias
  double scale = 1.0;     // 0: 1 / sqrt(Dk) (a symbolic head dim)
  double p = 0.0;
  std::int64_t salt = 0;
};

constexpr OpId fuse_op(const Builder& b, int n) {
  return op_id(b.node(n).op);
}
// n has one reader (the next node of the chain) and is not marked keep_unfused.
constexpr bool chain_link(const Builder& b, const std::vector<int>& readers, int n) {
  return readers[static_cast<std::size_t>(n)] == 1 && !(b.node(n).flags & kFlagNoFuse);
}

// q k^T: matmul_nt(q, k), or matmul(q, kt) with kt a swap of k's last two dims.
constexpr bool match_qk(const Builder& b, const std::vector<int>& readers, int n, AttnChain& c) {
  if (fuse_op(b, n) != OpId::matmul || !chain_link(b, readers, n)) return false;
  const Node& nd = b.node(n);
  const Attrs& a = b.attr(n);
  if (a.i[0] != 0) return false;
  c.q = nd.in[0];
  if (a.i[1] == 1) {
    c.k = nd.in[1];
    return true;
  }
  const int kt = nd.in[1];
  if (fuse_op(b, kt) != OpId::permute) return false;
  const int r = b.shape(kt).rank;
  const Attrs& pa = b.attr(kt);
  for (int i = 0; i < r - 2; ++i)
    if (pa.i[i] != i) return false;
  if (pa.i[r - 2] != r - 1 || pa.i[r - 1] != r - 2) return false;
  c.k = b.node(kt).in[0];
  return true;
}

// numel(q, last axis): the symbolic head dim.
constexpr bool is_head_dim(const Builder& b, int n, int q) {
  const Node& nd = b.node(n);
  if (fuse_op(b, n) != OpId::numel || nd.in[0] != q) return false;
  return b.attr(n).i[0] == (std::int64_t{1} << (b.shape(q).rank - 1));
}

// q k^T, times or divided by the scale.
constexpr bool match_scaled(const Builder& b, const std::vector<int>& readers, int n,
                            AttnChain& c) {
  if (match_qk(b, readers, n, c)) return true;
  const OpId op = fuse_op(b, n);
  if ((op != OpId::mul && op != OpId::div) || !chain_link(b, readers, n)) return false;
  const Node& nd = b.node(n);
  for (int side = 0; side < (op == OpId::mul ? 2 : 1); ++side) {
    const int x = nd.in[side], f = nd.in[1 - side];
    AttnChain t = c;
    if (b.shape(f).rank != 0 || !match_qk(b, readers, x, t)) continue;
    const Node& fn = b.node(f);
    if (fuse_op(b, f) == OpId::constant) {
      const double v = b.attr(f).f[0];
      const double s = op == OpId::mul ? v : 1.0 / v;
      if (!(s > 0.0 && s < 1e300)) continue;  // also refuses NaN and infinity
      t.scale = s;
      c = t;
      return true;
    }
    const OpId want = op == OpId::mul ? OpId::rsqrt : OpId::sqrt;
    if (fuse_op(b, f) == want && is_head_dim(b, fn.in[0], t.q)) {
      t.scale = 0.0;
      c = t;
      return true;
    }
  }
  return false;
}

// The scaled scores, plus or minus a bias that broadcasts to them.
constexpr bool match_scores(const Builder& b, const std::vector<int>& readers, int n,
                            AttnChain& c) {
  if (match_scaled(b, readers, n, c)) return true;
  const OpId op = fuse_op(b, n);
  if ((op != OpId::add && op != OpId::sub) || !chain_link(b, readers, n)) return false;
  const Node& nd = b.node(n);
  c.subtract = op == OpId::sub;
  for (int side = 0; side < (op == OpId::add ? 2 : 1); ++side) {
    const int x = nd.in[side], bias = nd.in[1 - side];
    AttnChain t = c;
    if (!match_scaled(b, readers, x, t)) continue;
    const int br = b.shape(bias).rank;
    if (!identical(b.shape(n), b.shape(x)) || br < 1 || br > b.shape(x).rank) continue;
    t.bias = bias;
    c = t;
    return true;
  }
  return false;
}

// 2: keep is a causal_mask<Sq, Sk> (through unsqueeze / leading-1 reshapes); 1: it is one
// operand of an `&` in keep; 0: no causal_mask.
constexpr int causal_in(const Builder& b, int n, const DimV& sq, const DimV& sk) {
  const Node& nd = b.node(n);
  switch (fuse_op(b, n)) {
    case OpId::causal_mask: {
      const ShapeV& s = b.shape(n);
      return s.dims[0] == sq && s.dims[1] == sk ? 2 : 0;
    }
    case OpId::unsqueeze:
      return causal_in(b, nd.in[0], sq, sk);
    case OpId::reshape: {
      const ShapeV &o = b.shape(n), &i = b.shape(nd.in[0]);
      if (o.rank < i.rank) return 0;
      for (int d = 0; d < o.rank; ++d) {
        const int e = d - (o.rank - i.rank);
        if (e < 0 ? !(o.dims[d] == static_dim(1)) : !(o.dims[d] == i.dims[e])) return 0;
      }
      return causal_in(b, nd.in[0], sq, sk);
    }
    case OpId::logical_and:
      return causal_in(b, nd.in[0], sq, sk) || causal_in(b, nd.in[1], sq, sk) ? 1 : 0;
    default:
      return 0;
  }
}

// The chain that ends in the matmul m.
constexpr bool match_attention(const Builder& b, const std::vector<int>& readers, int m,
                               AttnChain& c) {
  if (fuse_op(b, m) != OpId::matmul || (b.node(m).flags & kFlagNoFuse)) return false;
  if (b.attr(m).i[0] != 0 || b.attr(m).i[1] != 0) return false;
  int w = b.node(m).in[0];
  c.v = b.node(m).in[1];
  c.salt = 0;  // without dropout the salt picks nothing (and equal layers stay equal)
  if (fuse_op(b, w) == OpId::dropout) {
    if (!chain_link(b, readers, w)) return false;
    c.p = b.attr(w).f[0];
    c.salt = b.attr(w).i[0];
    w = b.node(w).in[0];
  }
  if (fuse_op(b, w) != OpId::softmax || !chain_link(b, readers, w)) return false;
  if (b.attr(w).i[0] != b.shape(w).rank - 1) return false;
  if (b.node(w).nin == 2) c.keep = b.node(w).in[1];
  return match_scores(b, readers, b.node(w).in[0], c);
}

// Rewrites node m in place into the fused op (its inputs are all earlier nodes, so the order
// stays topological); the chain's other nodes stay, read by nothing (or by outputs only).
constexpr bool fuse_chain(Builder& b, int m, const AttnChain& c) {
  const ShapeV qs = b.shape(c.q), ks = b.shape(c.k), vs = b.shape(c.v);
  const DType t = b.dtype(c.q);
  const ShapeResult r = c.keep >= 0
                            ? rules::masked_attention(qs, t, ks, b.dtype(c.k), vs, b.dtype(c.v),
                                                      b.shape(c.keep), b.dtype(c.keep))
                            : rules::attention(qs, t, ks, b.dtype(c.k), vs, b.dtype(c.v));
  if (!r.ok() || !identical(r.shape, b.shape(m)) || b.dtype(m) != t) return false;
  if (c.bias >= 0 && b.dtype(c.bias) != t) return false;
  SdpaOptions o{.scale = c.scale, .dropout = c.p, .salt = c.salt};
  int keep = c.keep;
  if (keep >= 0) {
    const int ca = causal_in(b, keep, qs.dims[qs.rank - 2], ks.dims[ks.rank - 2]);
    if (ca > 0) o.mask = AttnMask::causal;
    if (ca == 2) keep = -1;  // the analytic mask says it all
  }
  Attrs a = sdpa_attrs(o, c.salt);
  int in[kMaxInputs] = {c.q, c.k, c.v, -1, -1, -1, -1, -1};
  int n = 3;
  if (c.bias >= 0) {
    a.i[4] = 2;
    a.i[7] = 1 + (keep >= 0 ? 16 : 0);
    a.ext = &attn::kFusedMods[qs.rank - 3][b.shape(c.bias).rank][keep >= 0 ? 1 : 0][c.subtract];
    in[n++] = c.bias;
  }
  if (keep >= 0) in[n++] = keep;
  b.attrs.push_back(a);
  Node& nd = b.nodes[static_cast<std::size_t>(m)];
  nd.op = code(OpId::attention);
  nd.nin = static_cast<std::uint8_t>(n);
  for (int k = 0; k < kMaxInputs; ++k) nd.in[k] = in[k];
  nd.attr = static_cast<std::int32_t>(b.attrs.size()) - 1;
  if (nd.leaf == "matmul") nd.leaf = "attention";
  return true;
}

}  // namespace detail

// Fuses every attention chain of b (see the top of this file); returns how many.
constexpr int fuse_attention(Builder& b) {
  if (!b.fuse_attention) return 0;
  std::vector<int> readers(static_cast<std::size_t>(b.size()), 0);
  for (const Node& nd : b.nodes)
    for (int k = 0; k < nd.nin; ++k) ++readers[static_cast<std::size_t>(nd.in[k])];
  int fused = 0;
  for (int m = 0; m < b.size(); ++m) {
    detail::AttnChain c;
    if (detail::match_attention(b, readers, m, c) && detail::fuse_chain(b, m, c)) ++fused;
  }
  return fused;
}

template <class F>
constexpr void graph_passes(Builder& b, PassTag<F>) {
  fuse_attention(b);
}

}  // namespace stag
