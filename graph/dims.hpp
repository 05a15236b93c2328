// Dimensions and shapes as values: DimV (coef * an ordered product of symbols and named static
// factors such as batch * seq or heads * head_dim) and ShapeV.
// Every shape rule in ops/ is a constexpr function over these, evaluated at compile time for
// typed handles (graph/shape.hpp) and again by the builder and the autodiff pass.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string_view>

#include <stag/graph/fixed_string.hpp>

namespace stag {

inline constexpr int kMaxRank = 6;
inline constexpr int kMaxDimSyms = 3;
inline constexpr int kMaxDimNames = 3;

using SymId = std::uint32_t;

// One dimension: coef * the product of its factors. A static dim has nsym == 0. Its symbolic
// factors (sym[]) and named static factors (name[], with their values; `heads * head_dim`) are
// kept in the order they were written, outermost first: names_at has bit k set when the k-th
// factor is a name. Order matters: `batch * seq` (row b*S + s) and `seq * batch` are different
// layouts. coef always holds the whole static factor, so code that only needs sizes ignores
// names.
struct DimV {
  std::int64_t coef = 1;
  SymId sym[kMaxDimSyms] = {};
  std::uint8_t nsym = 0;
  std::uint8_t nname = 0;
  std::uint8_t names_at = 0;
  SymId name[kMaxDimNames] = {};
  std::int64_t name_val[kMaxDimNames] = {};

  constexpr bool is_static() const { return nsym == 0; }
  constexpr bool is_named() const { return nname > 0; }
  constexpr int nfactors() const { return nsym + nname; }
  // The part of the static factor that carries no name (coef / the named values).
  constexpr std::int64_t plain_coef() const {
    std::int64_t c = coef;
    for (int i = 0; i < nname; ++i) c = name_val[i] != 0 ? c / name_val[i] : c;
    return c;
  }
  // Appends a factor (the caller keeps coef: push_name does not multiply it).
  constexpr void push_sym(SymId id) { sym[nsym++] = id; }
  constexpr void push_name(SymId id, std::int64_t value) {
    names_at = static_cast<std::uint8_t>(names_at | (1u << nfactors()));
    name[nname] = id;
    name_val[nname++] = value;
  }
  constexpr bool factor_is_name(int k) const { return ((names_at >> k) & 1u) != 0; }
  // f(is_name, index into name[] or sym[]) for each factor, in order.
  template <class F>
  constexpr void for_each_factor(F&& f) const {
    int s = 0, n = 0;
    for (int k = 0; k < nfactors(); ++k) {
      if (factor_is_name(k))
        f(true, n++);
      else
        f(false, s++);
    }
  }
  // Equal sizes and symbols in the same order, and names that agree: a dim without names is
  // anonymous and matches a named dim of the same size (`64` and `d_model` = 64); two named
  // dims match only when their names are the same, in the same places (`heads` and `head_dim`
  // never match).
  friend constexpr bool operator==(const DimV& a, const DimV& b) {
    if (a.coef != b.coef || a.nsym != b.nsym) return false;
    for (int i = 0; i < a.nsym; ++i)
      if (a.sym[i] != b.sym[i]) return false;
    if (a.nname == 0 || b.nname == 0) return true;
    if (a.nname != b.nname || a.names_at != b.names_at) return false;
    for (int i = 0; i < a.nname; ++i)
      if (a.name[i] != b.name[i]) return false;
    return true;
  }
};

// Equal including the names (a named 64 and a plain 64 differ): the graph's shape table and
// the short cuts of view and expand use it, so that a node keeps the names its type has.
constexpr bool identical(const DimV& a, const DimV& b) {
  return a == b && a.nname == b.nname;
}

// Of two dims that compare equal, the one that says more (the named one).
constexpr const DimV& more_named(const DimV& a, const DimV& b) {
  return b.nname > a.nname ? b : a;
}

constexpr DimV static_dim(std::int64_t n) {
  DimV d;
  d.coef = n;
  return d;
}
constexpr DimV named_dim(SymId id, std::int64_t n) {
  DimV d;
  d.coef = n;
  d.push_name(id, n);
  return d;
}
constexpr DimV symbol_dim(SymId id) {
  DimV d;
  d.push_sym(id);
  return d;
}

// A monomial with room for all the symbols of a whole shape (used for element counts).
struct Monomial {
  std::int64_t coef = 1;
  SymId sym[kMaxRank * kMaxDimSyms] = {};
  int nsym = 0;

  constexpr void mul(const DimV& d) {
    coef *= d.coef;
    for (int i = 0; i < d.nsym; ++i) insert(d.sym[i]);
  }
  constexpr void insert(SymId s) {
    int pos = nsym;
    while (pos > 0 && sym[pos - 1] > s) {
      sym[pos] = sym[pos - 1];
      --pos;
    }
    sym[pos] = s;
    ++nsym;
  }
  friend constexpr bool operator==(const Monomial& a, const Monomial& b) {
    if (a.coef != b.coef || a.nsym != b.nsym) return false;
    for (int i = 0; i < a.nsym; ++i)
      if (a.sym[i] != b.sym[i]) return false;
    return true;
  }
};

// Multiplies two dims: a's factors, then b's, in order (names are dropped when there would be
// more than kMaxDimNames). Returns false when the product has more than kMaxDimSyms symbols.
constexpr bool dim_mul(const DimV& a, const DimV& b, DimV& out) {
  if (a.nsym + b.nsym > kMaxDimSyms) return false;
  const bool keep_names = a.nname + b.nname <= kMaxDimNames;
  DimV r{};
  r.coef = a.coef * b.coef;
  for (const DimV* d : {&a, &b})
    d->for_each_factor([&](bool is_name, int i) {
      if (!is_name)
        r.push_sym(d->sym[i]);
      else if (keep_names)
        r.push_name(d->name[i], d->name_val[i]);
    });
  out = r;
  return true;
}

struct ShapeV {
  std::uint8_t rank = 0;
  DimV dims[kMaxRank] = {};

  constexpr const DimV& operator[](int i) const { return dims[i]; }
  constexpr DimV& operator[](int i) { return dims[i]; }
  constexpr bool all_static() const {
    for (int i = 0; i < rank; ++i)
      if (!dims[i].is_static()) return false;
    return true;
  }
  constexpr Monomial numel() const {
    Monomial m;
    for (int i = 0; i < rank; ++i) m.mul(dims[i]);
    return m;
  }
  friend constexpr bool operator==(const ShapeV& a, const ShapeV& b) {
    if (a.rank != b.rank) return false;
    for (int i = 0; i < a.rank; ++i)
      if (!(a.dims[i] == b.dims[i])) return false;
    return true;
  }
};

constexpr bool identical(const ShapeV& a, const ShapeV& b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (!identical(a.dims[i], b.dims[i])) return false;
  return true;
}

constexpr ShapeV make_shape(std::initializer_list<DimV> dims) {
  ShapeV s;
  for (const DimV& d : dims) s.dims[s.rank++] = d;
  return s;
}

// Normalises a possibly negative axis against a rank; returns -1 when out of range.
constexpr int normalize_axis(int axis, int rank) {
  if (axis < -rank || axis >= rank) return -1;
  return axis < 0 ? axis + rank : axis;
}

}  // namespace stag
