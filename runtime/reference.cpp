// The reference evaluator: binds symbols, then runs each node's reference kernel in order.
#include <array>

#include <stag/ops/op_traits.hpp>
#include <stag/runtime/reference.hpp>

namespace stag {

const Array& Evaluation::operator[](std::string_view name) const {
  int n = g_.output(name);
  if (n < 0) n = g_.find(name);
  if (n < 0) throw Error("stag: no node or output called '" + std::string(name) + "'");
  return node(n);
}

const Array& Evaluation::result() const {
  if (g_.result < 0) throw Error("stag: the graph has no result node");
  return node(g_.result);
}

Evaluation evaluate_reference(const GraphView& g, const NamedArrays& inputs,
                              const NamedArrays& params, const EvalOptions& opts) {
  const Bindings b = bind_symbols(g, inputs, &params, opts.dims, opts.f64);
  const RunState state{opts.seed, opts.step, opts.training, opts.row_offset, opts.rows};
  auto promote = [&](DType t) { return opts.f64 && t == DType::f32 ? DType::f64 : t; };
  std::vector<Array> values(static_cast<std::size_t>(g.size()));
  std::vector<TensorView> in_views;
  // Nodes come after their inputs, so one backward sweep finds what the result needs.
  std::vector<char> needed(static_cast<std::size_t>(g.size()), opts.result_only ? 0 : 1);
  if (opts.result_only) {
    if (g.result < 0) throw Error("stag: result_only: the graph has no result node");
    needed[static_cast<std::size_t>(g.result)] = 1;
    for (int n = g.size() - 1; n >= 0; --n)
      if (needed[static_cast<std::size_t>(n)])
        for (int k = 0; k < g.node(n).nin; ++k)
          needed[static_cast<std::size_t>(g.node(n).in[k])] = 1;
  }
  for (int n = 0; n < g.size(); ++n) {
    if (!needed[static_cast<std::size_t>(n)]) continue;
    const Node& node = g.node(n);
    const DType t = promote(node.dtype);
    Array& out = values[static_cast<std::size_t>(n)];
    if (node.flags & kFlagInput) {
      out = inputs.find(g.name(n))->second.to(t);
      continue;
    }
    if (node.flags & (kFlagParam | kFlagState)) {
      out = params.find(g.name(n))->second.to(t);
      continue;
    }
    const KernelFn fn = kReferenceKernels[node.op.value];
    if (fn == nullptr)
      throw Error("stag: op '" + std::string(op_name(node.op)) + "' (node " + g.name(n) +
                  ") has no reference kernel");
    out = Array(t, concrete_dims(g.shape(n), b));
    in_views.clear();
    for (int k = 0; k < node.nin; ++k)
      in_views.push_back(values[static_cast<std::size_t>(node.in[k])].view());
    const KernelArgs args{g, n, in_views, out.view(), state};
    fn(args);
  }
  return Evaluation(g, std::move(values));
}

}  // namespace stag
