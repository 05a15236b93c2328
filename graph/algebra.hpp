// The shape algebra every op rule is made of: broadcasting, permutes, views, squeeze/unsqueeze,
// concat, expand, slice and reductions, on value-level shapes. Each function returns a
// ShapeResult whose error code the typed front-end turns into a static_assert message.
#pragma once

#include <stag/graph/dims.hpp>
#include <stag/graph/dtype.hpp>

namespace stag {

enum class ShapeErr : std::uint8_t {
  ok,
  rank,             // wrong rank for the op
  broadcast,        // shapes not broadcastable (numpy rules, symbols equal by name)
  inner_dim,        // matmul: K of A differs from K of B
  batch_dims,       // matmul: batch dims not broadcastable
  axis,             // an axis is out of range
  permutation,      // permute: not a permutation
  numel,            // view: element counts differ
  symbols,          // view: the symbolic factors differ (a symbol dropped or added)
  order,            // view: an axis would move past another (transpose first)
  regroup,          // view: several axes become several others (neither a split nor a merge)
  dim_names,        // view: a split or merge does not follow the named factors in order
  factor_order,     // view: a split or merge reorders a product's symbolic factors
  not_one,          // squeeze: the dim is not 1
  odd_dim,          // a dim that must be even is odd (rope's head dim)
  seq_axis,         // rope: the axis it rotates along is not a sequence (heads, merged tokens)
  expand,           // expand: a dim is neither equal nor 1
  slice_range,      // slice: bounds outside the dim or empty
  concat_dims,      // concat: non-axis dims differ
  concat_symbolic,  // concat: axis dims are different symbols
  dtype,            // an input has a dtype the op does not accept
  mask_rank,        // mask rank differs from the input's rank
  mask_dtype,       // mask is not bool
  mask_broadcast,   // mask does not broadcast to the input
  norm_dims,        // norm: weight shape is not the trailing dims of the input
  labels,           // loss: labels shape does not match the logits' leading dims
  too_many_syms,    // a dim would be a product of more than 3 symbols
  arity,            // wrong number of inputs
  shape_mismatch,   // two operands must have equal shapes (norm bias vs weight, loss operands)
  index_dtype,      // ids or labels are not i32/i64
};

constexpr std::string_view shape_err_text(ShapeErr e) {
  switch (e) {
    case ShapeErr::ok:
      return "ok";
    case ShapeErr::rank:
      return "wrong rank";
    case ShapeErr::broadcast:
      return "shapes are not broadcastable";
    case ShapeErr::inner_dim:
      return "inner dimensions differ";
    case ShapeErr::batch_dims:
      return "batch dimensions are not broadcastable";
    case ShapeErr::axis:
      return "axis out of range";
    case ShapeErr::permutation:
      return "not a permutation of the axes";
    case ShapeErr::numel:
      return "element counts differ";
    case ShapeErr::symbols:
      return "symbolic dims differ";
    case ShapeErr::order:
      return "an axis moves past another";
    case ShapeErr::regroup:
      return "axes regrouped (neither a split nor a merge)";
    case ShapeErr::dim_names:
      return "named factors out of order";
    case ShapeErr::factor_order:
      return "symbolic factors out of order";
    case ShapeErr::not_one:
      return "dim is not 1";
    case ShapeErr::odd_dim:
      return "dim must be even";
    case ShapeErr::seq_axis:
      return "the axis is not the sequence";
    case ShapeErr::expand:
      return "cannot expand";
    case ShapeErr::slice_range:
      return "slice out of range";
    case ShapeErr::concat_dims:
      return "non-axis dims differ";
    case ShapeErr::concat_symbolic:
      return "axis dims are different symbols";
    case ShapeErr::dtype:
      return "unsupported dtype";
    case ShapeErr::mask_rank:
      return "mask rank differs";
    case ShapeErr::mask_dtype:
      return "mask is not bool";
    case ShapeErr::mask_broadcast:
      return "mask does not broadcast";
    case ShapeErr::norm_dims:
      return "normalized dims are not the trailing dims";
    case ShapeErr::labels:
      return "labels do not match the logits";
    case ShapeErr::too_many_syms:
      return "too many symbols in one dim";
    case ShapeErr::arity:
      return "wrong number of inputs";
    case ShapeErr::shape_mismatch:
      return "shapes must be equal";
    case ShapeErr::index_dtype:
      return "ids or labels must be i32 or i64";
  }
  return "?";
}

struct ShapeResult {
  ShapeV shape{};
  ShapeErr err = ShapeErr::ok;
  DType dtype = DType::f32;
  constexpr bool ok() const { return err == ShapeErr::ok; }
};

constexpr ShapeResult shape_ok(const ShapeV& s, DType t) {
  return ShapeResult{s, ShapeErr::ok, t};
}
constexpr ShapeResult shape_fail(ShapeErr e) {
  return ShapeResult{ShapeV{}, e, DType::f32};
}

namespace algebra {

constexpr bool is_one(const DimV& d) {
  return d.is_static() && d.coef == 1;
}

// numpy broadcasting, aligned from the right; symbols are equal only when their names are.
constexpr ShapeResult broadcast(const ShapeV& a, const ShapeV& b, DType t = DType::f32) {
  ShapeV out;
  out.rank = a.rank > b.rank ? a.rank : b.rank;
  for (int k = 0; k < out.rank; ++k) {
    const int ia = a.rank - 1 - k, ib = b.rank - 1 - k, io = out.rank - 1 - k;
    if (ia < 0) {
      out.dims[io] = b.dims[ib];
    } else if (ib < 0) {
      out.dims[io] = a.dims[ia];
    } else if (a.dims[ia] == b.dims[ib]) {
      out.dims[io] = more_named(a.dims[ia], b.dims[ib]);
    } else if (is_one(b.dims[ib])) {
      out.dims[io] = a.dims[ia];
    } else if (is_one(a.dims[ia])) {
      out.dims[io] = b.dims[ib];
    } else {
      return shape_fail(ShapeErr::broadcast);
    }
  }
  return shape_ok(out, t);
}

// True when `from` broadcasts to `to` without changing `to` (used for masks and expand).
constexpr bool broadcasts_to(const ShapeV& from, const ShapeV& to) {
  if (from.rank > to.rank) return false;
  for (int k = 0; k < from.rank; ++k) {
    const DimV& f = from.dims[from.rank - 1 - k];
    const DimV& t = to.dims[to.rank - 1 - k];
    if (!(f == t) && !is_one(f)) return false;
  }
  return true;
}

constexpr ShapeResult permute(const ShapeV& a, const int* perm, int n, DType t = DType::f32) {
  if (n != a.rank) return shape_fail(ShapeErr::permutation);
  bool seen[kMaxRank] = {};
  ShapeV out;
  out.rank = a.rank;
  for (int i = 0; i < n; ++i) {
    const int p = normalize_axis(perm[i], a.rank);
    if (p < 0) return shape_fail(ShapeErr::axis);
    if (seen[p]) return shape_fail(ShapeErr::permutation);
    seen[p] = true;
    out.dims[i] = a.dims[p];
  }
  return shape_ok(out, t);
}

constexpr ShapeResult transpose(const ShapeV& a, int i, int j, DType t = DType::f32) {
  const int ni = normalize_axis(i, a.rank), nj = normalize_axis(j, a.rank);
  if (ni < 0 || nj < 0) return shape_fail(ShapeErr::axis);
  ShapeV out = a;
  out.dims[ni] = a.dims[nj];
  out.dims[nj] = a.dims[ni];
  return shape_ok(out, t);
}

namespace detail {
// x divides y: its coefficient divides y's and its symbols are a sub-multiset of y's.
constexpr bool divides(const Monomial& x, const Monomial& y) {
  if (x.coef == 0 || y.coef % x.coef != 0) return false;
  int j = 0;
  for (int i = 0; i < x.nsym; ++i) {
    while (j < y.nsym && y.sym[j] < x.sym[i]) ++j;
    if (j == y.nsym || y.sym[j] != x.sym[i]) return false;
    ++j;
  }
  return true;
}

// The static factors of a run of dims, in order: named ones (id != 0) and the plain rest of
// each dim (id 0). Named factors of size 1 carry no data and are left out.
struct Factors {
  SymId id[kMaxRank * (kMaxDimNames + 1)] = {};
  std::int64_t val[kMaxRank * (kMaxDimNames + 1)] = {};
  int n = 0;
  constexpr void add(const DimV& d) {
    for (int k = 0; k < d.nname; ++k)
      if (d.name_val[k] != 1) {
        id[n] = d.name[k];
        val[n++] = d.name_val[k];
      }
    if (const std::int64_t p = d.plain_coef(); p != 1) {
      id[n] = 0;
      val[n++] = p;
    }
  }
};

// Two runs of static factors describe the same layout: named factors meet the same name in
// the same place, and a plain factor stands for any run of factors on the other side whose
// sizes multiply to it (`64` matches `heads * head_dim`; `16, 4` does not match it).
constexpr bool factors_match(const Factors& a, const Factors& b) {
  int i = 0, j = 0;
  std::int64_t ra = a.n ? a.val[0] : 1, rb = b.n ? b.val[0] : 1;
  while (i < a.n && j < b.n) {
    if (a.id[i] != 0 && b.id[j] != 0) {
      if (a.id[i] != b.id[j] || ra != rb) return false;
      ra = rb = 0;
    } else if (ra == rb) {
      ra = rb = 0;
    } else if (a.id[i] == 0 && rb != 0 && ra % rb == 0) {
      ra /= rb;
      rb = 0;
    } else if (b.id[j] == 0 && ra != 0 && rb % ra == 0) {
      rb /= ra;
      ra = 0;
    } else {
      return false;
    }
    if (ra == 0 && ++i < a.n) ra = a.val[i];
    if (rb == 0 && ++j < b.n) rb = b.val[j];
  }
  return true;
}

// The symbolic and named factors of a run of dims, in layout order (outermost first).
struct FactorSeq {
  SymId id[kMaxRank * (kMaxDimSyms + kMaxDimNames)] = {};
  int n = 0;
  constexpr void add(const DimV& d) {
    d.for_each_factor([&](bool is_name, int k) {
      if (!is_name || d.name_val[k] != 1) id[n++] = is_name ? d.name[k] : d.sym[k];
    });
  }
  constexpr bool has(SymId x) const {
    for (int i = 0; i < n; ++i)
      if (id[i] == x) return true;
    return false;
  }
};

// The factors that both sides name come in the same order: `batch * seq` splits into
// [batch, seq], never [seq, batch]. (A name on one side only is an anonymous size on the
// other, which factors_match checks.)
constexpr bool factor_order_matches(const FactorSeq& a, const FactorSeq& b) {
  int i = 0, j = 0;
  for (;;) {
    while (i < a.n && !b.has(a.id[i])) ++i;
    while (j < b.n && !a.has(b.id[j])) ++j;
    if (i == a.n || j == b.n) return i == a.n && j == b.n;
    if (a.id[i++] != b.id[j++]) return false;
  }
}
}  // namespace detail

// view/reshape: the element counts must be equal as monomials (static factors and the multiset
// of symbols), and the view must be a sequence of splits (one axis into adjacent axes) and
// merges (adjacent axes into one), in order. Axes of size 1 may be added or dropped anywhere.
// A view never moves an axis past another ([B, H, S, Dh] -> [B, S, H*Dh] needs transpose<1, 2>
// first), and a split or merge follows a product's factors in order: heads * head_dim does not
// split into [head_dim, heads], nor batch * seq into [seq, batch].
constexpr ShapeResult reshape(const ShapeV& a, const ShapeV& target, DType t = DType::f32) {
  const Monomial ma = a.numel(), mb = target.numel();
  bool same_syms = ma.nsym == mb.nsym;
  for (int i = 0; same_syms && i < ma.nsym; ++i) same_syms = ma.sym[i] == mb.sym[i];
  if (!same_syms) return shape_fail(ShapeErr::symbols);
  if (ma.coef != mb.coef) return shape_fail(ShapeErr::numel);
  int i = 0, j = 0;
  for (;;) {
    while (i < a.rank && is_one(a.dims[i])) ++i;
    while (j < target.rank && is_one(target.dims[j])) ++j;
    if (i == a.rank || j == target.rank) break;
    const int i0 = i, j0 = j;
    Monomial ga, gb;
    ga.mul(a.dims[i++]);
    gb.mul(target.dims[j++]);
    int na = 1, nb = 1;
    while (!(ga == gb)) {
      if (detail::divides(gb, ga) && j < target.rank) {
        nb += !is_one(target.dims[j]);
        gb.mul(target.dims[j++]);
      } else if (detail::divides(ga, gb) && i < a.rank) {
        na += !is_one(a.dims[i]);
        ga.mul(a.dims[i++]);
      } else {
        return shape_fail(ShapeErr::order);
      }
    }
    if (na > 1 && nb > 1) return shape_fail(ShapeErr::regroup);
    detail::Factors fa, fb;
    for (int k = i0; k < i; ++k) fa.add(a.dims[k]);
    for (int k = j0; k < j; ++k) fb.add(target.dims[k]);
    if (!detail::factors_match(fa, fb)) return shape_fail(ShapeErr::dim_names);
    detail::FactorSeq sa, sb;
    for (int k = i0; k < i; ++k) sa.add(a.dims[k]);
    for (int k = j0; k < j; ++k) sb.add(target.dims[k]);
    if (!detail::factor_order_matches(sa, sb)) return shape_fail(ShapeErr::factor_order);
  }
  return shape_ok(target, t);
}

// What to do when a view fails: the transpose of the input (kind 1) or of the result (kind 2)
// that makes it a valid split or merge; kind 0 when no single transpose does.
struct ViewHint {
  int kind = 0, i = 0, j = 0;
};
constexpr ViewHint view_hint(const ShapeV& a, const ShapeV& target) {
  for (int p = 0; p < a.rank; ++p)
    for (int q = p + 1; q < a.rank; ++q) {
      ShapeV s = a;
      s.dims[p] = a.dims[q];
      s.dims[q] = a.dims[p];
      if (reshape(s, target).ok()) return {1, p, q};
    }
  for (int p = 0; p < target.rank; ++p)
    for (int q = p + 1; q < target.rank; ++q) {
      ShapeV s = target;
      s.dims[p] = target.dims[q];
      s.dims[q] = target.dims[p];
      if (reshape(a, s).ok()) return {2, p, q};
    }
  return {};
}

constexpr ShapeResult unsqueeze(const ShapeV& a, int axis, DType t = DType::f32) {
  if (a.rank >= kMaxRank) return shape_fail(ShapeErr::rank);
  const int ax = normalize_axis(axis, a.rank + 1);
  if (ax < 0) return shape_fail(ShapeErr::axis);
  ShapeV out;
  out.rank = static_cast<std::uint8_t>(a.rank + 1);
  for (int i = 0, j = 0; i < out.rank; ++i) out.dims[i] = i == ax ? static_dim(1) : a.dims[j++];
  return shape_ok(out, t);
}

constexpr ShapeResult squeeze(const ShapeV& a, int axis, DType t = DType::f32) {
  const int ax = normalize_axis(axis, a.rank);
  if (ax < 0) return shape_fail(ShapeErr::axis);
  if (!is_one(a.dims[ax])) return shape_fail(ShapeErr::not_one);
  ShapeV out;
  out.rank = static_cast<std::uint8_t>(a.rank - 1);
  for (int i = 0, j = 0; i < a.rank; ++i)
    if (i != ax) out.dims[j++] = a.dims[i];
  return shape_ok(out, t);
}

// expand (broadcast_to): each dim of `a` equals the target's or is 1; leading dims may be added.
constexpr ShapeResult expand(const ShapeV& a, const ShapeV& target, DType t = DType::f32) {
  if (a.rank > target.rank) return shape_fail(ShapeErr::rank);
  if (!broadcasts_to(a, target)) return shape_fail(ShapeErr::expand);
  return shape_ok(target, t);
}

// slice [start, end) of a dim. On a static dim the bounds are checked here; on a symbolic dim
// they are checked when the symbol is bound. The result's length is end - start (static).
constexpr ShapeResult slice(const ShapeV& a, int axis, std::int64_t start, std::int64_t end,
                            DType t = DType::f32) {
  const int ax = normalize_axis(axis, a.rank);
  if (ax < 0) return shape_fail(ShapeErr::axis);
  if (start < 0 || end <= start) return shape_fail(ShapeErr::slice_range);
  if (a.dims[ax].is_static() && end > a.dims[ax].coef) return shape_fail(ShapeErr::slice_range);
  ShapeV out = a;
  out.dims[ax] = static_dim(end - start);
  return shape_ok(out, t);
}

// concat along `axis`: other dims equal; the axis dims add up (static + static, or k*d + m*d).
constexpr ShapeResult concat(const ShapeV* parts, int n, int axis, DType t = DType::f32) {
  if (n < 1) return shape_fail(ShapeErr::arity);
  const ShapeV& first = parts[0];
  const int ax = normalize_axis(axis, first.rank);
  if (ax < 0) return shape_fail(ShapeErr::axis);
  ShapeV out = first;
  for (int p = 1; p < n; ++p) {
    const ShapeV& s = parts[p];
    if (s.rank != first.rank) return shape_fail(ShapeErr::rank);
    for (int i = 0; i < s.rank; ++i)
      if (i != ax && !(s.dims[i] == first.dims[i])) return shape_fail(ShapeErr::concat_dims);
    DimV& acc = out.dims[ax];
    const DimV& d = s.dims[ax];
    bool same_syms = acc.nsym == d.nsym;
    for (int k = 0; same_syms && k < d.nsym; ++k) same_syms = acc.sym[k] == d.sym[k];
    if (!same_syms) return shape_fail(ShapeErr::concat_symbolic);
    acc.coef += d.coef;
    acc.nname = acc.names_at = 0;  // the sum of two named dims is a plain one
  }
  return shape_ok(out, t);
}

// Reduction over the axes in `mask` (bit k: axis k), keeping them as 1s when keepdim.
constexpr ShapeResult reduce(const ShapeV& a, std::uint32_t mask, bool keepdim,
                             DType t = DType::f32) {
  if (a.rank < 32 && (mask >> a.rank) != 0) return shape_fail(ShapeErr::axis);
  ShapeV out;
  for (int i = 0; i < a.rank; ++i) {
    if (mask & (1u << i)) {
      if (keepdim) out.dims[out.rank++] = static_dim(1);
    } else {
      out.dims[out.rank++] = a.dims[i];
    }
  }
  return shape_ok(out, t);
}

// Builds the axis mask of a list of (possibly negative) axes; returns ~0u when one is invalid.
constexpr std::uint32_t axis_mask(const int* axes, int n, int rank) {
  std::uint32_t m = 0;
  for (int i = 0; i < n; ++i) {
    const int ax = normalize_axis(axes[i], rank);
    if (ax < 0) return ~0u;
    m |= 1u << ax;
  }
  return m;
}

}  // namespace algebra
}  // namespace stag
