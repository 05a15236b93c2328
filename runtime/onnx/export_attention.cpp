// The ONNX exporters of rope, the fused attention (standard ops, or opset 23's Attention), the
// KV-cache write, cast and cumsum (exporter.hpp; the table that picks them is in export.cpp).
#include <stag/runtime/onnx/exporter.hpp>

#include <stag/ops/kernel.hpp>
#include <stag/ops/registry.hpp>

namespace stag::onnx_export {

// rope: cos/sin tables from positions (angles in double, as stag's kernels compute them), then
// the rotate-half rotation of (x[i], x[i + Dh/2]).
void ex_rope(Exporter& e, int n) {
  const ShapeV& s = e.shape(n);
  const int rank = s.rank;
  const std::int64_t dh = s[rank - 1].coef, half = dh / 2;
  const double theta = e.attr(n).f[0];
  const double sign = e.attr(n).i[1] != 0 ? -1.0 : 1.0;
  const DType t = e.dtype(n);
  std::string pos;
  bool per_row = false;
  if (e.nin(n) > 1) {
    pos = e.in(n, 1);
    per_row = e.in_shape(n, 1).rank == 2;
  } else {
    pos = e.range(s[rank - 2]);
  }
  pos = e.op("Cast", {pos}, "rope",
             [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", TensorProto::DOUBLE); });
  pos = e.op("Add", {pos, e.scalar(static_cast<double>(e.attr(n).i[0]), DType::f64)}, "rope");
  pos = e.op("Unsqueeze", {pos, e.init_i64({-1})}, "rope");
  // inv_freq[i] = theta^(-2i/Dh), signed for the inverse rotation.
  TensorProto inv;
  std::vector<double> f(static_cast<std::size_t>(half));
  for (std::int64_t i = 0; i < half; ++i)
    f[static_cast<std::size_t>(i)] =
        sign * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
  Array fa = Array::from_vector<double>({half}, f);
  const std::string freqs = e.initializer(e.fresh("rope_inv_freq"), fa);
  std::string angle = e.op("Mul", {pos, freqs}, "rope");  // [S, half] or [B, S, half]
  if (per_row && rank > 3) {
    std::vector<std::int64_t> axes;
    for (int a = 1; a < rank - 2; ++a) axes.push_back(a);
    angle = e.op("Unsqueeze", {angle, e.init_i64(axes)}, "rope");
  }
  auto table = [&](const char* fn) {
    return e.op("Cast", {e.op(fn, {angle}, "rope")}, "rope",
                [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(t)); });
  };
  const std::string c = table("Cos"), sn = table("Sin");
  const std::string& x = e.in(n, 0);
  auto part = [&](std::int64_t from, std::int64_t to) {
    return e.op("Slice", {x, e.init_i64({from}), e.init_i64({to}), e.init_i64({-1})}, "rope");
  };
  const std::string x1 = part(0, half), x2 = part(half, dh);
  auto mul = [&](const std::string& a, const std::string& b) {
    return e.op("Mul", {a, b}, "rope");
  };
  const std::string y1 = e.op("Sub", {mul(x1, c), mul(x2, sn)}, "rope");
  const std::string y2 = e.op("Add", {mul(x2, c), mul(x1, sn)}, "rope");
  e.set(n, "Concat", {y1, y2}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", -1); });
}

// The fused attention as standard ops: softmax(q k^T * scale (+ score), masked) v.
void ex_attention(Exporter& e, int n) {
  const Attrs& at = e.attr(n);
  const ShapeV &qs = e.in_shape(n, 0), &ks = e.in_shape(n, 1), &vs = e.in_shape(n, 2);
  const int rank = qs.rank;
  const DType t = e.dtype(n);
  const std::int64_t dk = qs[rank - 1].coef;
  // OnnxOptions::attention_op: ONNX's Attention op (opset 23), for [B, H, S, D] operands without
  // a built-in score change; the rest keeps the standard-op pattern.
  const bool use_op = e.attention_op() && rank == 4 && at.i[6] == 0 && t == DType::f32;
  std::string k = e.in(n, 1), v = e.in(n, 2);
  const DimV& sq = qs[rank - 2];
  const DimV& sk = ks[rank - 2];
  std::int64_t heads = 1;
  if (rank == 4) {
    heads = qs[1].coef;
    const std::int64_t kvh = ks[1].coef;
    if (heads != kvh && !use_op) {  // GQA: each key/value head serves H / KVH heads
      auto repeat = [&](const std::string& x, const ShapeV& xs) {
        ShapeV s5;
        s5.rank = 5;
        s5[0] = xs[0];
        s5[1] = xs[1];
        s5[2] = static_dim(heads / kvh);
        s5[3] = xs[2];
        s5[4] = xs[3];
        ShapeV s4 = xs;
        s4[1] = static_dim(heads);
        const std::string u = e.op("Unsqueeze", {x, e.init_i64({2})}, "gqa");
        const std::string ex = e.op("Expand", {u, e.shape_tensor(s5)}, "gqa");
        return e.op("Reshape", {ex, e.shape_tensor(s4)}, "gqa");
      };
      k = repeat(k, ks);
      v = repeat(v, vs);
    }
  }
  const double scale = at.i[3] ? 1.0 / std::sqrt(static_cast<double>(dk)) : at.f[0];
  std::string s;
  if (!use_op) {
    s = e.op("MatMul", {e.in(n, 0), e.transpose_last2(k, rank)}, "scores");
    s = e.op("Mul", {s, e.scalar(scale, t)}, "scores");
  }
  const bool cache = at.i[4] == 1;
  // Query i's key position: i + Sk - Sq, or i + pos[b] over a cache. int64 [Sq, 1] or
  // [B, 1, Sq, 1] (one head: [B, Sq, 1]).
  std::string hi;
  std::string active;  // cache: [B, 1, 1, 1] bool, false for an inactive row (pos = -1)
  auto query_pos = [&]() {
    if (!hi.empty()) return hi;
    const std::string rows = e.op("Unsqueeze", {e.range(sq), e.init_i64({1})}, "attn");
    if (!cache) {
      hi = e.op("Add", {rows, e.op("Sub", {e.dim0(sk), e.dim0(sq)}, "attn")}, "attn");
    } else {
      std::vector<std::int64_t> shp = {-1};
      for (int a = 1; a < rank; ++a) shp.push_back(1);
      const std::string pos =
          e.op("Reshape",
               {e.op("Cast", {e.in(n, 3)}, "attn",
                     [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", TensorProto::INT64); }),
                e.init_i64(shp)},
               "attn");
      hi = e.op("Add", {rows, pos}, "attn");
      active = e.op("GreaterOrEqual", {pos, e.init_i64({0}, true)}, "attn");
    }
    return hi;
  };
  if (at.i[6] == 1) {  // ALiBi: - m_h (query position - key position), m_h = 2^(-8 (h + 1) / H)
    std::vector<double> slopes(static_cast<std::size_t>(heads));
    for (std::int64_t h = 0; h < heads; ++h)
      slopes[static_cast<std::size_t>(h)] =
          std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(heads));
    const std::string sl = e.initializer(e.fresh("alibi_slopes"),
                                         Array::from_vector<double>({heads, 1, 1}, slopes).to(t));
    const std::string dist =
        e.op("Cast", {e.op("Sub", {query_pos(), e.range(sk)}, "alibi")}, "alibi",
             [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(t)); });
    s = e.op("Sub", {s, e.op("Mul", {sl, dist}, "alibi")}, "alibi");
  } else if (at.i[6] == 2) {  // soft-capping: c tanh(s / c)
    const std::string c = e.scalar(at.f[2], t);
    s = e.op("Mul", {e.op("Tanh", {e.op("Div", {s, c}, "softcap")}, "softcap"), c}, "softcap");
  }
  std::string keep;
  int keep_rank = 0;  // the combined mask's rank (masks broadcast from the right)
  auto and_keep = [&](const std::string& m, int r) {
    keep = keep.empty() ? m : e.op("And", {keep, m}, "keep");
    keep_rank = std::max(keep_rank, r);
  };
  const auto kind = static_cast<AttnMask>(at.i[0]);
  if (kind != AttnMask::none) {
    const std::string cols = e.range(sk);
    const int hr = cache ? rank : 2;  // query_pos: [Sq, 1], or [B, 1.., Sq, 1] over a cache
    and_keep(e.op("LessOrEqual", {cols, query_pos()}, "causal"), hr);
    if (kind == AttnMask::sliding_window)
      and_keep(
          e.op("Greater", {cols, e.op("Sub", {query_pos(), e.init_i64({at.i[1]}, true)}, "window")},
               "window"),
          hr);
  }
  if (cache) {
    query_pos();
    and_keep(active, rank);
  } else if (at.i[4] == 0 && e.nin(n) > 3) {
    and_keep(e.in(n, 3), e.in_shape(n, 3).rank);
  }
  if (use_op) {
    std::vector<std::string> ins = {e.in(n, 0), k, v};
    std::string mask;
    if (!keep.empty()) {
      // ONNX Runtime wants the mask's query axis whole: [B|1, H|1, Sq, Sk].
      const int kr = keep_rank;
      std::string k4 = keep;
      if (kr < 4) {
        std::vector<std::int64_t> axes;
        for (int a = 0; a < 4 - kr; ++a) axes.push_back(a);
        k4 = e.op("Unsqueeze", {keep, e.init_i64(axes)}, "mask");
      }
      const std::string lead = e.op("Shape", {k4}, "mask", [&](onnx::NodeProto& nd) {
        e.attr_i(nd, "start", 0);
        e.attr_i(nd, "end", 2);
      });
      const std::string shape = e.op("Concat", {lead, e.dim1(sq), e.dim1(sk)}, "mask",
                                     [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", 0); });
      mask = e.op("Expand", {k4, shape}, "mask");
      ins.push_back(mask);
    }
    const std::string o = e.op("Attention", ins, "attention",
                               [&](onnx::NodeProto& nd) { e.attr_f(nd, "scale", scale); });
    if (mask.empty()) return e.set(n, "Identity", {o});
    // A query that keeps no key gives zeros, as stag's kernels do (a softmax over nothing).
    const std::string any =
        e.op("Greater",
             {e.reduce("ReduceMax",
                       e.op("Cast", {mask}, "mask",
                            [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", TensorProto::FLOAT); }),
                       {-1}, true, "mask"),
              e.scalar(0.0, DType::f32)},
             "mask");
    return e.set(n, "Where", {any, o, e.scalar(0.0, t)});
  }
  // A causal mask alone over Sq <= Sk (self-attention: the same dim) keeps key 0 for every
  // query: no row is fully masked, so the softmax needs no zeroing of such rows afterwards.
  const bool rows_keep_a_key =
      kind == AttnMask::causal && !cache && !(at.i[4] == 0 && e.nin(n) > 3) && sq == sk;
  if (!keep.empty() && rows_keep_a_key) {
    const std::string filled = e.op("Where", {keep, s, e.lowest(t)}, "probs");
    const std::string p =
        e.op("Softmax", {filled}, "probs", [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", -1); });
    return e.set(n, "MatMul", {p, v});
  }
  const std::string p = keep.empty() ? e.op("Softmax", {s}, "probs",
                                            [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", -1); })
                                     : e.masked_softmax(s, keep, t, -1, false, "probs");
  e.set(n, "MatMul", {p, v});
}

// cache_write without side effects: the cache is an input and the updated cache an output
// (present.<name>). Key slot l of row b takes row l - pos[b] of the new rows when that is in
// [0, T) and pos[b] >= 0, and keeps the cache's value otherwise.
void ex_cache_write(Exporter& e, int n) {
  const ShapeV& cs = e.in_shape(n, 0);
  const ShapeV& rs = e.in_shape(n, 1);
  const int rank = cs.rank;
  const DimV& len = cs[rank - 2];
  const DimV& t = rs[rank - 2];
  const std::string pos64 = e.op("Cast", {e.in(n, 2)}, "cache", [&](onnx::NodeProto& nd) {
    e.attr_i(nd, "to", TensorProto::INT64);
  });
  std::vector<std::int64_t> pshape(static_cast<std::size_t>(rank), 1);
  pshape[0] = -1;  // [B] per row, or one position for every row
  const std::string pos = e.op("Reshape", {pos64, e.init_i64(pshape)}, "cache");
  std::vector<std::int64_t> lshape(static_cast<std::size_t>(rank), 1);
  lshape[static_cast<std::size_t>(rank - 2)] = -1;
  const std::string slots = e.op("Reshape", {e.range(len), e.init_i64(lshape)}, "cache");
  const std::string rel = e.op("Sub", {slots, pos}, "cache");  // [B|1, 1.., L, 1]
  const std::string t1 = e.op("Sub", {e.dim0(t), e.init_i64({1}, true)}, "cache");
  const std::string zero = e.init_i64({0}, true);
  const std::string inside = e.op(
      "And",
      {e.op("And",
            {e.op("GreaterOrEqual", {rel, zero}, "cache"), e.op("LessOrEqual", {rel, t1}, "cache")},
            "cache"),
       e.op("GreaterOrEqual", {pos, zero}, "cache")},
      "cache");
  const std::string idx = e.op("Max", {e.op("Min", {rel, t1}, "cache"), zero}, "cache");
  const std::string full = e.op("Expand", {idx, e.shape_tensor(cs)}, "cache");
  const std::string rows = e.op("GatherElements", {e.in(n, 1), full}, "cache",
                                [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", rank - 2); });
  e.set(n, "Where", {inside, rows, e.in(n, 0)});
}

void ex_cast(Exporter& e, int n) {
  const DType from = e.dtype(e.g.node(n).in[0]), to = e.dtype(n);
  const std::string& x = e.in(n, 0);
  auto cast = [&](const std::string& v, DType t) {
    return e.op("Cast", {v}, "cast",
                [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(t)); });
  };
  if (from == to) return e.set(n, "Identity", {x});
  if (to == DType::boolean)  // nonzero (NaN too) is true
    return e.set(n, "Not", {e.op("Equal", {x, e.scalar(0.0, from)}, "cast")});
  const bool int_to = to == DType::i32 || to == DType::i64;
  if (int_to && is_float(from)) {  // truncate toward zero, saturate, NaN -> 0
    const double top = to == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
    const double below = from == DType::f32
                             ? static_cast<double>(std::nextafter(static_cast<float>(top), 0.f))
                             : std::nextafter(top, 0.0);
    const std::string clean =
        e.op("Where", {e.op("IsNaN", {x}, "cast"), e.scalar(0.0, from), x}, "cast");
    const std::string clipped = e.op(
        "Where", {e.op("Less", {clean, e.scalar(-top, from)}, "cast"), e.scalar(-top, from), clean},
        "cast");
    const std::string low = e.op(
        "Where",
        {e.op("Greater", {clipped, e.scalar(below, from)}, "cast"), e.scalar(below, from), clipped},
        "cast");
    const std::string r = cast(low, to);
    const std::string max = to == DType::i32
                                ? e.scalar(2147483647.0, to)
                                : e.init_i64({std::numeric_limits<std::int64_t>::max()}, true);
    return e.set(n, "Where",
                 {e.op("GreaterOrEqual", {clean, e.scalar(top, from)}, "cast"), max, r});
  }
  if (from == DType::i64 && to == DType::i32) {  // saturates
    const std::string lo = e.init_i64({std::numeric_limits<std::int32_t>::min()}, true);
    const std::string hi = e.init_i64({std::numeric_limits<std::int32_t>::max()}, true);
    const std::string c1 = e.op("Where", {e.op("Less", {x, lo}, "cast"), lo, x}, "cast");
    const std::string c2 = e.op("Where", {e.op("Greater", {c1, hi}, "cast"), hi, c1}, "cast");
    return e.set(n, "Cast", {c2}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(to)); });
  }
  e.set(n, "Cast", {x}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(to)); });
}

void ex_cumsum(Exporter& e, int n) {
  e.set(n, "CumSum", {e.in(n, 0), e.init_i64({e.attr(n).i[0]}, true)},
        [&](onnx::NodeProto& nd) { e.attr_i(nd, "reverse", e.attr(n).i[1] != 0); });
}

}  // namespace stag::onnx_export
