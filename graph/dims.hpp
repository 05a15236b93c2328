// Dimensions and shapes as values: DimV (coef * product of symbols, with named static factors
// such as heads * head_dim kept in order) and ShapeV.
// Every shape rule in ops/ is a constexpr function over these, evaluated at compile time for
// typed handles (graph/shape.hpp) and again by the builder and the autodiff pass.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include <stag/graph/fixed_string.hpp>

namespace stag {

inline constexpr int kMaxRank = 6;
inline constexpr int kMaxDimSyms = 3;
inline constexpr int kMaxDimNames = 3;

using SymId = std::uint32_t;

// One dimension: coef * sym[0] * ... * sym[nsym-1]; symbols kept sorted by id so that equal
// products compare equal. A static dim has nsym == 0. A static factor may carry names
// (`heads * head_dim`): name[] lists them in order (outermost first) with their values, and
// coef always holds the whole static factor, so code that only needs sizes ignores names.
struct DimV {
  std::int64_t coef = 1;
  SymId sym[kMaxDimSyms] = {};
  std::uint8_t nsym = 0;
  std::uint8_t nname = 0;
  SymId name[kMaxDimNames] = {};
  std::int64_t name_val[kMaxDimNames] = {};

  constexpr bool is_static() const { return nsym == 0; }
  constexpr bool is_named() const { return nname > 0; }
  // The part of the static factor that carries no name (coef / the named values).
  constexpr std::int64_t plain_coef() const {
    std::int64_t c = coef;
    for (int i = 0; i < nname; ++i) c = name_val[i] != 0 ? c / name_val[i] : c;
    return c;
  }
  // Equal sizes and symbols, and names that agree: a dim without names is anonymous and matches
  // a named dim of the same size (`64` and `d_model` = 64); two named dims match only when
  // their names are the same, in the same order (`heads` and `head_dim` never match).
  friend constexpr bool operator==(const DimV& a, const DimV& b) {
    if (a.coef != b.coef || a.nsym != b.nsym) return false;
    for (int i = 0; i < a.nsym; ++i)
      if (a.sym[i] != b.sym[i]) return false;
    if (a.nname == 0 || b.nname == 0) return true;
    if (a.nname != b.nname) return false;
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
  d.nname = 1;
  d.name[0] = id;
  d.name_val[0] = n;
  return d;
}
constexpr DimV symbol_dim(SymId id) {
  DimV d;
  d.sym[0] = id;
  d.nsym = 1;
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

// Multiplies two dims (names: a's, then b's; dropped when there would be more than
// kMaxDimNames). Returns false when the product has more than kMaxDimSyms symbols.
constexpr bool dim_mul(const DimV& a, const DimV& b, DimV& out) {
  Monomial m;
  m.mul(a);
  m.mul(b);
  if (m.nsym > kMaxDimSyms) return false;
  DimV r{};
  r.coef = m.coef;
  r.nsym = static_cast<std::uint8_t>(m.nsym);
  for (int i = 0; i < m.nsym; ++i) r.sym[i] = m.sym[i];
  if (a.nname + b.nname <= kMaxDimNames) {
    for (int i = 0; i < a.nname; ++i) {
      r.name[r.nname] = a.name[i];
      r.name_val[r.nname++] = a.name_val[i];
    }
    for (int i = 0; i < b.nname; ++i) {
      r.name[r.nname] = b.name[i];
      r.name_val[r.nname++] = b.name_val[i];
    }
  }
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
