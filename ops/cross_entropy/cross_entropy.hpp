// cross_entropy: mean negative log-likelihood of integer labels under softmax(logits).
//   cross_entropy(logits [B, S, C], labels [B, S] i32|i64, ignore_index = -100) -> []
//   cross_entropy(logits [C], label [] i32)                                    -> []
// The classes are the last dim of the logits; labels have exactly the logits' leading dims and
// are i32 or i64. loss = sum over kept positions of (logsumexp(logits) - logits[label]) divided
// by the number of kept positions, where a position is kept unless its label == ignore_index.
// NOTE: when every position is ignored the loss is 0 (and so is its gradient), not the NaN
// (0 / 0) that PyTorch returns: a fully padded batch then cannot poison a training run.
// A label outside [0, C) that is not ignore_index is a run-time stag::Error naming the node,
// the position, the label and C. PyTorch: F.cross_entropy(logits.view(-1, C), labels.view(-1),
// ignore_index=ignore_index) (PyTorch puts the classes at dim 1 for rank > 2; stag at the end).
// Label smoothing (CrossEntropyOptions::label_smoothing = e, in [0, 1)): the target of a kept
// position is (1 - e) onehot(label) + e / C, so its loss is
// logsumexp(logits) - (1 - e) logits[label] - (e / C) sum(logits), as PyTorch's
// F.cross_entropy(..., label_smoothing=e).
// Attrs: i[0] = ignore_index, f[0] = label smoothing. Gradient: cross_entropy_backward(logits,
// labels, g).
#pragma once

#include <stag/ops/constant/constant.hpp>
#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::cross_entropy> {
  static constexpr OpInfo info{"cross_entropy", "xent", 2, 0b10};
  static constexpr void vjp(VjpCtx&);
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

// dlogits = (softmax(logits) - target) * g / count (target as above), zero rows at ignored
// positions; count is the number of kept positions (recounted by the kernel). Inputs: logits,
// labels, g ([]). It needs the forward input (logits), not the loss. Attrs as cross_entropy's.
template <>
struct OpDef<OpId::cross_entropy_backward> {
  static constexpr OpInfo info{"cross_entropy_backward", "dxent", 3, 0b010};
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

namespace rules {
constexpr ShapeResult cross_entropy(const ShapeV& logits, DType tl, const ShapeV& labels,
                                    DType ty) {
  if (tl != DType::f32 && tl != DType::f64) return shape_fail(ShapeErr::dtype);
  if (!is_integer(ty)) return shape_fail(ShapeErr::index_dtype);
  if (logits.rank < 1) return shape_fail(ShapeErr::rank);
  if (labels.rank != logits.rank - 1) return shape_fail(ShapeErr::labels);
  for (int i = 0; i < labels.rank; ++i)
    if (!(labels.dims[i] == logits.dims[i])) return shape_fail(ShapeErr::labels);
  return shape_ok(ShapeV{}, tl);
}
}  // namespace rules

struct CrossEntropyOptions {
  std::int64_t ignore_index = -100;
  double label_smoothing = 0.0;  // in [0, 1)
};

constexpr Ref cross_entropy(Ref logits, Ref labels, CrossEntropyOptions o) {
  if (!(o.label_smoothing >= 0.0 && o.label_smoothing < 1.0))
    throw GraphError(
        "stag::cross_entropy: label_smoothing must be in [0, 1) (the share of the target spread "
        "over all classes)");
  Attrs a;
  a.i[0] = o.ignore_index;
  a.f[0] = o.label_smoothing;
  return emit(OpId::cross_entropy, "cross_entropy", {logits, labels},
              rules::cross_entropy(logits.shape(), logits.dtype(), labels.shape(), labels.dtype()),
              &a);
}
constexpr Ref cross_entropy(Ref logits, Ref labels, std::int64_t ignore_index = -100) {
  return cross_entropy(logits, labels, CrossEntropyOptions{.ignore_index = ignore_index});
}
// Attrs: the forward's (ignore_index, label smoothing).
constexpr Ref cross_entropy_backward(Ref logits, Ref labels, Ref g, const Attrs& a) {
  return emit(OpId::cross_entropy_backward, "cross_entropy_backward", {logits, labels, g},
              shape_ok(logits.shape(), logits.dtype()), &a);
}

template <class SL, DType TL, class SY, DType TY>
constexpr auto cross_entropy(Tensor<SL, TL> logits, Tensor<SY, TY> labels, CrossEntropyOptions o) {
  constexpr ShapeResult r = rules::cross_entropy(SL::value, TL, SY::value, TY);
  STAG_SHAPE_CHECK(r.err != ShapeErr::dtype, "stag::cross_entropy: the logits must be f32 or f64",
                   with_dtype<SL, TL>, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::index_dtype,
                   "stag::cross_entropy: labels must be i32 or i64 class indices (for soft "
                   "targets, write -sum(target * log_softmax(logits)))",
                   with_dtype<SL, TL>, with_dtype<SY, TY>);
  STAG_SHAPE_CHECK(r.err != ShapeErr::rank,
                   "stag::cross_entropy: the logits need a class dim [..., C]", SL, void);
  STAG_SHAPE_CHECK(r.err != ShapeErr::labels,
                   "stag::cross_entropy: the labels' shape must be the logits' shape without its "
                   "last (class) dim: logits [B, S, C] take labels [B, S]",
                   SL, SY);
  if constexpr (r.ok())
    return Tensor<Shape<>, TL>{logits.b, cross_entropy(logits.ref(), labels.ref(), o).id};
  else
    return Tensor<Shape<>, TL>{logits.b, scalar(*logits.b, 0.0, TL).id};  // one error, not two
}
template <class SL, DType TL, class SY, DType TY>
constexpr auto cross_entropy(Tensor<SL, TL> logits, Tensor<SY, TY> labels,
                             std::int64_t ignore_index = -100) {
  return cross_entropy(logits, labels, CrossEntropyOptions{.ignore_index = ignore_index});
}

}  // namespace stag
