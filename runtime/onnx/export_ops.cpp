// The ONNX exporters of the inputs, parameters and constants, the elementwise, shape, reduction,
// mask, norm and embedding ops (exporter.hpp; the table that picks them is in export.cpp).
#include <stag/runtime/onnx/exporter.hpp>

#include <stag/ops/kernel.hpp>
#include <stag/ops/registry.hpp>
#include <stag/ops/unary/math.hpp>

namespace stag::onnx_export {
namespace {

std::vector<std::int64_t> trailing_axes(int rank, int k) {
  std::vector<std::int64_t> axes;
  for (int a = rank - k; a < rank; ++a) axes.push_back(a);
  return axes;
}

}  // namespace

void ex_input(Exporter& e, int n) {
  e.add_input(n);
}
void ex_parameter(Exporter& e, int n) {
  e.add_parameter(n);
}

void ex_constant(Exporter& e, int n) {
  const double v = e.attr(n).f[0];
  const DType t = e.dtype(n);
  if (e.shape(n).rank == 0) {
    e.value(n) = e.op("Identity", {e.scalar(v, t)}, e.g.name(n));
    return;
  }
  e.set(n, "ConstantOfShape", {e.shape_tensor(e.shape(n))}, [&](onnx::NodeProto& nd) {
    auto* a = nd.add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto::TENSOR);
    TensorProto* tp = a->mutable_t();
    tp->add_dims(1);
    Exporter::fill_one(*tp, v, t);
  });
}

void ex_positions(Exporter& e, int n) {
  const std::int64_t start = e.attr(n).i[0];
  const std::string start_s = e.init_i64({start}, true);
  const std::string end = e.op("Add", {e.dim0(e.shape(n)[0]), start_s}, "end");
  const std::string r = e.op("Range", {start_s, end, e.init_i64({1}, true)}, "positions");
  e.set(n, "Cast", {r}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(e.dtype(n))); });
}

void ex_numel(Exporter& e, int n) {
  const std::uint32_t mask = static_cast<std::uint32_t>(e.attr(n).i[0]);
  const ShapeV& s = e.in_shape(n, 0);
  std::string prod = e.init_i64({1});
  for (int a = 0; a < s.rank; ++a)
    if ((mask >> a) & 1u) prod = e.op("Mul", {prod, e.dim1(s[a])}, "numel");
  const std::string sq = e.op("Squeeze", {prod, e.init_i64({0})}, "numel");
  e.set(n, "Cast", {sq}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(e.dtype(n))); });
}

void ex_binary(Exporter& e, int n) {
  const OpId id = op_id(e.g.node(n).op);
  const std::string &a = e.in(n, 0), &b = e.in(n, 1);
  switch (id) {
    case OpId::add:
      return e.set(n, "Add", {a, b});
    case OpId::sub:
      return e.set(n, "Sub", {a, b});
    case OpId::mul:
      return e.set(n, "Mul", {a, b});
    case OpId::div:
      return e.set(n, "Div", {a, b});
    default:
      break;
  }
  const char* type = id == OpId::minimum ? "Min" : "Max";
  if (!is_float(e.dtype(n))) return e.set(n, type, {a, b});
  // NaN in either operand gives NaN (ONNX leaves Min/Max of NaN to the runtime).
  const std::string m = e.op(type, {a, b}, "minmax");
  const std::string nan = e.op("Or", {e.op("IsNaN", {a}, "nan"), e.op("IsNaN", {b}, "nan")}, "nan");
  e.set(n, "Where", {nan, e.op("Add", {a, b}, "nan"), m});
}

void ex_unary(Exporter& e, int n) {
  const OpId id = op_id(e.g.node(n).op);
  const std::string& x = e.in(n, 0);
  const DType t = e.dtype(n);
  const double p = e.attr(n).f[0], q = e.attr(n).f[1];
  auto c = [&](double v) { return e.scalar(v, t); };
  switch (id) {
    case OpId::neg:
      return e.set(n, "Neg", {x});
    case OpId::exp:
      return e.set(n, "Exp", {x});
    case OpId::log:
      return e.set(n, "Log", {x});
    case OpId::sqrt:
      return e.set(n, "Sqrt", {x});
    case OpId::rsqrt:
      return e.set(n, "Reciprocal", {e.op("Sqrt", {x}, "rsqrt")});
    case OpId::pow_scalar:
      return e.set(n, "Pow", {x, c(p)});
    case OpId::abs:
      return e.set(n, "Abs", {x});
    case OpId::relu:
      return e.set(n, "Relu", {x});
    case OpId::gelu: {  // 0.5 x (1 + erf(x / sqrt 2)); Gelu is an op from opset 20
      const std::string erf =
          e.op("Erf", {e.op("Mul", {x, c(1.0 / std::sqrt(2.0))}, "gelu")}, "gelu");
      return e.set(n, "Mul",
                   {e.op("Mul", {x, c(0.5)}, "gelu"), e.op("Add", {erf, c(1.0)}, "gelu")});
    }
    case OpId::gelu_tanh: {  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const std::string x3 = e.op("Mul", {e.op("Mul", {x, x}, "gelu"), x}, "gelu");
      const std::string u =
          e.op("Add", {x, e.op("Mul", {x3, c(unary_math::kGeluTanhC)}, "gelu")}, "gelu");
      const std::string th =
          e.op("Tanh", {e.op("Mul", {u, c(unary_math::kSqrt2OverPi)}, "gelu")}, "gelu");
      return e.set(n, "Mul", {e.op("Mul", {x, c(0.5)}, "gelu"), e.op("Add", {th, c(1.0)}, "gelu")});
    }
    case OpId::silu:
      return e.set(n, "Mul", {x, e.op("Sigmoid", {x}, "silu")});
    case OpId::sigmoid:
      return e.set(n, "Sigmoid", {x});
    case OpId::tanh:
      return e.set(n, "Tanh", {x});
    case OpId::sin:
      return e.set(n, "Sin", {x});
    case OpId::cos:
      return e.set(n, "Cos", {x});
    case OpId::elu:
      return e.set(n, "Elu", {x}, [&](onnx::NodeProto& nd) { e.attr_f(nd, "alpha", p); });
    case OpId::floor:
      return e.set(n, "Floor", {x});
    case OpId::clamp: {  // NaN fails both comparisons and stays NaN, as in stag's kernels
      const std::string hi = e.op("Where", {e.op("Greater", {x, c(q)}, "clamp"), c(q), x}, "clamp");
      return e.set(n, "Where", {e.op("Less", {x, c(p)}, "clamp"), c(p), hi});
    }
    case OpId::mod: {  // the sign of m: fmod, moved by m when its sign differs from m's
      const std::string r =
          e.op("Mod", {x, c(p)}, "mod", [&](onnx::NodeProto& nd) { e.attr_i(nd, "fmod", 1); });
      const std::string nonzero = e.op("Not", {e.op("Equal", {r, c(0.0)}, "mod")}, "mod");
      const std::string r_neg = e.op("Less", {r, c(0.0)}, "mod");
      const std::string differ = p < 0 ? e.op("Not", {r_neg}, "mod") : r_neg;
      const std::string fix = e.op("And", {nonzero, differ}, "mod");
      return e.set(n, "Where", {fix, e.op("Add", {r, c(p)}, "mod"), r});
    }
    default:
      throw Error("stag: onnx export: no unary rule for " + std::string(op_name(e.g.node(n).op)));
  }
}

void ex_matmul(Exporter& e, int n) {
  std::string a = e.in(n, 0), b = e.in(n, 1);
  if (e.attr(n).i[0]) a = e.transpose_last2(a, e.in_shape(n, 0).rank);
  if (e.attr(n).i[1]) b = e.transpose_last2(b, e.in_shape(n, 1).rank);
  e.set(n, "MatMul", {a, b});
}

void ex_permute(Exporter& e, int n) {
  std::vector<std::int64_t> perm;
  for (int k = 0; k < e.shape(n).rank; ++k) perm.push_back(e.attr(n).i[k]);
  e.set(n, "Transpose", {e.in(n, 0)}, [&](onnx::NodeProto& nd) { e.attr_ints(nd, "perm", perm); });
}

void ex_reshape(Exporter& e, int n) {
  e.set(n, "Reshape", {e.in(n, 0), e.shape_tensor(e.shape(n))},
        [&](onnx::NodeProto& nd) { e.attr_i(nd, "allowzero", 1); });
}

void ex_expand(Exporter& e, int n) {
  e.set(n, "Expand", {e.in(n, 0), e.shape_tensor(e.shape(n))});
}

void ex_identity(Exporter& e, int n) {
  e.set(n, "Identity", {e.in(n, 0)});
}

void ex_slice(Exporter& e, int n) {
  const Attrs& a = e.attr(n);
  e.set(n, "Slice", {e.in(n, 0), e.init_i64({a.i[1]}), e.init_i64({a.i[2]}), e.init_i64({a.i[0]})});
}

void ex_concat(Exporter& e, int n) {
  std::vector<std::string> ins;
  for (int k = 0; k < e.nin(n); ++k) ins.push_back(e.in(n, k));
  e.set(n, "Concat", ins, [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", e.attr(n).i[0]); });
}

void ex_reduce(Exporter& e, int n) {
  const OpId id = op_id(e.g.node(n).op);
  const std::uint32_t mask = static_cast<std::uint32_t>(e.attr(n).i[0]);
  const std::int64_t keep = e.attr(n).i[1];
  std::vector<std::int64_t> axes;
  for (int a = 0; a < e.in_shape(n, 0).rank; ++a)
    if ((mask >> a) & 1u) axes.push_back(a);
  if (axes.empty()) return e.set(n, "Identity", {e.in(n, 0)});
  if (id == OpId::sum)
    return e.set(n, "ReduceSum", {e.in(n, 0), e.init_i64(axes)},
                 [&](onnx::NodeProto& nd) { e.attr_i(nd, "keepdims", keep); });
  e.value(n) = e.reduce(id == OpId::mean ? "ReduceMean" : "ReduceMax", e.in(n, 0), axes, keep != 0,
                        e.g.name(n));
}

void ex_argmax(Exporter& e, int n) {
  const std::string r = e.op("ArgMax", {e.in(n, 0)}, "argmax", [&](onnx::NodeProto& nd) {
    e.attr_i(nd, "axis", e.attr(n).i[0]);
    e.attr_i(nd, "keepdims", e.attr(n).i[1]);
  });
  e.set(n, "Cast", {r}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(e.dtype(n))); });
}

void ex_softmax(Exporter& e, int n) {
  const bool log = op_id(e.g.node(n).op) == OpId::log_softmax;
  const std::int64_t axis = e.attr(n).i[0];
  if (e.nin(n) > 1) {
    e.value(n) = e.masked_softmax(e.in(n, 0), e.in(n, 1), e.dtype(n), axis, log, e.g.name(n));
    return;
  }
  e.set(n, log ? "LogSoftmax" : "Softmax", {e.in(n, 0)},
        [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", axis); });
}

void ex_compare(Exporter& e, int n) {
  const OpId id = op_id(e.g.node(n).op);
  e.set(n,
        id == OpId::lt   ? "Less"
        : id == OpId::le ? "LessOrEqual"
                         : "Equal",
        {e.in(n, 0), e.in(n, 1)});
}

void ex_logical(Exporter& e, int n) {
  const OpId id = op_id(e.g.node(n).op);
  if (id == OpId::logical_not) return e.set(n, "Not", {e.in(n, 0)});
  e.set(n, id == OpId::logical_and ? "And" : "Or", {e.in(n, 0), e.in(n, 1)});
}

void ex_where(Exporter& e, int n) {
  e.set(n, "Where", {e.in(n, 0), e.in(n, 1), e.in(n, 2)});
}

void ex_masked_fill(Exporter& e, int n) {
  e.set(n, "Where", {e.in(n, 1), e.scalar(e.attr(n).f[0], e.dtype(n)), e.in(n, 0)});
}

void ex_causal_mask(Exporter& e, int n) {
  const DimV &sq = e.shape(n)[0], &sk = e.shape(n)[1];
  const std::string rows = e.op("Unsqueeze", {e.range(sq), e.init_i64({1})}, "causal");
  const std::string off = e.op("Sub", {e.dim0(sk), e.dim0(sq)}, "causal");
  e.set(n, "LessOrEqual", {e.range(sk), e.op("Add", {rows, off}, "causal")});
}

void ex_padding_mask(Exporter& e, int n) {
  const std::string len = e.op("Cast", {e.in(n, 0)}, "padding", [&](onnx::NodeProto& nd) {
    e.attr_i(nd, "to", TensorProto::INT64);
  });
  const std::string col = e.op("Unsqueeze", {len, e.init_i64({1})}, "padding");
  e.set(n, "Less", {e.range(e.shape(n)[1]), col});
}

void ex_layer_norm(Exporter& e, int n) {
  const double eps = e.attr(n).f[0];
  const int rank = e.shape(n).rank;
  if (e.nin(n) >= 3) {
    const int k = e.in_shape(n, 1).rank;
    return e.set(n, "LayerNormalization", {e.in(n, 0), e.in(n, 1), e.in(n, 2)},
                 [&](onnx::NodeProto& nd) {
                   e.attr_i(nd, "axis", rank - k);
                   e.attr_f(nd, "epsilon", eps);
                 });
  }
  const int k = e.nin(n) == 2 ? e.in_shape(n, 1).rank : static_cast<int>(e.attr(n).i[0]);
  const std::vector<std::int64_t> axes = trailing_axes(rank, k);
  auto mean = [&](const std::string& v) {
    return e.reduce("ReduceMean", v, axes, true, "layer_norm");
  };
  const std::string& x = e.in(n, 0);
  const std::string d = e.op("Sub", {x, mean(x)}, "layer_norm");
  const std::string var = mean(e.op("Mul", {d, d}, "layer_norm"));
  const std::string sd =
      e.op("Sqrt", {e.op("Add", {var, e.scalar(eps, e.dtype(n))}, "layer_norm")}, "layer_norm");
  if (e.nin(n) == 2) return e.set(n, "Mul", {e.op("Div", {d, sd}, "layer_norm"), e.in(n, 1)});
  e.set(n, "Div", {d, sd});
}

void ex_rms_norm(Exporter& e, int n) {
  const double eps = e.attr(n).f[0];
  const int rank = e.shape(n).rank;
  const int k = e.nin(n) >= 2 ? e.in_shape(n, 1).rank : static_cast<int>(e.attr(n).i[0]);
  const std::vector<std::int64_t> axes = trailing_axes(rank, k);
  const std::string& x = e.in(n, 0);
  // x / sqrt(mean(x^2) + eps) * w: the form ONNX Runtime fuses into one kernel
  // (SimplifiedLayerNormalization); a Reciprocal in place of the Div is not fused.
  const std::string ms =
      e.reduce("ReduceMean", e.op("Pow", {x, e.scalar(2.0, e.dtype(n))}, "rms_norm"), axes, true,
               "rms_norm");
  const std::string sd =
      e.op("Sqrt", {e.op("Add", {ms, e.scalar(eps, e.dtype(n))}, "rms_norm")}, "rms_norm");
  if (e.nin(n) >= 2) return e.set(n, "Mul", {e.op("Div", {x, sd}, "rms_norm"), e.in(n, 1)});
  e.set(n, "Div", {x, sd});
}

void ex_embedding(Exporter& e, int n) {
  e.set(n, "Gather", {e.in(n, 1), e.in(n, 0)},
        [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", 0); });
}

}  // namespace stag::onnx_export
