// Training graphs with the optimizer inside: forward, backward, gradient clipping by global
// norm, and one update node per parameter, all one compile-time graph that the runtime plans
// and runs as a single step. The learning rate and the step number are inputs ("lr", "step"),
// so schedules need no re-planning.
//   constexpr auto step = stag::train_step<model, stag::AdamW{.weight_decay = 0.01}>();
// Outputs: the loss (result), `grad/<param>` per parameter, and "grad_norm" (before clipping).
// With `.hparams_as_inputs = true` the optimizer's settings are inputs too ([] f32 each:
// "clip_norm", and "beta1", "beta2", "eps", "weight_decay" for Adam/AdamW, "momentum",
// "weight_decay" for SGD), so one compiled graph serves every setting; the struct's values are
// then only the defaults that stag::Trainer feeds. `update<G, Opt>()` is the optimizer alone,
// fed with gradients (gradient accumulation).
// With `.in_backward = true` each parameter is updated as soon as its gradient is final, in the
// backward pass, so the planner can reuse a gradient's memory at once instead of holding every
// gradient until the end (docs/training.md, "Updating in the backward pass"). The values are the
// same; what changes: no clipping (it needs the global norm first), no `grad/<param>` outputs,
// and a non-finite loss skips every update while a non-finite gradient skips only its own
// parameter's. "grad_norm" is still an output.
#pragma once

#include <algorithm>

#include <stag/autodiff/autodiff.hpp>
#include <stag/ops/optim/optim.hpp>

namespace stag {

struct Sgd {
  double momentum = 0.9;
  double weight_decay = 0.0;  // L2, added to the gradient
  bool nesterov = false;
  double clip_norm = 0.0;          // clip gradients to this global norm; 0: off
  bool hparams_as_inputs = false;  // momentum, weight_decay, clip_norm are graph inputs
  bool in_backward = false;        // update each parameter once its gradient is final
};

struct Adam {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.0;  // L2, added to the gradient
  double clip_norm = 0.0;
  bool hparams_as_inputs = false;  // beta1, beta2, eps, weight_decay, clip_norm are graph inputs
  bool in_backward = false;        // update each parameter once its gradient is final
};

struct AdamW {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weight_decay = 0.01;  // decoupled: p -= lr * wd * p
  double clip_norm = 0.0;
  bool hparams_as_inputs = false;  // beta1, beta2, eps, weight_decay, clip_norm are graph inputs
  bool in_backward = false;        // update each parameter once its gradient is final
};

namespace detail {

// Optimizer state for parameter p: a zero-initialised tensor of p's shape named
// `<p's name>.<word>`, held with the parameters (kFlagState).
constexpr Ref state_like(Builder& b, int p, std::string_view word) {
  const Node pn = b.node(p);
  const Attrs zeros = param_attrs(kZeros);
  const std::int32_t scope = b.child_scope(pn.scope, pn.leaf, -1);
  const int id = b.add(code(OpId::parameter), {}, b.shape(p), pn.dtype, &zeros, word, kFlagState);
  b.nodes[static_cast<std::size_t>(id)].scope = scope;
  return Ref{&b, id};
}

constexpr Ref scalar_input(Builder& b, std::string_view name) {
  return Ref{&b, b.add(code(OpId::input), {}, ShapeV{}, DType::f32, nullptr, name, kFlagInput)};
}

// The runtime settings of an update node, packed into one [n] tensor (one node input).
constexpr Ref pack_scalars(std::initializer_list<Ref> parts) {
  std::vector<Ref> v;
  for (Ref r : parts) v.push_back(unsqueeze(r, 0));
  return concat(std::span<const Ref>(v), 0);
}

template <class Opt>
constexpr void append_optimizer(Builder& b, const Opt& opt) {
  // Inputs of the step.
  constexpr bool adam = !std::is_same_v<Opt, Sgd>;
  const int lr = b.add(code(OpId::input), {}, ShapeV{}, DType::f32, nullptr, "lr", kFlagInput);
  const int step =
      adam ? b.add(code(OpId::input), {}, ShapeV{}, DType::f32, nullptr, "step", kFlagInput) : -1;
  Ref hparams, clip_in;
  if (opt.hparams_as_inputs) {
    if (!opt.in_backward) clip_in = scalar_input(b, "clip_norm");
    if constexpr (adam)
      hparams = pack_scalars({scalar_input(b, "beta1"), scalar_input(b, "beta2"),
                              scalar_input(b, "eps"), scalar_input(b, "weight_decay")});
    else
      hparams = pack_scalars({scalar_input(b, "momentum"), scalar_input(b, "weight_decay")});
  }
  std::vector<std::pair<int, int>> pg;  // (parameter, gradient)
  for (const OutputEntry& o : b.outputs)
    if (o.grad_of >= 0 && (b.node(o.grad_of).flags & kFlagParam))
      pg.emplace_back(o.grad_of, o.node);
  b.stamp_flags = kFlagOptimizer;
  // Global gradient norm; NaN or inf anywhere makes gscale non-finite and skips every update.
  Ref total{};
  std::vector<Ref> squares;  // per parameter
  for (const auto& [p, g] : pg) {
    const Ref gr{&b, g};
    const std::uint32_t all = (1u << gr.rank()) - 1u;
    const Ref sq = gr.rank() ? sum(gr * gr, all, false) : gr * gr;
    squares.push_back(sq);
    total = total.valid() ? total + sq : sq;
  }
  if (!total.valid()) return;  // no parameters
  const Ref norm = sqrt(total);
  b.add_output(norm.id, "grad_norm");
  if (opt.in_backward) {
    // The gradients are not outputs: each one's memory is free once its update has run.
    std::erase_if(b.outputs, [&](const OutputEntry& o) {
      return std::any_of(pg.begin(), pg.end(), [&](const auto& e) { return e.second == o.node; });
    });
  }
  // NOTE: `norm * 0` is NaN when the norm is NaN or infinite (squares can overflow while every
  // gradient is finite); adding it makes gscale non-finite, which skips every update. Without
  // it, clipping would turn an infinite norm into gscale = 0 and still decay and move weights.
  Ref gscale;  // in_backward: one per parameter, below
  if (opt.in_backward) {
    gscale = {};
  } else if (opt.hparams_as_inputs) {
    const Ref zero = scalar(b, 0.0);
    const Ref safe_clip = where(lt(zero, clip_in), clip_in, scalar(b, 1.0));  // no 0 / 0
    gscale =
        where(lt(zero, clip_in), safe_clip / (safe_clip + relu(norm - safe_clip)), scalar(b, 1.0)) +
        norm * 0.0;  // clip_norm <= 0: off
  } else if (opt.clip_norm > 0) {
    const Ref clip = scalar(b, opt.clip_norm);
    gscale = clip / (clip + relu(norm - clip)) + norm * 0.0;
  } else {
    gscale = norm * 0.0 + 1.0;  // 1, or NaN when the norm is not finite
  }
  const Ref loss = b.result >= 0 ? Ref{&b, b.result} : Ref{};
  for (std::size_t i = 0; i < pg.size(); ++i) {
    const auto [p, g] = pg[i];
    const bool decay = b.attr(p).i[1] != 0;
    const Ref pr{&b, p}, gr{&b, g};
    b.current_scope = b.node(p).scope;
    if (opt.in_backward) {
      // 1, or NaN (skip) when the loss or this parameter's gradient is not finite: the update
      // waits for this gradient only, not for the global norm.
      const Ref finite = loss.valid() ? squares[i] + loss : squares[i];
      gscale = finite * 0.0 + 1.0;
    }
    if constexpr (std::is_same_v<Opt, Sgd>) {
      const Ref buf = state_like(b, p, "momentum");
      if (opt.hparams_as_inputs)
        sgd_update(pr, gr, buf, Ref{&b, lr}, gscale, hparams, decay, opt.nesterov);
      else
        sgd_update(pr, gr, buf, Ref{&b, lr}, gscale, opt.momentum, decay ? opt.weight_decay : 0.0,
                   opt.nesterov);
    } else {
      constexpr bool decoupled = std::is_same_v<Opt, AdamW>;
      const Ref m = state_like(b, p, "adam_m"), v = state_like(b, p, "adam_v");
      if (opt.hparams_as_inputs)
        adam_update(pr, gr, m, v, Ref{&b, lr}, Ref{&b, step}, gscale, hparams, decay, decoupled);
      else
        adam_update(pr, gr, m, v, Ref{&b, lr}, Ref{&b, step}, gscale, opt.beta1, opt.beta2, opt.eps,
                    decay ? opt.weight_decay : 0.0, decoupled);
    }
  }
  b.current_scope = 0;
  b.stamp_flags = 0;
}

template <const auto& G, auto Opt>
constexpr Builder build_train() {
  Builder b = builder_from(G.view());
  append_backward(b);
  append_optimizer(b, Opt);
  prune(b);
  return b;
}

// The optimizer of model G alone: G's parameters, their optimizer state, and one input
// `<param>.grad` per parameter (the gradient to apply), plus "lr" and "step" (and the settings
// of `hparams_as_inputs`). For gradient accumulation: the gradients of several micro-batches
// (from grad<G>()) are summed by the caller and applied by one run of this graph.
template <const auto& G, auto Opt>
constexpr Builder build_update() {
  // Accumulated gradients are all there before the update: in_backward changes nothing then.
  constexpr auto opt = [] {
    auto o = Opt;
    o.in_backward = false;
    return o;
  }();
  const GraphView g = G.view();
  Builder b;
  b.shapes.assign(g.shapes.begin(), g.shapes.end());
  b.attrs.assign(g.attrs.begin(), g.attrs.end());
  b.scopes.assign(g.scopes.begin(), g.scopes.end());
  b.dim_names.assign(g.dim_names.begin(), g.dim_names.end());
  for (int n = 0; n < g.size(); ++n) {
    if (!(g.node(n).flags & kFlagParam)) continue;
    Node nd =
        g.node(n);  // a parameter has no inputs: its shape, attrs and scope indices carry over
    nd.grad_of = -1;
    b.nodes.push_back(nd);
    // Only the symbols of parameter shapes: the model's batch and sequence dims are not bound here.
    const ShapeV& sh = g.shape(n);
    for (int i = 0; i < sh.rank; ++i)
      for (int k = 0; k < sh.dims[i].nsym; ++k)
        for (const SymEntry& e : g.syms)
          if (e.id == sh.dims[i].sym[k]) b.add_sym(e.id, e.name);
  }
  const int num_params = b.size();
  for (int p = 0; p < num_params; ++p) {
    const Node pn = b.node(p);
    b.current_scope = b.child_scope(pn.scope, pn.leaf, -1);
    const int in = b.add(code(OpId::input), {}, b.shape(p), pn.dtype, nullptr, "grad", kFlagInput);
    b.add_output(in, {}, p);
  }
  b.current_scope = 0;
  append_optimizer(b, opt);
  // The gradient outputs only told append_optimizer which input belongs to which parameter.
  std::erase_if(b.outputs, [](const OutputEntry& o) { return o.grad_of >= 0; });
  return b;
}

}  // namespace detail

// The optimizer alone (see detail::build_update): inputs `<param>.grad`, "lr", "step".
template <const auto& G, auto Opt>
consteval auto update() {
  return freeze_once<&detail::build_update<G, Opt>, derived_bound(G.view(), 2)>();
}

// One training step of model G (whose result is the loss) with optimizer Opt (Sgd, Adam, AdamW).
template <const auto& G, auto Opt>
consteval auto train_step() {
  using O = std::remove_cvref_t<decltype(Opt)>;
  static_assert(std::is_same_v<O, Sgd> || std::is_same_v<O, Adam> || std::is_same_v<O, AdamW>,
                "stag::train_step: the optimizer must be stag::Sgd, stag::Adam or stag::AdamW");
  static_assert(!(Opt.in_backward && Opt.clip_norm > 0),
                "stag::train_step: in_backward updates each parameter before the global gradient "
                "norm is known, so it cannot clip; set clip_norm = 0 or in_backward = false");
  // A bf16 parameter is one error that names it (see grad()); the model itself is returned so
  // that the lines using the result do not fail too.
  constexpr detail::Text bad = detail::bf16_param_text(G.view());
  if constexpr (bad.n > 0)
    return (void)detail::bf16_param_report<bad>::size, G;
  else  // One build (see BoundedGraph); two only if the training graph outgrows its bound.
    return freeze_once<&detail::build_train<G, Opt>, derived_bound(G.view(), 6)>();
}

}  // namespace stag
