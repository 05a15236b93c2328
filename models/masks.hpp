// Attention masks that say what they mean: AttentionMask carries in its type its polarity (keep:
// true = attend, stag's convention; ignore: true = masked out, PyTorch's key_padding_mask) and
// which axis its last dim covers (the key axis, or the query axis when asked for by name).
// Make them with padding_keep, from_key_padding_mask, causal_keep or query_keep; combine by &.
// TokenMask is the [batch, seq] mask of tokens an input or a batch brings in, with its polarity
// in its type from the start (keep_input, padding_input): `~` flips the type with the values,
// and the converters refuse the wrong polarity. The ops softmax, masked_fill and sdpa take an
// AttentionMask too, and check its polarity and axis; a plain bool tensor stays the escape hatch
// (docs/shapes.md, "Rules").
#pragma once

#include <stag/models/layers.hpp>

namespace stag {

enum class MaskPolarity : std::uint8_t { keep, ignore };
enum class MaskAxis : std::uint8_t { key, query };
constexpr MaskPolarity flipped(MaskPolarity p) {
  return p == MaskPolarity::keep ? MaskPolarity::ignore : MaskPolarity::keep;
}

// A boolean mask of shape S for attention scores [..., q_len, k_len] (S has rank 3:
// [batch|1, q_len|1, k_len], or [batch|1, q_len, 1] for a query mask).
template <class S, MaskPolarity P = MaskPolarity::keep, MaskAxis A = MaskAxis::key>
struct AttentionMask {
  using shape_type = S;
  static constexpr MaskPolarity polarity = P;
  static constexpr MaskAxis axis = A;
  static constexpr int rank = S::rank;
  Tensor<S, DType::boolean> values;
};

template <class T>
struct is_attention_mask : std::false_type {};
template <class S, MaskPolarity P, MaskAxis A>
struct is_attention_mask<AttentionMask<S, P, A>> : std::true_type {};
template <class T>
concept AttentionMaskType = is_attention_mask<std::remove_cvref_t<T>>::value;

// A [batch, seq] mask of tokens whose type says what true means: KeepTokens (true at real
// tokens, stag's convention) or PaddingTokens (true at padding, PyTorch's key_padding_mask).
template <class S, MaskPolarity P>
struct TokenMask {
  using shape_type = S;
  static constexpr MaskPolarity polarity = P;
  Tensor<S, DType::boolean> values;
};
template <class S>
using KeepTokens = TokenMask<S, MaskPolarity::keep>;
template <class S>
using PaddingTokens = TokenMask<S, MaskPolarity::ignore>;

// Graph inputs that are token masks: keep_input<"keep", Shape<batch, seq>>(g) is true at real
// tokens, padding_input<"pad", Shape<batch, seq>>(g) at padding.
template <fixed_string Name, class S>
constexpr auto keep_input(Builder& g) {
  auto m = input<Name, S, DType::boolean>(g, MaskRole::keep);
  return KeepTokens<typename decltype(m)::shape_type>{m};
}
template <fixed_string Name, class S>
constexpr auto padding_input(Builder& g) {
  auto m = input<Name, S, DType::boolean>(g, MaskRole::padding);
  return PaddingTokens<typename decltype(m)::shape_type>{m};
}
// Declares the polarity of a bool tensor computed in the graph (ids != pad_id, say).
template <MaskPolarity P, class S>
constexpr auto as_tokens(Tensor<S, DType::boolean> m) {
  return TokenMask<S, P>{m};
}

// `~m`: the same tokens with the opposite polarity (the values are negated).
template <class S, MaskPolarity P>
constexpr auto operator~(TokenMask<S, P> m) {
  return TokenMask<S, flipped(P)>{!m.values};
}
// Keep masks combine by & (a real token in both), padding masks by | (padding in either).
template <class SA, class SB>
constexpr auto operator&(KeepTokens<SA> a, KeepTokens<SB> b) {
  auto m = a.values & b.values;
  return KeepTokens<typename decltype(m)::shape_type>{m};
}
template <class SA, class SB>
constexpr auto operator|(PaddingTokens<SA> a, PaddingTokens<SB> b) {
  auto m = a.values | b.values;
  return PaddingTokens<typename decltype(m)::shape_type>{m};
}

namespace detail {
// A typed mask's values as a mask of polarity Want: negated when it has the other one (reached
// only after its polarity check has failed, so that the user's later lines still compile).
template <MaskPolarity Want, class M>
constexpr auto values_as(M m) {
  if constexpr (M::polarity == Want)
    return m.values;
  else
    return !m.values;
}
// Printed in errors (clang: polarity_shown<MaskPolarity::ignore>; g++: the text).
template <MaskPolarity P>
struct polarity_shown {
  static constexpr std::string_view shown = P == MaskPolarity::keep
                                                ? "a keep mask (true at real tokens)"
                                                : "a padding mask (true at padding)";
};
}  // namespace detail

// A [B, S] padding mask with true at real tokens, as a key mask [B, 1, S].
template <class S>
constexpr auto padding_keep(Tensor<S, DType::boolean> keep) {
  STAG_SHAPE_CHECK(S::rank == 2,
                   "stag::padding_keep: expects a [batch, seq] mask (true at real tokens)", S,
                   void);
  if constexpr (S::rank == 2) {
    auto m = unsqueeze<1>(keep);
    return AttentionMask<typename decltype(m)::shape_type>{m};
  } else {
    return AttentionMask<Shape<1, 1, 1>>{Tensor<Shape<1, 1, 1>, DType::boolean>{
        keep.b, full(*keep.b, Shape<1, 1, 1>::value, 1, DType::boolean).id}};
  }
}

// PyTorch's key_padding_mask [B, S] (true = padding, to be ignored) as stag's key mask
// [B, 1, S] (true = attend). PyTorch: nn.MultiheadAttention(..., key_padding_mask=pad).
template <class S>
constexpr auto from_key_padding_mask(Tensor<S, DType::boolean> pad) {
  return padding_keep(!pad);
}

// The typed forms: padding_keep takes KeepTokens, from_key_padding_mask PaddingTokens; the other
// polarity is one error that names both (flip it with `~`, or use the other converter).
template <class S, MaskPolarity P>
constexpr auto padding_keep(TokenMask<S, P> keep) {
  STAG_SHAPE_CHECK(P == MaskPolarity::keep,
                   "stag::padding_keep: wants a keep mask (true at real tokens) but got a padding "
                   "mask (true at padding); use from_key_padding_mask(pad) or padding_keep(~pad) "
                   "(mask, polarity)",
                   S, detail::polarity_shown<P>);
  return padding_keep(detail::values_as<MaskPolarity::keep>(keep));
}
template <class S, MaskPolarity P>
constexpr auto from_key_padding_mask(TokenMask<S, P> pad) {
  STAG_SHAPE_CHECK(P == MaskPolarity::ignore,
                   "stag::from_key_padding_mask: wants a padding mask (true at padding) but got a "
                   "keep mask (true at real tokens); use padding_keep(keep) (mask, polarity)",
                   S, detail::polarity_shown<P>);
  return padding_keep(!detail::values_as<MaskPolarity::ignore>(pad));
}

// A [B, S] mask of the queries to keep, as a query mask [B, S, 1]: masked query rows of the
// attention weights are zeros. The only way to mask along the query axis.
template <class S>
constexpr auto query_keep(Tensor<S, DType::boolean> keep) {
  STAG_SHAPE_CHECK(S::rank == 2, "stag::query_keep: expects a [batch, seq] mask", S, void);
  auto m = unsqueeze<-1>(keep);
  return AttentionMask<typename decltype(m)::shape_type, MaskPolarity::keep, MaskAxis::query>{m};
}

template <class S, MaskPolarity P>
constexpr auto query_keep(TokenMask<S, P> keep) {
  STAG_SHAPE_CHECK(P == MaskPolarity::keep,
                   "stag::query_keep: wants a keep mask (true at real tokens) but got a padding "
                   "mask (true at padding); use query_keep(~pad) (mask, polarity)",
                   S, detail::polarity_shown<P>);
  return query_keep(detail::values_as<MaskPolarity::keep>(keep));
}

// A causal key mask [1, Len, Len]: query q attends keys k <= q.
template <auto Len>
constexpr auto causal_keep(Builder& g) {
  auto m = unsqueeze<0>(causal_mask<Len>(g));
  return AttentionMask<typename decltype(m)::shape_type>{m};
}

// Declares a mask by its polarity without changing its values.
template <MaskPolarity P, class S>
constexpr auto as_mask(Tensor<S, DType::boolean> m) {
  return AttentionMask<S, P>{m};
}

// `~m`: the same positions with the opposite polarity (the values are negated).
template <class S, MaskPolarity P, MaskAxis A>
constexpr auto operator~(AttentionMask<S, P, A> m) {
  return AttentionMask<S, flipped(P), A>{!m.values};
}

// Keep masks combine by & (attend where both keep), ignore masks by | (ignore where either
// does). A key mask & a query mask masks both axes (a key mask again).
template <class SA, MaskAxis AA, class SB, MaskAxis AB>
constexpr auto operator&(AttentionMask<SA, MaskPolarity::keep, AA> a,
                         AttentionMask<SB, MaskPolarity::keep, AB> b) {
  auto m = a.values & b.values;
  constexpr MaskAxis axis =
      AA == MaskAxis::query && AB == MaskAxis::query ? MaskAxis::query : MaskAxis::key;
  return AttentionMask<typename decltype(m)::shape_type, MaskPolarity::keep, axis>{m};
}
template <class SA, MaskAxis AA, class SB, MaskAxis AB>
constexpr auto operator|(AttentionMask<SA, MaskPolarity::ignore, AA> a,
                         AttentionMask<SB, MaskPolarity::ignore, AB> b) {
  auto m = a.values | b.values;
  constexpr MaskAxis axis =
      AA == MaskAxis::query && AB == MaskAxis::query ? MaskAxis::query : MaskAxis::key;
  return AttentionMask<typename decltype(m)::shape_type, MaskPolarity::ignore, axis>{m};
}

// ---- the ops with typed masks ---------------------------------------------------------------
// An AttentionMask [B|1, Sq|1, Sk] masks scores [B, H, Sq, Sk] (a heads axis is added) or
// [B, Sq, Sk]. softmax and sdpa keep where their mask is true and take keep masks; masked_fill
// fills where its mask is true and takes ignore masks. The other polarity is one error (flip the
// mask with `~`); so is a softmax of masked scores along another axis than the keys.
namespace detail {
template <int Rank, class M>
constexpr auto mask_values_for(const M& m) {
  if constexpr (Rank == 4 && M::rank == 3)
    return unsqueeze<1>(m.values);
  else
    return m.values;
}
}  // namespace detail

template <int Axis, class S, DType T, class SM, MaskPolarity P, MaskAxis A>
constexpr auto softmax(Tensor<S, T> x, AttentionMask<SM, P, A> m) {
  constexpr int ax = normalize_axis(Axis, S::rank);
  constexpr bool along_keys = ax < 0 || ax == S::rank - 1;
  STAG_SHAPE_CHECK(P == MaskPolarity::keep,
                   "stag::softmax: its mask keeps where true, but this is an ignore mask (true = "
                   "masked out); pass ~mask (scores, mask)",
                   S, SM);
  STAG_SHAPE_CHECK(P != MaskPolarity::keep || along_keys,
                   "stag::softmax: the scores are masked along their last axis (the keys) but "
                   "the softmax runs along another axis; an attention softmax runs along the "
                   "keys: softmax<-1> (scores, mask)",
                   S, SM);
  if constexpr (P == MaskPolarity::keep && along_keys)
    return softmax<Axis>(x, detail::mask_values_for<S::rank>(m));
  else
    return x;
}

template <class S, DType T, class SM, MaskPolarity P, MaskAxis A>
constexpr auto masked_fill(Tensor<S, T> x, AttentionMask<SM, P, A> m, double value) {
  STAG_SHAPE_CHECK(P == MaskPolarity::ignore,
                   "stag::masked_fill: it fills where its mask is true, but this is a keep mask "
                   "(true = attend); pass ~mask (scores, mask)",
                   S, SM);
  if constexpr (P == MaskPolarity::ignore)
    return masked_fill(x, detail::mask_values_for<S::rank>(m), value);
  else
    return x;
}

template <class SQ, class SK, class SV, DType T, class SM, MaskPolarity P, MaskAxis A>
constexpr auto sdpa(Tensor<SQ, T> q, Tensor<SK, T> k, Tensor<SV, T> v, AttentionMask<SM, P, A> m,
                    const SdpaOptions& o = {}) {
  STAG_SHAPE_CHECK(P == MaskPolarity::keep,
                   "stag::sdpa: its mask keeps where true, but this is an ignore mask (true = "
                   "masked out); pass ~mask (q, mask)",
                   SQ, SM);
  if constexpr (P == MaskPolarity::keep)
    return sdpa(q, k, v, detail::mask_values_for<SQ::rank>(m), o);
  else
    return sdpa(q, k, v, o);
}

}  // namespace stag
