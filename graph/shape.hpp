// Type-level shapes: `Shape<batch, seq, 512>` where a dim is an int, a named symbol
// (`stag::sym<"batch">`), a named static dim (`stag::dim<"heads", 4>`) or a product of them
// (`batch * seq`, `heads * head_dim`, `stag::prod<heads, 64>`).
// Conversions to and from the value-level ShapeV let one constexpr rule serve both levels.
#pragma once

#include <concepts>
#include <string>
#include <type_traits>
#include <utility>

#include <stag/graph/dims.hpp>

namespace stag {

namespace detail {
struct SymBase {};
struct NamedBase {};
}  // namespace detail

// A named symbolic dimension, bound to a number once per run from the input tensors.
template <fixed_string Name>
struct Sym : detail::SymBase {
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

// A named static dimension: `stag::dim<"heads", 4>` is 4 wherever a size is needed, and keeps
// its name through products and views (docs/shapes.md, "Named static dims").
template <fixed_string Name, std::int64_t Value>
struct Named : detail::NamedBase {
  static_assert(Value > 0, "stag::dim: a named dim needs a positive size");
  static constexpr std::string_view name = Name.view();
  static constexpr SymId id = fnv1a(Name.view());
  static constexpr std::int64_t value = Value;
};

template <fixed_string Name, std::int64_t Value>
inline constexpr Named<Name, Value> dim{};

// Declares a symbol or a named static dim whose type has the dim's own name, so that both g++
// and clang print it by name in errors: STAG_SYMBOL(batch); STAG_NAMED_DIM(heads, 4);
#define STAG_SYMBOL(id_)                            \
  inline constexpr struct id_ : ::stag::Sym<#id_> { \
  } id_ {                                           \
  }
#define STAG_NAMED_DIM(id_, value_)                           \
  inline constexpr struct id_ : ::stag::Named<#id_, value_> { \
  } id_ {                                                     \
  }

// Product of symbols and named static dims with a plain static coefficient, canonical: the
// factors in the order they were written (`batch * seq` and `seq * batch` are different
// layouts); never a lone symbol or named dim (coefficient 1) nor a bare number.
template <std::int64_t Coef, auto... Atoms>
struct Prod {};

namespace detail {
template <class T>
struct is_prod : std::false_type {};
template <std::int64_t C, auto... S>
struct is_prod<Prod<C, S...>> : std::true_type {};
}  // namespace detail

template <class T>
concept SymDim = std::is_base_of_v<detail::SymBase, std::remove_cvref_t<T>>;
template <class T>
concept NamedDim = std::is_base_of_v<detail::NamedBase, std::remove_cvref_t<T>>;
template <class T>
concept ProdDim = detail::is_prod<std::remove_cvref_t<T>>::value;
template <class T>
concept StaticDim = std::integral<std::remove_cvref_t<T>>;
template <class T>
concept DimLike = SymDim<T> || NamedDim<T> || ProdDim<T> || StaticDim<T>;

// ---- type -> value -------------------------------------------------------------------------

template <auto D>
consteval DimV dim_value() {
  using T = std::remove_cvref_t<decltype(D)>;
  if constexpr (StaticDim<T>) {
    return static_dim(static_cast<std::int64_t>(D));
  } else if constexpr (SymDim<T>) {
    return symbol_dim(T::id);
  } else if constexpr (NamedDim<T>) {
    return named_dim(T::id, T::value);
  } else {
    static_assert(ProdDim<T>,
                  "stag: a dim must be an integer, a stag::sym<\"name\">, a stag::dim<\"name\", "
                  "size> or a product");
    return []<std::int64_t C, auto... S>(Prod<C, S...>) {
      DimV d = static_dim(C);
      ((void)dim_mul(d, dim_value<S>(), d), ...);
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
requires(SymDim<decltype(D)> || NamedDim<decltype(D)>) struct syms_of_dim<D> {
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

// The id of a dim's k-th factor (a symbol's or a name's).
consteval SymId factor_id(const DimV& d, std::size_t k) {
  SymId id = 0;
  std::size_t at = 0;
  d.for_each_factor([&](bool is_name, int i) {
    if (at++ == k) id = is_name ? d.name[i] : d.sym[i];
  });
  return id;
}

template <DimV D, class L>
consteval auto dim_from_value() {
  if constexpr (D.nsym == 0 && D.nname == 0) {
    static_assert(D.coef >= 0 && D.coef <= 0x7fffffff, "stag: static dims must fit in an int");
    return static_cast<int>(D.coef);
  } else if constexpr (D.nsym == 1 && D.nname == 0 && D.coef == 1) {
    return find_sym<D.sym[0]>(L{});
  } else if constexpr (D.nsym == 0 && D.nname == 1 && D.coef == D.name_val[0]) {
    return find_sym<D.name[0]>(L{});
  } else {
    return []<std::size_t... K>(std::index_sequence<K...>) {
      return Prod<D.plain_coef(), find_sym<factor_id(D, K)>(L{})...>{};
    }
    (std::make_index_sequence<D.nfactors()>{});
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

// The canonical spelling of a user-written shape (ints, products with the coefficient first).
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
requires((SymDim<A> || NamedDim<A> || ProdDim<A>)&&(SymDim<B> || NamedDim<B> ||
                                                    ProdDim<B>)) constexpr auto
operator*(A, B) {
  return prod<A{}, B{}>;
}

// ---- printing ------------------------------------------------------------------------------

template <auto D>
std::string dim_string() {
  using T = std::remove_cvref_t<decltype(D)>;
  if constexpr (StaticDim<T>) {
    return std::to_string(D);
  } else if constexpr (SymDim<T> || NamedDim<T>) {
    return std::string(T::name);
  } else {
    return []<std::int64_t C, auto... S>(Prod<C, S...>) {
      std::string out = C == 1 ? "" : std::to_string(C);
      // NOTE: appends, not `"*" + std::string(...)`: g++ 12 warns falsely (-Wrestrict) on that.
      ((out += out.empty() ? "" : "*", out += std::remove_cvref_t<decltype(S)>::name), ...);
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
