// Dim arithmetic for model code: read a dim of a Shape type, and split a dim into heads
// (static: it must divide; symbolic: heads must be one of its factors), at compile time.
#pragma once

#include <tuple>

#include <stag/graph/report.hpp>
#include <stag/graph/shape.hpp>

namespace stag {

// Named symbols the bundled models use, and the named static dims the layers give their axes
// (so that shapes read [batch, heads, seq, head_dim] in errors, descriptions and pictures).
// Each has a type of its own name, which both g++ and clang print in errors.
namespace dims {
STAG_SYMBOL(batch);
STAG_SYMBOL(seq);
STAG_SYMBOL(src_seq);
STAG_SYMBOL(tgt_seq);
STAG_SYMBOL(masked);  // positions a masked-LM batch predicts

template <std::int64_t V>
struct heads : Named<"heads", V> {};
template <std::int64_t V>
struct head_dim : Named<"head_dim", V> {};
template <std::int64_t V>
struct kv_heads : Named<"kv_heads", V> {};
template <std::int64_t V>
struct group : Named<"group", V> {};  // query heads per key/value head (grouped-query attention)
template <std::int64_t V>
struct d_ff : Named<"d_ff", V> {};
}  // namespace dims

// D as a named dim: a plain int N becomes Tag<N> (`named_as<dims::heads, 4>` is heads = 4); a
// dim that already has a name, or a symbol, stays as it is.
template <template <std::int64_t> class Tag, auto D>
inline constexpr auto named_as = [] {
  if constexpr (StaticDim<decltype(D)>)
    return Tag<D>{};
  else
    return D;
}();

// The dim at `Axis` (negative counts from the end) of a Shape type, as a dim value.
template <class S, int Axis>
inline constexpr auto dim_at = []<auto... Ds>(Shape<Ds...>) {
  constexpr int n = static_cast<int>(sizeof...(Ds));
  STAG_SHAPE_CHECK(Axis >= -n && Axis < n, "stag::dim_at: axis out of range for the shape", S,
                   void);
  return std::get<(Axis < 0 ? Axis + n : Axis)>(std::tuple{Ds...});
}
(S{});

template <class S>
inline constexpr auto last_dim = dim_at<S, -1>;

namespace detail {
struct Quotient {
  DimV dim;
  bool ok;
};
// a / b. Names: when b's names (or b's size, for a plain b) lead a's, the quotient keeps the
// rest of a's names (heads * head_dim / heads = head_dim); otherwise it is plain. The factors
// left keep a's order.
constexpr Quotient dim_divide(const DimV& a, const DimV& b) {
  if (b.coef <= 0 || a.coef % b.coef != 0) return {{}, false};
  int lead = -1;
  if (b.nname > 0 && b.nname <= a.nname) {
    lead = b.nname;
    for (int i = 0; i < b.nname; ++i)
      if (a.name[i] != b.name[i]) lead = -1;
  } else if (b.nname == 0 && a.nname > 0 && a.name_val[0] == b.coef) {
    lead = 1;
  }
  bool used[kMaxDimSyms] = {};
  for (int j = 0; j < b.nsym; ++j) {
    bool found = false;
    for (int i = 0; i < a.nsym && !found; ++i)
      if (!used[i] && a.sym[i] == b.sym[j]) used[i] = found = true;
    if (!found) return {{}, false};
  }
  DimV q;
  q.coef = a.coef / b.coef;
  a.for_each_factor([&](bool is_name, int i) {
    if (!is_name && !used[i])
      q.push_sym(a.sym[i]);
    else if (is_name && lead >= 0 && i >= lead)
      q.push_name(a.name[i], a.name_val[i]);
  });
  return {q, true};
}
}  // namespace detail

// D / H as a dim value: `head_dim = dim_quotient<d_model, heads>`. Layers check that their
// dims divide (with a message naming the layer) before they ask for a quotient.
template <auto D, auto H>
inline constexpr bool dim_divides = detail::dim_divide(dim_value<D>(), dim_value<H>()).ok;

template <auto D, auto H>
inline constexpr auto dim_quotient = [] {
  constexpr detail::Quotient q = detail::dim_divide(dim_value<D>(), dim_value<H>());
  STAG_SHAPE_CHECK(q.ok,
                   "stag::dim_quotient: the dim is not a multiple of the divisor (dim, divisor)",
                   Shape<D>, Shape<H>);
  if constexpr (q.ok) {
    using L = typename detail::concat_syms<typename detail::syms_of_dim<D>::type>::type;
    return detail::dim_from_value<q.dim, L>();
  } else {
    return 1;
  }
}();

// Constant-expression math for attributes computed while graphs are built (the <cmath>
// functions are not constexpr in C++20).
namespace cx {
constexpr double sqrt(double x) {
  if (x <= 0) return 0;
  double r = x > 1 ? x : 1;
  for (int i = 0; i < 64; ++i) r = 0.5 * (r + x / r);
  return r;
}
constexpr double log(double x) {  // x > 0
  int k = 0;
  while (x > 2) {
    x /= 2.718281828459045;
    ++k;
  }
  while (x < 0.5) {
    x *= 2.718281828459045;
    --k;
  }
  const double y = (x - 1) / (x + 1), y2 = y * y;  // log x = 2 atanh((x-1)/(x+1))
  double term = y, sum = 0;
  for (int n = 1; n < 200; n += 2) {
    sum += term / n;
    term *= y2;
  }
  return 2 * sum + k;
}
}  // namespace cx

}  // namespace stag
