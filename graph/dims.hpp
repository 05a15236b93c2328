// Dimensions and shapes as values: DimV (coef * product of named symbols) and ShapeV.
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

using SymId = std::uint32_t;

// One dimension: coef * sym[0] * ... * sym[nsym-1]; symbols kept sorted by id so that equal
// products compare equal. A static dim has nsym == 0.
struct DimV {
  std::int64_t coef = 1;
  SymId sym[kMaxDimSyms] = {};
  std::uint8_t nsym = 0;

  constexpr bool is_static() const { return nsym == 0; }
  friend constexpr bool operator==(const DimV& a, const DimV& b) {
    if (a.coef != b.coef || a.nsym != b.nsym) return false;
    for (int i = 0; i < a.nsym; ++i)
      if (a.sym[i] != b.sym[i]) return false;
    return true;
  }
};

constexpr DimV static_dim(std::int64_t n) {
  DimV d;
  d.coef = n;
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

// Multiplies two dims. Returns false when the product has more than kMaxDimSyms symbols.
constexpr bool dim_mul(const DimV& a, const DimV& b, DimV& out) {
  Monomial m;
  m.mul(a);
  m.mul(b);
  if (m.nsym > kMaxDimSyms) return false;
  out = DimV{};
  out.coef = m.coef;
  out.nsym = static_cast<std::uint8_t>(m.nsym);
  for (int i = 0; i < m.nsym; ++i) out.sym[i] = m.sym[i];
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
