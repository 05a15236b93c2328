// Compile errors that read on their first line: STAG_SHAPE_CHECK makes a failed shape check
// print one error whose own text names the op, shows both shapes with their dim names and
// says what to do. Use it in every typed front-end instead of a bare static_assert.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>

#include <stag/graph/dtype.hpp>
#include <stag/graph/shape.hpp>

namespace stag {

// Types whose names read as shapes, for clang (which prints class-type template arguments
// by value, names as character codes, but prints type names as written).
namespace show {
template <class... Dims>
struct shape {};
template <class... Shown>
struct args {};
template <std::int64_t N>
struct n {};
template <class... Factors>
struct prod {};
template <char... Name>
struct name {};
template <std::int64_t Value, char... Name>
struct named {};
// What to do: `kind` 1 = transpose<I, J> the input first, 2 = view to the shape with axes I
// and J swapped, then transpose<I, J>; 0 = nothing to suggest.
template <int Kind, int I, int J>
struct hint {};
using no_hint = hint<0, 0, 0>;
// A shape with its dtype (a dtype check shows both operands' dtypes and shapes).
template <DType T, class Shape>
struct typed {};
}  // namespace show

// STAG_SHAPE_CHECK(..., with_dtype<S, T>, ...) shows "f32 [batch, seq]" (g++) or
// show::typed<DType::f32, show::shape<...>> (clang).
template <class S, DType T>
struct with_dtype {};

namespace detail {
template <class T>
struct is_plain_sym : std::false_type {};
template <fixed_string N>
struct is_plain_sym<Sym<N>> : std::true_type {};
template <class T>
struct is_plain_named : std::false_type {};
template <fixed_string N, std::int64_t V>
struct is_plain_named<Named<N, V>> : std::true_type {};

template <auto D>
constexpr auto show_dim() {
  using T = std::remove_cvref_t<decltype(D)>;
  if constexpr (StaticDim<T>) {
    return show::n<D>{};
  } else if constexpr (is_plain_sym<T>::value || is_plain_named<T>::value) {
    // A symbol declared as `sym<"batch">` has no type of its own name: spell it by letters.
    return []<std::size_t... I>(std::index_sequence<I...>) {
      if constexpr (NamedDim<T>)
        return show::named<T::value, T::name[I]...>{};
      else
        return show::name<T::name[I]...>{};
    }
    (std::make_index_sequence<T::name.size()>{});
  } else if constexpr (SymDim<T> || NamedDim<T>) {
    return T{};  // STAG_SYMBOL / STAG_NAMED_DIM: the type has the dim's name
  } else {
    return []<std::int64_t C, auto... A>(Prod<C, A...>) {
      if constexpr (C == 1)
        return show::prod<decltype(show_dim<A>())...>{};
      else
        return show::prod<show::n<C>, decltype(show_dim<A>())...>{};
    }
    (D);
  }
}
template <class S>
struct show_shape;
template <auto... Ds>
struct show_shape<Shape<Ds...>> {
  using type = show::shape<decltype(show_dim<Ds>())...>;
};
template <class S, DType T>
struct show_shape<with_dtype<S, T>> {
  using type = show::typed<T, typename show_shape<S>::type>;
};
template <class S>
requires(!ShapeType<S>) struct show_shape<S> {
  using type = S;
};

// ---- g++: the whole message, computed, as a template argument of an incomplete type ----------

struct Text {
  char c[600]{};
  int n = 0;
  constexpr void put(std::string_view s) {
    for (char ch : s)
      if (n < 599) c[n++] = ch;
  }
  constexpr void put_int(std::int64_t v) {
    char d[24]{};
    int k = 0;
    if (v == 0) d[k++] = '0';
    while (v > 0) {
      d[k++] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
    while (k > 0)
      if (n < 599) c[n++] = d[--k];
  }
};

template <auto D>
constexpr void put_dim(Text& t) {
  using T = std::remove_cvref_t<decltype(D)>;
  if constexpr (StaticDim<T>) {
    t.put_int(D);
  } else if constexpr (SymDim<T> || NamedDim<T>) {
    t.put(T::name);
  } else {
    []<std::int64_t C, auto... A>(Text & tt, Prod<C, A...>) {
      bool first = C == 1;
      if (!first) tt.put_int(C);
      ((tt.put(first ? "" : "*"), tt.put(std::remove_cvref_t<decltype(A)>::name), first = false),
       ...);
    }
    (t, D);
  }
}
template <class T>
struct is_with_dtype : std::false_type {};
template <class S, DType T>
struct is_with_dtype<with_dtype<S, T>> : std::true_type {
  using shape = S;
  static constexpr DType dtype = T;
};
// A shape, or a with_dtype's dtype and shape.
template <class S>
constexpr bool shown_as_shape = ShapeType<S> || is_with_dtype<S>::value;

template <class S>
constexpr void put_shape(Text& t) {
  if constexpr (is_with_dtype<S>::value) {
    t.put(dtype_name(is_with_dtype<S>::dtype));
    t.put(" ");
    put_shape<typename is_with_dtype<S>::shape>(t);
  } else if constexpr (ShapeType<S>) {
    []<auto... Ds>(Text & tt, Shape<Ds...>) {
      tt.put("[");
      bool first = true;
      ((tt.put(first ? "" : ", "), put_dim<Ds>(tt), first = false), ...);
      tt.put("]");
    }
    (t, S{});
  }
}
template <class S>
constexpr void put_shape_swapped(Text& t, int i, int j) {
  []<auto... Ds>(Text & tt, Shape<Ds...>, int a, int b) {
    tt.put("[");
    int k = 0;
    constexpr int n = sizeof...(Ds);
    // Writes dim number `want` of the pack.
    auto put_at = [&](int want) {
      int idx = 0;
      ((idx++ == want ? put_dim<Ds>(tt) : void()), ...);
    };
    for (k = 0; k < n; ++k) {
      if (k) tt.put(", ");
      put_at(k == a ? b : k == b ? a : k);
    }
    tt.put("]");
  }
  (t, S{}, i, j);
}

template <class H>
struct hint_of {
  static constexpr int kind = 0, i = 0, j = 0;
};
template <int K, int I, int J>
struct hint_of<show::hint<K, I, J>> {
  static constexpr int kind = K, i = I, j = J;
};

template <class A, class B, class H>
constexpr Text render_text(std::string_view msg) {
  Text t;
  t.put(msg);
  if constexpr (shown_as_shape<A>) {
    t.put(": ");
    put_shape<A>(t);
  }
  if constexpr (shown_as_shape<B>) {
    t.put(" and ");
    put_shape<B>(t);
  } else if constexpr (requires { B::shown; }) {
    t.put(" and ");  // a label in place of a second shape (a mask's polarity)
    t.put(B::shown);
  }
  if constexpr (hint_of<H>::kind == 1) {
    t.put("; transpose<");
    t.put_int(hint_of<H>::i);
    t.put(", ");
    t.put_int(hint_of<H>::j);
    t.put("> first");
  } else if constexpr (hint_of<H>::kind == 2 && ShapeType<B>) {
    t.put("; view to ");
    put_shape_swapped<B>(t, hint_of<H>::i, hint_of<H>::j);
    t.put(", then transpose<");
    t.put_int(hint_of<H>::i);
    t.put(", ");
    t.put_int(hint_of<H>::j);
    t.put(">");
  }
  return t;
}
template <fixed_string Msg, class A, class B, class H>
constexpr Text render() {
  return render_text<A, B, H>(Msg.view());
}

template <std::size_t N>
struct message {
  char text[N]{};
};
template <Text T>
constexpr auto as_message() {
  message<static_cast<std::size_t>(T.n) + 1> m;
  for (int i = 0; i < T.n; ++i) m.text[i] = T.c[i];
  return m;
}
}  // namespace detail

// Never defined: g++ names it, with the rendered message, on the line of the error.
template <auto Message>
struct shape_error;

// A class, not a function: g++ instantiates it where the check fails (a function body may wait
// to the end of the file and be dropped when a later line has failed too).
template <fixed_string Msg, class A, class B = void, class H = show::no_hint>
struct shape_error_report {
  static_assert(sizeof(shape_error<detail::as_message<detail::render<Msg, A, B, H>()>()>) != 0);
};

// Always `Ok`; the other arguments are there to be printed by clang's "requirement" line.
template <bool Ok, class... Shown>
inline constexpr bool shape_check = Ok;

template <class S>
using show_t = typename detail::show_shape<S>::type;
template <class... S>
using show_args = show::args<show_t<S>...>;

// ---- checks on a run-time value --------------------------------------------------------------
// A layer option such as AttentionOptions::rope is a value, known only while the model function
// runs, so a check on it cannot be a static_assert in the layer. The layer records the failure
// (Builder::fail) and goes on with a placeholder; model() then reports it as one error whose
// first line names the layer and shows the dims, like STAG_SHAPE_CHECK's. g++ prints the message
// rendered with both shapes; clang the message with the two numbers in its requirement. Each such
// check has a line here (clang's static_assert needs its message as a literal).
// clang-format off
#define STAG_BUILD_CHECKS(X)                                                                       \
  X(mha_rope_odd_head_dim, "stag::multi_head_attention: rope needs an even head dim, but d_model / heads is odd (d_model, heads)") \
  X(gqa_rope_odd_head_dim, "stag::grouped_query_attention: rope needs an even head dim, but d_model / heads is odd (d_model, heads)")
// clang-format on

#define STAG_BUILD_CHECK_ENUM(name, msg) name,
enum class BuildCheck : std::uint8_t { none, STAG_BUILD_CHECKS(STAG_BUILD_CHECK_ENUM) };
#undef STAG_BUILD_CHECK_ENUM

constexpr std::string_view build_check_message(BuildCheck c) {
#define STAG_BUILD_CHECK_CASE(name, msg) \
  case BuildCheck::name:                 \
    return msg;
  switch (c) {
    STAG_BUILD_CHECKS(STAG_BUILD_CHECK_CASE)
    case BuildCheck::none:
      break;
  }
#undef STAG_BUILD_CHECK_CASE
  return "stag: no failed check";
}

// The first failed check of a model function: which, the two dims clang shows, and the message
// with both shapes (g++'s error, and the GraphError a graph built at run time throws).
struct BuildFailure {
  BuildCheck check = BuildCheck::none;
  std::int64_t a = 0, b = 0;
  detail::Text text{};
};

// The failure of check C for the shapes A and B (shown by g++) and the dims a and b (by clang).
template <BuildCheck C, class A, class B>
constexpr BuildFailure build_failure(std::int64_t a, std::int64_t b) {
  return {C, a, b, detail::render_text<A, B, show::no_hint>(build_check_message(C))};
}

namespace detail {
template <BuildCheck C, std::int64_t A, std::int64_t B>
struct build_check_report;
#define STAG_BUILD_CHECK_REPORT(name, msg)                                                        \
  template <std::int64_t A, std::int64_t B>                                                       \
  struct build_check_report<BuildCheck::name, A, B> {                                             \
    static_assert(                                                                                \
        ::stag::shape_check<false, show::args<show::shape<show::n<A>>, show::shape<show::n<B>>>>, \
        msg);                                                                                     \
  };
STAG_BUILD_CHECKS(STAG_BUILD_CHECK_REPORT)
#undef STAG_BUILD_CHECK_REPORT
}  // namespace detail

}  // namespace stag

// STAG_SHAPE_CHECK(cond, "stag::op: what is wrong", ShapeA[, ShapeB[, show::hint<...>]]): one
// error when `cond` is false. g++ prints `invalid application of 'sizeof' to incomplete type
// 'stag::shape_error<stag::detail::message<N>{"stag::op: what is wrong: [batch, seq, 64] and
// [...]; transpose<1, 2> first"}>'`; clang prints `static_assert failed due to requirement
// 'stag::shape_check<false, stag::show::args<stag::show::shape<...>, ...>>' "stag::op: what is
// wrong"`. Pass `void` for a missing shape. The shapes may contain commas (they are pasted
// into a template argument list).
#if defined(__clang__)
#define STAG_SHAPE_CHECK(cond, msg, ...) \
  static_assert(::stag::shape_check<(cond), ::stag::show_args<__VA_ARGS__>>, msg)
#else
#define STAG_SHAPE_CHECK(cond, msg, ...)                                               \
  do {                                                                                 \
    if constexpr (!(cond)) (void)sizeof(::stag::shape_error_report<msg, __VA_ARGS__>); \
  } while (false)
#endif
