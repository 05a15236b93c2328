// Attention masks that say what they mean: AttentionMask carries in its type its polarity (keep:
// true = attend, stag's convention; ignore: true = masked out, PyTorch's key_padding_mask) and
// which axis its last dim covers (the key axis, or the query axis when asked for by name).
// Make them with padding_keep, from_key_padding_mask, causal_keep or query_keep; combine by &.
#pragma once

#include <stag/models/layers.hpp>

namespace stag {

enum class MaskPolarity : std::uint8_t { keep, ignore };
enum class MaskAxis : std::uint8_t { key, query };

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

// A [B, S] mask of the queries to keep, as a query mask [B, S, 1]: masked query rows of the
// attention weights are zeros. The only way to mask along the query axis.
template <class S>
constexpr auto query_keep(Tensor<S, DType::boolean> keep) {
  STAG_SHAPE_CHECK(S::rank == 2, "stag::query_keep: expects a [batch, seq] mask", S, void);
  auto m = unsqueeze<-1>(keep);
  return AttentionMask<typename decltype(m)::shape_type, MaskPolarity::keep, MaskAxis::query>{m};
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
  constexpr MaskPolarity flipped =
      P == MaskPolarity::keep ? MaskPolarity::ignore : MaskPolarity::keep;
  return AttentionMask<S, flipped, A>{!m.values};
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

}  // namespace stag
