// What every op provides: OpDef<OpId::x> with its OpInfo, a constexpr shape rule, an optional
// VJP written as graph-building code, and kernels. Shape errors are ShapeErr codes so that the
// typed front-end can turn each into a static_assert with a literal message.
#pragma once

#include <initializer_list>
#include <memory>
#include <string_view>

#include <stag/graph/algebra.hpp>
#include <stag/graph/report.hpp>
#include <stag/graph/tensor.hpp>
#include <stag/ops/op_list.hpp>

namespace stag {

// Static facts about an op, checked against every backend's table at compile time.
struct OpInfo {
  std::string_view name;   // as printed in errors and pictures
  std::string_view label;  // short DOT label
  std::int8_t arity = 1;   // number of inputs; -1 when variable
  // Bit k set: input k never receives a gradient (ids, masks, labels, lengths).
  std::uint8_t no_grad = 0;
};

// The VJP context: the forward node, the gradient of its output, and one gradient slot per
// input for the rule to fill with graph-building code (see docs/autodiff.md).
struct VjpCtx {
  Builder* b = nullptr;
  std::int32_t node = -1;
  std::int32_t dy = -1;
  Ref grads[kMaxInputs] = {};

  constexpr Ref x(int k) const { return Ref{b, b->node(node).in[k]}; }
  constexpr Ref y() const { return Ref{b, node}; }
  constexpr Ref g() const { return Ref{b, dy}; }
  constexpr const Attrs& attr() const { return b->attr(node); }
  constexpr int nin() const { return b->node(node).nin; }
};
using VjpFn = void (*)(VjpCtx&);

// Arguments of a reference kernel; defined in ops/kernel.hpp (run-time code).
struct KernelArgs;
using KernelFn = void (*)(const KernelArgs&);
// A backend's kernel of one planned node (ops/kernel_node.hpp): OpDef<Id>::cpu builds the CPU's.
class Kernel;
struct KernelNode;

// Specialised once per op in ops/<name>/<name>.hpp.
template <OpId Id>
struct OpDef;

// Stops graph building with a message naming the error; at compile time the compiler shows
// the line of the failing throw, which carries the text.
constexpr void raise_shape_error(ShapeErr e) {
  switch (e) {
    case ShapeErr::ok:
      return;
    case ShapeErr::rank:
      throw GraphError("stag: wrong rank for this op");
    case ShapeErr::broadcast:
      throw GraphError("stag: shapes are not broadcastable");
    case ShapeErr::inner_dim:
      throw GraphError("stag: matmul inner dimensions differ");
    case ShapeErr::batch_dims:
      throw GraphError("stag: matmul batch dims not broadcastable");
    case ShapeErr::axis:
      throw GraphError("stag: axis out of range");
    case ShapeErr::permutation:
      throw GraphError("stag: not a permutation of the axes");
    case ShapeErr::numel:
      throw GraphError("stag: view changes the element count");
    case ShapeErr::symbols:
      throw GraphError("stag: view drops or adds a symbolic dim");
    case ShapeErr::order:
      throw GraphError("stag: view moves an axis past another; transpose first");
    case ShapeErr::regroup:
      throw GraphError("stag: view regroups axes (neither a split nor a merge)");
    case ShapeErr::dim_names:
      throw GraphError("stag: view splits or merges named dims out of order");
    case ShapeErr::factor_order:
      throw GraphError("stag: view splits or merges a product's symbolic factors out of order");
    case ShapeErr::not_one:
      throw GraphError("stag: squeeze of a dim that is not 1");
    case ShapeErr::odd_dim:
      throw GraphError("stag: a dim that must be even is odd");
    case ShapeErr::seq_axis:
      throw GraphError(
          "stag: rope rotates along the second-to-last axis, which must be the sequence");
    case ShapeErr::expand:
      throw GraphError("stag: expand of a dim that is not 1");
    case ShapeErr::slice_range:
      throw GraphError("stag: slice out of range");
    case ShapeErr::concat_dims:
      throw GraphError("stag: concat of tensors whose other dims differ");
    case ShapeErr::concat_symbolic:
      throw GraphError("stag: concat along different symbols");
    case ShapeErr::dtype:
      throw GraphError("stag: unsupported dtype for this op");
    case ShapeErr::mask_rank:
      throw GraphError("stag: mask rank differs from the input rank");
    case ShapeErr::mask_dtype:
      throw GraphError("stag: mask must be bool");
    case ShapeErr::mask_broadcast:
      throw GraphError("stag: mask does not broadcast to the input");
    case ShapeErr::norm_dims:
      throw GraphError("stag: norm weight is not the trailing dims");
    case ShapeErr::labels:
      throw GraphError("stag: labels do not match the logits");
    case ShapeErr::too_many_syms:
      throw GraphError("stag: a dim has more than 3 symbols");
    case ShapeErr::arity:
      throw GraphError("stag: wrong number of inputs");
    case ShapeErr::shape_mismatch:
      throw GraphError("stag: operand shapes must be equal");
    case ShapeErr::index_dtype:
      throw GraphError("stag: ids or labels must be i32 or i64");
  }
}

// Appends a node for op `id` whose shape rule gave `r`; the name defaults to the op's name.
constexpr Ref emit(OpId id, std::string_view name, std::initializer_list<Ref> in,
                   const ShapeResult& r, const Attrs* attrs = nullptr) {
  raise_shape_error(r.err);
  Builder* b = in.size() ? in.begin()->b : nullptr;
  if (b == nullptr) throw GraphError("stag: emit without inputs needs a builder");
  int ids[kMaxInputs] = {};
  std::size_t k = 0;
  for (const Ref& x : in) ids[k++] = x.id;
  const int id_n = b->add(code(id), std::span<const int>(ids, k), r.shape, r.dtype, attrs, name);
  return Ref{b, id_n};
}

// emit over a counted list of inputs (an op whose input count depends on its options).
constexpr Ref emit_list(OpId id, std::string_view name, const Ref* in, int n, const ShapeResult& r,
                        const Attrs* attrs = nullptr) {
  raise_shape_error(r.err);
  if (n < 1 || n > kMaxInputs) throw GraphError("stag: an op takes 1 to 8 inputs");
  int ids[kMaxInputs] = {};
  for (int k = 0; k < n; ++k) ids[k] = in[k].id;
  const int id_n = in[0].b->add(code(id), std::span<const int>(ids, static_cast<std::size_t>(n)),
                                r.shape, r.dtype, attrs, name);
  return Ref{in[0].b, id_n};
}

}  // namespace stag
