// Optimizer updates as graph nodes, appended to a training graph by stag::train_step<...>()
// (autodiff/optimizer.hpp). Each node updates one parameter and its state in place and outputs
// a dummy [] scalar; the planner orders it after every other reader of the parameter.
//   sgd_update(p, g, buf, lr, gscale):     buf = momentum*buf + g';  p -= lr * (nesterov ? g' +
//   momentum*buf : buf) adam_update(p, g, m, v, lr, step, gscale): Adam / AdamW with bias
//   correction
// g' = g * gscale (gradient clipping by global norm); when gscale is not finite (NaN or inf in
// the loss or the gradients) the update is skipped and nothing changes, so a bad step loses
// nothing. Weight decay: L2 (added to g') for SGD and Adam, decoupled (p -= lr*wd*p) for AdamW;
// a parameter created with decay = false (biases, norm gains) gets none.
// Attrs sgd: f[0] momentum, f[1] weight decay, i[0] nesterov.
// Attrs adam: f[0] beta1, f[1] beta2, f[2] eps, f[3] weight decay, i[0] decoupled (AdamW).
// Runtime settings: an optional last input, f32 [2] (momentum, weight decay) for SGD or [4]
// (beta1, beta2, eps, weight decay) for Adam, replaces those attrs; then i[1] = 1 when the
// parameter decays (the input's weight decay applies) and 0 when it does not.
#pragma once

#include <stag/ops/op.hpp>

namespace stag {

template <>
struct OpDef<OpId::sgd_update> {
  static constexpr OpInfo info{"sgd_update", "sgd", -1, 0xff};  // 5 or 6 inputs
  static constexpr std::uint8_t writes = 0b101;                 // p, buf
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

template <>
struct OpDef<OpId::adam_update> {
  static constexpr OpInfo info{"adam_update", "adam", -1, 0xff};  // 7 or 8 inputs
  static constexpr std::uint8_t writes = 0b1101;                  // p, m, v
  static void reference(const KernelArgs&);
  static std::unique_ptr<Kernel> cpu(const KernelNode&);
};

constexpr Ref sgd_update(Ref p, Ref g, Ref buf, Ref lr, Ref gscale, double momentum,
                         double weight_decay, bool nesterov) {
  Attrs a;
  a.f[0] = momentum;
  a.f[1] = weight_decay;
  a.i[0] = nesterov;
  return emit(OpId::sgd_update, "sgd", {p, g, buf, lr, gscale}, shape_ok(ShapeV{}, DType::f32), &a);
}

constexpr Ref adam_update(Ref p, Ref g, Ref m, Ref v, Ref lr, Ref step, Ref gscale, double beta1,
                          double beta2, double eps, double weight_decay, bool decoupled) {
  Attrs a;
  a.f[0] = beta1;
  a.f[1] = beta2;
  a.f[2] = eps;
  a.f[3] = weight_decay;
  a.i[0] = decoupled;
  return emit(OpId::adam_update, "adam", {p, g, m, v, lr, step, gscale},
              shape_ok(ShapeV{}, DType::f32), &a);
}

// The same with the settings read at run time from `hparams` (f32 [2]: momentum, weight decay).
constexpr Ref sgd_update(Ref p, Ref g, Ref buf, Ref lr, Ref gscale, Ref hparams, bool decay,
                         bool nesterov) {
  Attrs a;
  a.i[0] = nesterov;
  a.i[1] = decay;
  const ShapeResult r = hparams.shape().rank == 1 && hparams.shape().dims[0] == DimV{2}
                            ? shape_ok(ShapeV{}, DType::f32)
                            : shape_fail(ShapeErr::rank);
  return emit(OpId::sgd_update, "sgd", {p, g, buf, lr, gscale, hparams}, r, &a);
}

// The same with the settings read at run time from `hparams` (f32 [4]: beta1, beta2, eps,
// weight decay).
constexpr Ref adam_update(Ref p, Ref g, Ref m, Ref v, Ref lr, Ref step, Ref gscale, Ref hparams,
                          bool decay, bool decoupled) {
  Attrs a;
  a.i[0] = decoupled;
  a.i[1] = decay;
  const ShapeResult r = hparams.shape().rank == 1 && hparams.shape().dims[0] == DimV{4}
                            ? shape_ok(ShapeV{}, DType::f32)
                            : shape_fail(ShapeErr::rank);
  return emit(OpId::adam_update, "adam", {p, g, m, v, lr, step, gscale, hparams}, r, &a);
}

}  // namespace stag
