// The building blocks the articles' models are made of: linear layers (weights stored
// [out, in] as in PyTorch, so checkpoints map one to one), position-wise feed-forward, SwiGLU,
// token embeddings, learned and sinusoidal positions. Each takes a Scope that names its
// parameters and dims as values (ints or symbols), so the same code builds static and
// symbolic models.
#pragma once

#include <stag/models/dims.hpp>
#include <stag/ops/registry.hpp>

namespace stag {

// y = x @ W^T + b, W [Out, In]. PyTorch: nn.Linear(In, Out).
// Its parameters have static shapes: a symbolic last dim of x (the sequence, after a transpose
// or a pooling over the wrong axis) would make a weight [Out, seq] that changes with the input,
// and is refused, as a symbolic Out is.
namespace detail {
// After a failed shape check: zeros [..., Out], so that the lines after it compile (one error).
template <auto Out, class S, DType T>
constexpr auto projection_placeholder(Tensor<S, T> x) {
  constexpr ShapeV out = [] {
    ShapeV v = S::value;
    v.dims[v.rank - 1] = dim_value<Out>();
    return v;
  }();
  return typed<out, T, S, Shape<Out>>(full(*x.b, out, 0, T));
}
}  // namespace detail

template <auto Out, class S, DType T>
constexpr auto linear(Scope s, Tensor<S, T> x, bool bias = true) {
  constexpr auto in = last_dim<S>;
  constexpr bool fixed = dim_value<in>().is_static() && dim_value<Out>().is_static();
  STAG_SHAPE_CHECK(fixed,
                   "stag::linear: a parameter would have a symbolic dim (weight [out_features, "
                   "in_features] from the last dim of the input); linear needs static features",
                   S, Shape<Out, in>);
  if constexpr (!fixed) {
    return detail::projection_placeholder<Out>(x);
  } else {
    auto w = param<Shape<Out, in>, T>(s, "weight");
    auto y = matmul_nt(x, w);
    if (!bias) return y;
    return y + param<Shape<Out>, T>(s, "bias", kZeros);
  }
}

// y = x @ W + b with W stored [In, Out]: Hugging Face's Conv1D, in which GPT-2 keeps its
// projections (transposed from nn.Linear), so that its checkpoints map one to one.
template <auto Out, class S, DType T>
constexpr auto linear_in_out(Scope s, Tensor<S, T> x) {
  constexpr auto in = last_dim<S>;
  constexpr bool fixed = dim_value<in>().is_static() && dim_value<Out>().is_static();
  STAG_SHAPE_CHECK(fixed,
                   "stag::linear_in_out: a parameter would have a symbolic dim (weight "
                   "[in_features, out_features] from the last dim of the input); it needs static "
                   "features",
                   S, Shape<in, Out>);
  if constexpr (!fixed) {
    return detail::projection_placeholder<Out>(x);
  } else {
    return matmul(x, param<Shape<in, Out>, T>(s, "weight")) +
           param<Shape<Out>, T>(s, "bias", kZeros);
  }
}

enum class Activation : std::uint8_t { relu, gelu, gelu_tanh, silu };

template <class S, DType T>
constexpr auto activate(Tensor<S, T> x, Activation a) {
  switch (a) {
    case Activation::relu:
      return relu(x);
    case Activation::gelu:
      return gelu(x);
    case Activation::gelu_tanh:
      return gelu_tanh(x);
    case Activation::silu:
      return silu(x);
  }
  return x;
}

template <class S, DType T>
constexpr auto maybe_dropout(Tensor<S, T> x, double p) {
  return p > 0 ? dropout(x, p) : x;
}

// Position-wise feed-forward: linear(D -> Dff), activation, dropout, linear(Dff -> D).
template <auto Dff, class S, DType T>
constexpr auto feed_forward(Scope s, Tensor<S, T> x, Activation act = Activation::relu,
                            double p = 0.0) {
  auto guard = s.enter();
  auto h = maybe_dropout(activate(linear<named_as<dims::d_ff, Dff>>(s / "w_1", x), act), p);
  return linear<last_dim<S>>(s / "w_2", h);
}

// SwiGLU feed-forward (LLaMA / minimind): down(silu(gate(x)) * up(x)), no biases.
template <auto Dff, class S, DType T>
constexpr auto swiglu(Scope s, Tensor<S, T> x, double p = 0.0) {
  auto guard = s.enter();
  constexpr auto dff = named_as<dims::d_ff, Dff>;
  auto h = silu(linear<dff>(s / "gate_proj", x, false)) * linear<dff>(s / "up_proj", x, false);
  return maybe_dropout(linear<last_dim<S>>(s / "down_proj", h, false), p);
}

// Token embedding [V, D] looked up by ids, optionally scaled by sqrt(D) ("Attention Is All You
// Need" multiplies embeddings by sqrt(d_model)). Initialised N(0, 0.02).
template <auto V, auto D, class S, DType TI>
constexpr auto token_embedding(Scope s, Tensor<S, TI> ids, bool scale_by_sqrt_d = false) {
  auto table = param<Shape<V, D>>(s, "weight", kEmbeddingInit);
  auto e = embedding(ids, table);
  if (!scale_by_sqrt_d) return e;
  if constexpr (dim_value<D>().is_static()) {
    return e * cx::sqrt(static_cast<double>(dim_value<D>().coef));
  } else {
    return e * Tensor<Shape<>>{s.b, sqrt(numel(table.ref(), 0b10)).id};  // sqrt(D) at run time
  }
}

// Learned positions: a [MaxLen, D] table read at 0 .. len-1 -> [len, D] (len <= MaxLen is
// checked at run time, like any embedding id).
// Learned positions at given positions `at` (any shape of ids): the same [MaxLen, D] table.
template <auto MaxLen, auto D, class S, DType TI>
constexpr auto learned_positions_at(Scope s, Tensor<S, TI> at) {
  return embedding(at, param<Shape<MaxLen, D>>(s, "weight", kEmbeddingInit));
}

template <auto MaxLen, auto D, auto Len>
constexpr auto learned_positions(Scope s) {
  return learned_positions_at<MaxLen, D>(s, positions<Len>(*s.b));
}

// snippet-begin: docs-transformer-3
// Sinusoidal positions [len, D]: pe[p, 2i] = sin(p / 10000^(2i/D)), pe[p, 2i+1] = cos(...).
// Computed in the graph from positions (no table to store); D must be even.
template <auto D, auto Len>
constexpr auto sinusoidal_positions(Builder& g, double base = 10000.0) {
  constexpr auto half = dim_quotient<D, 2>;
  auto pos = unsqueeze<1>(cast<DType::f32>(positions<Len>(g)));  // [len, 1]
  auto i = unsqueeze<0>(cast<DType::f32>(positions<half>(g)));   // [1, D/2]
  const double k = -2.0 * cx::log(base) / static_cast<double>(dim_value<D>().coef);
  STAG_SHAPE_CHECK(dim_value<D>().is_static(),
                   "stag::sinusoidal_positions: the model dim must be static (len, d_model)",
                   Shape<Len>, Shape<D>);
  auto angle = pos * exp(i * k);                                               // [len, D/2]
  auto pe = concat<-1>(unsqueeze<-1>(sin(angle)), unsqueeze<-1>(cos(angle)));  // [len, D/2, 2]
  return view<Len, D>(pe);
}
// snippet-end: docs-transformer-3

}  // namespace stag
