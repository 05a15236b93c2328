// Type-level shapes: `Shape<batch, seq, 512>` where a dim is an int, a named symbol
// (`stag::sym<"batch">`) or a product of symbols (`batch * seq`, `stag::prod<heads, 64>`).
// Conversions to and from the value-level ShapeV let one constexpr rule serve both levels.
#pragma once

#include <concepts>
#include <string>
#include <type_traits>
#include <utility>

#include <stag/graph/dims.hpp>

namespace stag {

// A named symbolic dimension, bound to a number once per run from the input tensors.
template <fixed_string Name>
struct Sym {
  static constexpr std::string_view name = Name.view();
  static constexpr SymId id = fnv1a(Name.view());
#if defined(__clang__)
  // clang prints class-type template arguments by value; this member makes it show the name
  // (as character codes) instead of `{}`. g++ prints `Sym<fixed_string<6>{"batch"}>`.
  decltype(Name) spelled = Name;
#endif
};

template <fixed_string Name>
inline constexpr Sym<Name> sym{};

// Product of symbols with a static coefficient, canonical: symbols sorted by id, and never a
// bare symbol (coef 1, one symbol) nor a bare number (no symbol).
template <std::int64_t Coef, auto... Syms>
struct Prod {};

namespace detail {
template <class T>
struct is_sym : std::false_type {};
template <fixed_string N>
struct is_sym<Sym<N>> : std::true_type {};
template <class T>
struct is_prod : std::false_type {};
template <std::int64_t C, auto... S>
struct is_prod<Prod<C, S...>> : std::true_type {};
}  // namespace detail

template <class T>
concept SymDim = detail::is_sym<std::remove_cvref_t<T>>::value;
template <class T>
concept ProdDim = detail::is_prod<std::remove_cvref_t<T>>::value;
template <class T>
concept StaticDim = std::integral<std::remove_cvref_t<T>>;
template <class T>
concept DimLike = SymDim<T> || ProdDim<T> || StaticDim<T>;

// ---- type -> value -------------------------------------------------------------------------

template <auto D>
consteval DimV dim_value() {
  using T = std::remove_cvref_t<decltype(D)>;
  if constexpr (StaticDim<T>) {
    return static_dim(static_cast<std::int64_t>(D));
  } else if constexpr (SymDim<T>) {
    return symbol_dim(T::id);
  } else {
    static_assert(ProdDim<T>, "stag: a dim must be an integer, a stag::sym<\"name\"> or a product");
    return []<std::int64_t C, auto... S>(Prod<C, S...>) {
      DimV d;
      d.coef = C;
      ((d.sym[d.nsym++] = std::remove_cvref_t<decltype(S)>::id), ...);
      return d;
    }
    (D);
  }
}

template <auto... Ds>
struct Shape {
  static constexpr int rank = sizeof...(Ds);
  static constexpr ShapeV value = [] {
    static_assert(sizeof...(Ds) <= kMaxRank, "stag: shapes have at most 6 dims");
    ShapeV s;
    ((s.dims[s.rank++] = dim_value<Ds>()), ...);
    return s;
  }();
};

template <class S>
concept ShapeType = requires {
  S::value;
  S::rank;
};

// ---- symbol lists, used to turn values back into types ----------------------------------

template <auto... Syms>
struct SymList {};

namespace detail {
template <class... Ls>
struct concat_syms;
template <>
struct concat_syms<> {
  using type = SymList<>;
};
template <auto... A>
struct concat_syms<SymList<A...>> {
  using type = SymList<A...>;
};
template <auto... A, auto... B, class... Rest>
struct concat_syms<SymList<A...>, SymList<B...>, Rest...> {
  using type = typename concat_syms<SymList<A..., B...>, Rest...>::type;
};

template <auto D>
struct syms_of_dim {
  using type = SymList<>;
};
template <auto D>
requires SymDim<decltype(D)>
struct syms_of_dim<D> {
  using type = SymList<D>;
};
template <std::int64_t C, auto... S, Prod<C, S...> D>
struct syms_of_dim<D> {
  using type = SymList<S...>;
};
}  // namespace detail

template <class S>
struct syms_of;
template <auto... Ds>
struct syms_of<Shape<Ds...>> {
  using type = typename detail::concat_syms<typename detail::syms_of_dim<Ds>::type...>::type;
};
template <class... Ts>
using syms_of_t = typename detail::concat_syms<typename syms_of<Ts>::type...>::type;

namespace detail {
template <SymId Id, auto S0, auto... Ss>
consteval auto find_sym(SymList<S0, Ss...>) {
  if constexpr (std::remove_cvref_t<decltype(S0)>::id == Id)
    return S0;
  else
    return find_sym<Id>(SymList<Ss...>{});
}

template <DimV D, class L>
consteval auto dim_from_value() {
  if constexpr (D.nsym == 0) {
    static_assert(D.coef >= 0 && D.coef <= 0x7fffffff, "stag: static dims must fit in an int");
    return static_cast<int>(D.coef);
  } else if constexpr (D.nsym == 1 && D.coef == 1) {
    return find_sym<D.sym[0]>(L{});
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return Prod<D.coef, find_sym<D.sym[I]>(L{})...>{};
    }
    (std::make_index_sequence<D.nsym>{});
  }
}

template <ShapeV V, class L>
consteval auto shape_from_value() {
  return []<std::size_t... I>(std::index_sequence<I...>) {
    return Shape<dim_from_value<V.dims[I], L>()...>{};
  }
  (std::make_index_sequence<V.rank>{});
}
}  // namespace detail

// The canonical Shape type of a value shape, naming its symbols from the list L.
template <ShapeV V, class L>
using shape_t = decltype(detail::shape_from_value<V, L>());

// The canonical spelling of a user-written shape (ints, sorted products).
template <class S>
struct canonical {
  static constexpr ShapeV value = S::value;
  using type = decltype(detail::shape_from_value<value, syms_of_t<S>>());
};
template <class S>
using canonical_t = typename canonical<S>::type;

// ---- products of dims -------------------------------------------------------------------------

// `stag::prod<heads, 64>`: the product of any dims as a canonical dim value.
template <auto... Ds>
inline constexpr auto prod = [] {
  constexpr DimV d = [] {
    DimV r = static_dim(1);
    ((void)dim_mul(r, dim_value<Ds>(), r), ...);
    return r;
  }();
  using L = typename detail::concat_syms<typename detail::syms_of_dim<Ds>::type...>::type;
  return detail::dim_from_value<d, L>();
}();

template <class A, class B>
requires((SymDim<A> || ProdDim<A>)&&(SymDim<B> || ProdDim<B>)) constexpr auto operator*(A, B) {
  return prod<A{}, B{}>;
}

// ---- printing ------------------------------------------------------------------------------

template <auto D>
std::string dim_string() {
  using T = std::remove_cvref_t<decltype(D)>;
  if constexpr (StaticDim<T>) {
    return std::to_string(D);
  } else if constexpr (SymDim<T>) {
    return std::string(T::name);
  } else {
    return []<std::int64_t C, auto... S>(Prod<C, S...>) {
      std::string out = C == 1 ? "" : std::to_string(C);
      // NOTE: appends, not `"*" + std::string(...)`: g++ 12 warns falsely (-Wrestrict) on that.
      ((out += out.empty() ? "" : "*", out += decltype(S)::name), ...);
      return out;
    }
    (D);
  }
}

template <class S>
std::string shape_string() {
  return []<auto... Ds>(Shape<Ds...>) {
    std::string out = "[";
    bool first = true;
    ((out += first ? "" : ", ", out += dim_string<Ds>(), first = false), ...);
    return out + "]";
  }
  (S{});
}

}  // namespace stag
