// parameter: a trainable tensor held in the session's parameter store, named by its scope path.
//   stag::param<Shape<512, 64>>(g / "enc" / 0 / "w_q", "weight") -> Tensor<[512, 64]>
// Attrs: i[0] = Init kind, i[1] = 1 when weight decay applies, f[0..1] = init arguments.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

// How the training API initialises a parameter (overridable by name pattern at run time).
enum class Init : std::int64_t {
  zeros,           // biases
  ones,            // norm gains
  normal,          // N(a, b^2): embeddings use N(0, 0.02^2)
  uniform,         // U(a, b)
  xavier_uniform,  // U(-r, r), r = sqrt(6 / (fan_in + fan_out)): projection weights
};

struct ParamOpts {
  Init init = Init::xavier_uniform;
  double a = 0.0;
  double b = 0.0;
  bool decay = true;  // false for biases and norm gains (AdamW's decoupled weight decay)
};

inline constexpr ParamOpts kZeros{Init::zeros, 0, 0, false};
inline constexpr ParamOpts kOnes{Init::ones, 0, 0, false};
inline constexpr ParamOpts kEmbeddingInit{Init::normal, 0.0, 0.02, true};

template <>
struct OpDef<OpId::parameter> {
  static constexpr OpInfo info{"parameter", "param", 0};
  static void reference(const KernelArgs&);
};

constexpr Attrs param_attrs(const ParamOpts& o) {
  Attrs a;
  a.i[0] = static_cast<std::int64_t>(o.init);
  a.i[1] = o.decay ? 1 : 0;
  a.f[0] = o.a;
  a.f[1] = o.b;
  return a;
}

template <class S, DType T = DType::f32>
constexpr auto param(Scope s, std::string_view leaf, ParamOpts opts = {}) {
  static_assert(ShapeType<S>, "stag::param: the template argument must be a stag::Shape<...>");
  static_assert(is_float(T), "stag::param: parameters are floating point");
  using C = canonical_t<S>;
  Builder& g = *s.b;
  register_syms<C>(g);
  const Attrs a = param_attrs(opts);
  const int id = g.add(code(OpId::parameter), {}, C::value, T, &a, leaf, kFlagParam);
  g.nodes[static_cast<std::size_t>(id)].scope = s.id;
  return Tensor<C, T>{&g, id};
}

}  // namespace stag
