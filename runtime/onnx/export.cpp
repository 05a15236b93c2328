// ONNX export (export.hpp): one exporter per op, writing standard ONNX ops (opset 17) into a
// ModelProto of Debian's libonnx; the checker and shape inference run before the model leaves.
#include <stag/runtime/onnx/export.hpp>

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include <stag/ops/kernel.hpp>
#include <stag/ops/registry.hpp>
#include <stag/ops/unary/math.hpp>
#include <stag/runtime/array.hpp>

namespace stag {

namespace {

using onnx::TensorProto;

int onnx_type(DType t) {
  switch (t) {
    case DType::f32:
      return TensorProto::FLOAT;
    case DType::f64:
      return TensorProto::DOUBLE;
    case DType::bf16:
      return TensorProto::BFLOAT16;
    case DType::i32:
      return TensorProto::INT32;
    case DType::i64:
      return TensorProto::INT64;
    case DType::boolean:
      return TensorProto::BOOL;
  }
  return TensorProto::UNDEFINED;
}

// A graph input, or a state tensor (a KV cache), which the model takes as an input and gives
// back updated as an output ("present.<name>").
bool is_model_input(const GraphView& g, int n) {
  return (g.node(n).flags & (kFlagInput | kFlagState)) != 0;
}

class Exporter;
using ExportFn = void (*)(Exporter&, int);

// An op's exporter, or why it has none.
struct OnnxSupport {
  ExportFn fn = nullptr;
  const char* unsupported = nullptr;
};

class Exporter {
 public:
  Exporter(const GraphView& g, const NamedArrays* params, const OnnxOptions& o,
           onnx::GraphProto* gp)
      : g(g), params_(params), opts_(o), gp_(gp), val(static_cast<std::size_t>(g.size())) {}

  const GraphView& g;

  std::string& value(int n) { return val[static_cast<std::size_t>(n)]; }
  const std::string& in(int n, int k) { return value(g.node(n).in[k]); }
  DType dtype(int n) const { return g.node(n).dtype; }
  int nin(int n) const { return g.node(n).nin; }
  const ShapeV& shape(int n) const { return g.shape(n); }
  const ShapeV& in_shape(int n, int k) const { return g.shape(g.node(n).in[k]); }
  const Attrs& attr(int n) const { return g.attr(n); }

  std::string fresh(std::string_view hint) {
    return std::string(hint) + "_" + std::to_string(counter_++);
  }

  // Appends a node; returns its (first) output's name.
  std::string op(const char* type, std::vector<std::string> inputs, std::string_view hint,
                 const std::function<void(onnx::NodeProto&)>& attrs = {}) {
    onnx::NodeProto* nd = gp_->add_node();
    nd->set_op_type(type);
    for (const std::string& i : inputs) nd->add_input(i);
    const std::string out = fresh(hint);
    nd->add_output(out);
    nd->set_name(out);
    if (attrs) attrs(*nd);
    return out;
  }
  // The node's own value: op() named after the stag node.
  void set(int n, const char* type, std::vector<std::string> inputs,
           const std::function<void(onnx::NodeProto&)>& attrs = {}) {
    value(n) = op(type, std::move(inputs), g.name(n), attrs);
  }

  static void attr_i(onnx::NodeProto& nd, const char* name, std::int64_t v) {
    auto* a = nd.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  }
  static void attr_f(onnx::NodeProto& nd, const char* name, double v) {
    auto* a = nd.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void attr_ints(onnx::NodeProto& nd, const char* name, const std::vector<std::int64_t>& v) {
    auto* a = nd.add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (std::int64_t x : v) a->add_ints(x);
  }

  // ---- initializers ------------------------------------------------------------------------
  std::string init_i64(const std::vector<std::int64_t>& v, bool scalar = false) {
    TensorProto* t = gp_->add_initializer();
    const std::string name = fresh("const_i64");
    t->set_name(name);
    t->set_data_type(TensorProto::INT64);
    if (!scalar) t->add_dims(static_cast<std::int64_t>(v.size()));
    for (std::int64_t x : v) t->add_int64_data(x);
    return name;
  }
  // A scalar of dtype t holding v (converted as stag converts a double to t).
  std::string scalar(double v, DType t) {
    TensorProto* tp = gp_->add_initializer();
    const std::string name = fresh("const");
    tp->set_name(name);
    fill_one(*tp, v, t);
    return name;
  }
  static void fill_one(TensorProto& tp, double v, DType t) {
    tp.set_data_type(onnx_type(t));
    switch (t) {
      case DType::f32:
        tp.add_float_data(static_cast<float>(v));
        break;
      case DType::f64:
        tp.add_double_data(v);
        break;
      case DType::i32:
        tp.add_int32_data(static_cast<std::int32_t>(saturate(v, -2147483648.0, 2147483647.0)));
        break;
      case DType::i64:
        tp.add_int64_data(
            static_cast<std::int64_t>(saturate(v, -9223372036854775808.0, 9223372036854774784.0)));
        break;
      case DType::boolean:
        tp.add_int32_data(v != 0.0 ? 1 : 0);
        break;
      case DType::bf16:
        throw Error("stag: onnx export: bf16 constants are not exported");
    }
  }
  static double saturate(double v, double lo, double hi) {
    if (std::isnan(v)) return 0.0;
    return v < lo ? lo : (v > hi ? hi : std::trunc(v));
  }
  std::string initializer(const std::string& name, const Array& a) {
    TensorProto* t = gp_->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx_type(a.dtype()));
    for (std::int64_t d : a.dims()) t->add_dims(d);
    if (data_ == nullptr || a.bytes() < 1024) {
      t->set_raw_data(std::string(static_cast<const char*>(a.raw()), a.bytes()));
      return name;
    }
    // ONNX's external data: the bytes in the data file, at an offset aligned to 4 KiB (so a
    // runtime can map them), the tensor naming the file (relative to the model), offset, length.
    const std::int64_t offset = (data_offset_ + 4095) / 4096 * 4096;
    for (; data_offset_ < offset; ++data_offset_) data_->put('\0');
    data_->write(static_cast<const char*>(a.raw()), static_cast<std::streamsize>(a.bytes()));
    data_offset_ += static_cast<std::int64_t>(a.bytes());
    t->set_data_location(TensorProto::EXTERNAL);
    auto entry = [&](const char* key, const std::string& value) {
      auto* kv = t->add_external_data();
      kv->set_key(key);
      kv->set_value(value);
    };
    entry("location", data_location_);
    entry("offset", std::to_string(offset));
    entry("length", std::to_string(a.bytes()));
    return name;
  }
  // Parameters go to `data` (the file `location`, relative to the model) from now on.
  void use_external_data(std::ostream* data, std::string location) {
    data_ = data;
    data_location_ = std::move(location);
  }

  // ---- dims at run time --------------------------------------------------------------------
  // Where each symbol can be read: an input's axis whose dim is the symbol times a number.
  void find_symbol_sources(const std::vector<char>& needed) {
    for (int n = 0; n < g.size(); ++n) {
      if (!needed[static_cast<std::size_t>(n)] || !is_model_input(g, n)) continue;
      const ShapeV& s = shape(n);
      for (int a = 0; a < s.rank; ++a)
        if (s[a].nsym == 1 && !sym_src_.count(s[a].sym[0]))
          sym_src_[s[a].sym[0]] = {g.name(n), a, s[a].coef};
    }
  }
  // int64 [1] holding the symbol's bound value.
  std::string sym_value(SymId id) {
    const std::string key = "sym" + std::to_string(id);
    if (auto it = dim_cache_.find(key); it != dim_cache_.end()) return it->second;
    std::string r;
    const std::string_view name = g.sym_name(id);
    if (auto d = opts_.dims.find(name); d != opts_.dims.end()) {
      r = init_i64({d->second});
    } else if (auto s = sym_src_.find(id); s != sym_src_.end()) {
      const auto& [input, axis, coef] = s->second;
      const std::int64_t ax = axis;
      r = op("Shape", {input}, std::string(name), [&](onnx::NodeProto& nd) {
        attr_i(nd, "start", ax);
        attr_i(nd, "end", ax + 1);
      });
      if (coef != 1) r = op("Div", {r, init_i64({coef})}, name);
    } else {
      throw Error("stag: onnx export: no input's shape gives the symbol '" + std::string(name) +
                  "'; pass its value in OnnxOptions::dims");
    }
    dim_cache_[key] = r;
    return r;
  }
  // int64 [1] holding the dim.
  std::string dim1(const DimV& d) {
    if (d.is_static()) return init_i64({d.coef});
    std::string r;
    for (int k = 0; k < d.nsym; ++k) {
      const std::string s = sym_value(d.sym[k]);
      r = r.empty() ? s : op("Mul", {r, s}, "dim");
    }
    if (d.coef != 1) r = op("Mul", {r, init_i64({d.coef})}, "dim");
    return r;
  }
  // int64 [] holding the dim.
  std::string dim0(const DimV& d) {
    if (d.is_static()) return init_i64({d.coef}, true);
    return op("Squeeze", {dim1(d), init_i64({0})}, "dim");
  }
  // int64 [rank]: the shape, for Reshape, Expand and ConstantOfShape.
  std::string shape_tensor(const ShapeV& s) {
    if (s.all_static()) {
      std::vector<std::int64_t> v;
      for (int a = 0; a < s.rank; ++a) v.push_back(s[a].coef);
      return init_i64(v);
    }
    std::vector<std::string> parts;
    for (int a = 0; a < s.rank; ++a) parts.push_back(dim1(s[a]));
    return op("Concat", parts, "shape", [](onnx::NodeProto& nd) { attr_i(nd, "axis", 0); });
  }
  // int64 [n]: 0, 1, ..., n - 1.
  std::string range(const DimV& n) {
    return op("Range", {init_i64({0}, true), dim0(n), init_i64({1}, true)}, "range");
  }

  void set_type(onnx::ValueInfoProto& vi, int n) {
    auto* tt = vi.mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx_type(dtype(n)));
    auto* sh = tt->mutable_shape();
    const ShapeV& s = shape(n);
    for (int a = 0; a < s.rank; ++a) {
      auto* d = sh->add_dim();
      if (s[a].is_static())
        d->set_dim_value(s[a].coef);
      else
        d->set_dim_param(g.dim_text(s[a]));
    }
  }
  void add_input(int n) {
    const std::string name = g.name(n);
    auto* vi = gp_->add_input();
    vi->set_name(name);
    set_type(*vi, n);
    value(n) = name;
  }
  void add_parameter(int n) {
    const std::string name = g.name(n);
    if (params_ == nullptr) throw Error("stag: onnx export: no parameters given");
    auto it = params_->find(name);
    if (it == params_->end())
      throw Error("stag: onnx export: parameter '" + name + "' is missing from the weights");
    const ShapeV& s = shape(n);
    const Array& a = it->second;
    bool same = a.rank() == s.rank && a.dtype() == dtype(n);
    for (int k = 0; same && k < s.rank; ++k)
      same = !s[k].is_static() || a.dims()[static_cast<std::size_t>(k)] == s[k].coef;
    if (!same)
      throw Error("stag: onnx export: parameter '" + name + "' is " + a.describe() +
                  ", the graph's is " + std::string(dtype_name(dtype(n))) + " " + shape_text(s));
    value(n) = initializer(name, a);
  }
  std::string shape_text(const ShapeV& s) const {
    std::string t = "[";
    for (int a = 0; a < s.rank; ++a) t += (a ? ", " : "") + g.dim_text(s[a]);
    return t + "]";
  }
  void add_output(const std::string& name, int n) {
    const std::string v = op("Identity", {value(n)}, "out");
    // The Identity's output takes the output's name.
    gp_->mutable_node(gp_->node_size() - 1)->set_output(0, name);
    (void)v;
    auto* vi = gp_->add_output();
    vi->set_name(name);
    set_type(*vi, n);
  }

  // ---- helpers shared by exporters -------------------------------------------------------
  // The lowest finite value of a float dtype, for masked scores.
  std::string lowest(DType t) {
    return scalar(t == DType::f64 ? std::numeric_limits<double>::lowest()
                                  : static_cast<double>(std::numeric_limits<float>::lowest()),
                  t);
  }
  // softmax along `axis` with a keep mask (true: keep); a fully masked row gives zeros (log:
  // -inf), as stag's kernels do.
  std::string masked_softmax(const std::string& x, const std::string& keep, DType t,
                             std::int64_t axis, bool log, std::string_view hint) {
    const std::string filled = op("Where", {keep, x, lowest(t)}, hint);
    const std::string p = op(log ? "LogSoftmax" : "Softmax", {filled}, hint,
                             [&](onnx::NodeProto& nd) { attr_i(nd, "axis", axis); });
    const double other = log ? -std::numeric_limits<double>::infinity() : 0.0;
    return op("Where", {keep, p, scalar(other, t)}, hint);
  }
  // ReduceMean / ReduceMax over `axes`: an attribute up to opset 17, an input from opset 18.
  std::string reduce(const char* type, const std::string& x, const std::vector<std::int64_t>& axes,
                     bool keepdims, std::string_view hint) {
    if (opset() >= 18)
      return op(type, {x, init_i64(axes)}, hint,
                [&](onnx::NodeProto& nd) { attr_i(nd, "keepdims", keepdims); });
    return op(type, {x}, hint, [&](onnx::NodeProto& nd) {
      attr_ints(nd, "axes", axes);
      attr_i(nd, "keepdims", keepdims);
    });
  }
  int opset() const { return opts_.attention_op ? kOnnxAttentionOpset : kOnnxOpset; }
  bool attention_op() const { return opts_.attention_op; }

  std::string transpose_last2(const std::string& x, int rank) {
    std::vector<std::int64_t> perm;
    for (int a = 0; a < rank; ++a) perm.push_back(a);
    std::swap(perm[static_cast<std::size_t>(rank - 2)], perm[static_cast<std::size_t>(rank - 1)]);
    return op("Transpose", {x}, "t", [&](onnx::NodeProto& nd) { attr_ints(nd, "perm", perm); });
  }

 private:
  const NamedArrays* params_;
  const OnnxOptions& opts_;
  onnx::GraphProto* gp_;
  std::vector<std::string> val;
  int counter_ = 0;
  struct SymSource {
    std::string input;
    int axis;
    std::int64_t coef;
  };
  std::map<SymId, SymSource> sym_src_;
  std::map<std::string, std::string> dim_cache_;
  std::ostream* data_ = nullptr;
  std::string data_location_;
  std::int64_t data_offset_ = 0;
};

// ---- exporters ---------------------------------------------------------------------------
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

std::vector<std::int64_t> trailing_axes(int rank, int k) {
  std::vector<std::int64_t> axes;
  for (int a = rank - k; a < rank; ++a) axes.push_back(a);
  return axes;
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

// rope: cos/sin tables from positions (angles in double, as stag's kernels compute them), then
// the rotate-half rotation of (x[i], x[i + Dh/2]).
void ex_rope(Exporter& e, int n) {
  const ShapeV& s = e.shape(n);
  const int rank = s.rank;
  const std::int64_t dh = s[rank - 1].coef, half = dh / 2;
  const double theta = e.attr(n).f[0];
  const double sign = e.attr(n).i[1] != 0 ? -1.0 : 1.0;
  const DType t = e.dtype(n);
  std::string pos;
  bool per_row = false;
  if (e.nin(n) > 1) {
    pos = e.in(n, 1);
    per_row = e.in_shape(n, 1).rank == 2;
  } else {
    pos = e.range(s[rank - 2]);
  }
  pos = e.op("Cast", {pos}, "rope",
             [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", TensorProto::DOUBLE); });
  pos = e.op("Add", {pos, e.scalar(static_cast<double>(e.attr(n).i[0]), DType::f64)}, "rope");
  pos = e.op("Unsqueeze", {pos, e.init_i64({-1})}, "rope");
  // inv_freq[i] = theta^(-2i/Dh), signed for the inverse rotation.
  TensorProto inv;
  std::vector<double> f(static_cast<std::size_t>(half));
  for (std::int64_t i = 0; i < half; ++i)
    f[static_cast<std::size_t>(i)] =
        sign * std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(dh));
  Array fa = Array::from_vector<double>({half}, f);
  const std::string freqs = e.initializer(e.fresh("rope_inv_freq"), fa);
  std::string angle = e.op("Mul", {pos, freqs}, "rope");  // [S, half] or [B, S, half]
  if (per_row && rank > 3) {
    std::vector<std::int64_t> axes;
    for (int a = 1; a < rank - 2; ++a) axes.push_back(a);
    angle = e.op("Unsqueeze", {angle, e.init_i64(axes)}, "rope");
  }
  auto table = [&](const char* fn) {
    return e.op("Cast", {e.op(fn, {angle}, "rope")}, "rope",
                [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(t)); });
  };
  const std::string c = table("Cos"), sn = table("Sin");
  const std::string& x = e.in(n, 0);
  auto part = [&](std::int64_t from, std::int64_t to) {
    return e.op("Slice", {x, e.init_i64({from}), e.init_i64({to}), e.init_i64({-1})}, "rope");
  };
  const std::string x1 = part(0, half), x2 = part(half, dh);
  auto mul = [&](const std::string& a, const std::string& b) {
    return e.op("Mul", {a, b}, "rope");
  };
  const std::string y1 = e.op("Sub", {mul(x1, c), mul(x2, sn)}, "rope");
  const std::string y2 = e.op("Add", {mul(x2, c), mul(x1, sn)}, "rope");
  e.set(n, "Concat", {y1, y2}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", -1); });
}

// The fused attention as standard ops: softmax(q k^T * scale (+ score), masked) v.
void ex_attention(Exporter& e, int n) {
  const Attrs& at = e.attr(n);
  const ShapeV &qs = e.in_shape(n, 0), &ks = e.in_shape(n, 1), &vs = e.in_shape(n, 2);
  const int rank = qs.rank;
  const DType t = e.dtype(n);
  const std::int64_t dk = qs[rank - 1].coef;
  // OnnxOptions::attention_op: ONNX's Attention op (opset 23), for [B, H, S, D] operands without
  // a built-in score change; the rest keeps the standard-op pattern.
  const bool use_op = e.attention_op() && rank == 4 && at.i[6] == 0 && t == DType::f32;
  std::string k = e.in(n, 1), v = e.in(n, 2);
  const DimV& sq = qs[rank - 2];
  const DimV& sk = ks[rank - 2];
  std::int64_t heads = 1;
  if (rank == 4) {
    heads = qs[1].coef;
    const std::int64_t kvh = ks[1].coef;
    if (heads != kvh && !use_op) {  // GQA: each key/value head serves H / KVH heads
      auto repeat = [&](const std::string& x, const ShapeV& xs) {
        ShapeV s5;
        s5.rank = 5;
        s5[0] = xs[0];
        s5[1] = xs[1];
        s5[2] = static_dim(heads / kvh);
        s5[3] = xs[2];
        s5[4] = xs[3];
        ShapeV s4 = xs;
        s4[1] = static_dim(heads);
        const std::string u = e.op("Unsqueeze", {x, e.init_i64({2})}, "gqa");
        const std::string ex = e.op("Expand", {u, e.shape_tensor(s5)}, "gqa");
        return e.op("Reshape", {ex, e.shape_tensor(s4)}, "gqa");
      };
      k = repeat(k, ks);
      v = repeat(v, vs);
    }
  }
  const double scale = at.i[3] ? 1.0 / std::sqrt(static_cast<double>(dk)) : at.f[0];
  std::string s;
  if (!use_op) {
    s = e.op("MatMul", {e.in(n, 0), e.transpose_last2(k, rank)}, "scores");
    s = e.op("Mul", {s, e.scalar(scale, t)}, "scores");
  }
  const bool cache = at.i[4] == 1;
  // Query i's key position: i + Sk - Sq, or i + pos[b] over a cache. int64 [Sq, 1] or
  // [B, 1, Sq, 1] (one head: [B, Sq, 1]).
  std::string hi;
  std::string active;  // cache: [B, 1, 1, 1] bool, false for an inactive row (pos = -1)
  auto query_pos = [&]() {
    if (!hi.empty()) return hi;
    const std::string rows = e.op("Unsqueeze", {e.range(sq), e.init_i64({1})}, "attn");
    if (!cache) {
      hi = e.op("Add", {rows, e.op("Sub", {e.dim0(sk), e.dim0(sq)}, "attn")}, "attn");
    } else {
      std::vector<std::int64_t> shp = {-1};
      for (int a = 1; a < rank; ++a) shp.push_back(1);
      const std::string pos =
          e.op("Reshape",
               {e.op("Cast", {e.in(n, 3)}, "attn",
                     [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", TensorProto::INT64); }),
                e.init_i64(shp)},
               "attn");
      hi = e.op("Add", {rows, pos}, "attn");
      active = e.op("GreaterOrEqual", {pos, e.init_i64({0}, true)}, "attn");
    }
    return hi;
  };
  if (at.i[6] == 1) {  // ALiBi: - m_h (query position - key position), m_h = 2^(-8 (h + 1) / H)
    std::vector<double> slopes(static_cast<std::size_t>(heads));
    for (std::int64_t h = 0; h < heads; ++h)
      slopes[static_cast<std::size_t>(h)] =
          std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(heads));
    const std::string sl = e.initializer(e.fresh("alibi_slopes"),
                                         Array::from_vector<double>({heads, 1, 1}, slopes).to(t));
    const std::string dist =
        e.op("Cast", {e.op("Sub", {query_pos(), e.range(sk)}, "alibi")}, "alibi",
             [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(t)); });
    s = e.op("Sub", {s, e.op("Mul", {sl, dist}, "alibi")}, "alibi");
  } else if (at.i[6] == 2) {  // soft-capping: c tanh(s / c)
    const std::string c = e.scalar(at.f[2], t);
    s = e.op("Mul", {e.op("Tanh", {e.op("Div", {s, c}, "softcap")}, "softcap"), c}, "softcap");
  }
  std::string keep;
  int keep_rank = 0;  // the combined mask's rank (masks broadcast from the right)
  auto and_keep = [&](const std::string& m, int r) {
    keep = keep.empty() ? m : e.op("And", {keep, m}, "keep");
    keep_rank = std::max(keep_rank, r);
  };
  const auto kind = static_cast<AttnMask>(at.i[0]);
  if (kind != AttnMask::none) {
    const std::string cols = e.range(sk);
    const int hr = cache ? rank : 2;  // query_pos: [Sq, 1], or [B, 1.., Sq, 1] over a cache
    and_keep(e.op("LessOrEqual", {cols, query_pos()}, "causal"), hr);
    if (kind == AttnMask::sliding_window)
      and_keep(
          e.op("Greater", {cols, e.op("Sub", {query_pos(), e.init_i64({at.i[1]}, true)}, "window")},
               "window"),
          hr);
  }
  if (cache) {
    query_pos();
    and_keep(active, rank);
  } else if (at.i[4] == 0 && e.nin(n) > 3) {
    and_keep(e.in(n, 3), e.in_shape(n, 3).rank);
  }
  if (use_op) {
    std::vector<std::string> ins = {e.in(n, 0), k, v};
    std::string mask;
    if (!keep.empty()) {
      // ONNX Runtime wants the mask's query axis whole: [B|1, H|1, Sq, Sk].
      const int kr = keep_rank;
      std::string k4 = keep;
      if (kr < 4) {
        std::vector<std::int64_t> axes;
        for (int a = 0; a < 4 - kr; ++a) axes.push_back(a);
        k4 = e.op("Unsqueeze", {keep, e.init_i64(axes)}, "mask");
      }
      const std::string lead = e.op("Shape", {k4}, "mask", [&](onnx::NodeProto& nd) {
        e.attr_i(nd, "start", 0);
        e.attr_i(nd, "end", 2);
      });
      const std::string shape = e.op("Concat", {lead, e.dim1(sq), e.dim1(sk)}, "mask",
                                     [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", 0); });
      mask = e.op("Expand", {k4, shape}, "mask");
      ins.push_back(mask);
    }
    const std::string o = e.op("Attention", ins, "attention",
                               [&](onnx::NodeProto& nd) { e.attr_f(nd, "scale", scale); });
    if (mask.empty()) return e.set(n, "Identity", {o});
    // A query that keeps no key gives zeros, as stag's kernels do (a softmax over nothing).
    const std::string any =
        e.op("Greater",
             {e.reduce("ReduceMax",
                       e.op("Cast", {mask}, "mask",
                            [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", TensorProto::FLOAT); }),
                       {-1}, true, "mask"),
              e.scalar(0.0, DType::f32)},
             "mask");
    return e.set(n, "Where", {any, o, e.scalar(0.0, t)});
  }
  // A causal mask alone over Sq <= Sk (self-attention: the same dim) keeps key 0 for every
  // query: no row is fully masked, so the softmax needs no zeroing of such rows afterwards.
  const bool rows_keep_a_key =
      kind == AttnMask::causal && !cache && !(at.i[4] == 0 && e.nin(n) > 3) && sq == sk;
  if (!keep.empty() && rows_keep_a_key) {
    const std::string filled = e.op("Where", {keep, s, e.lowest(t)}, "probs");
    const std::string p =
        e.op("Softmax", {filled}, "probs", [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", -1); });
    return e.set(n, "MatMul", {p, v});
  }
  const std::string p = keep.empty() ? e.op("Softmax", {s}, "probs",
                                            [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", -1); })
                                     : e.masked_softmax(s, keep, t, -1, false, "probs");
  e.set(n, "MatMul", {p, v});
}

// cache_write without side effects: the cache is an input and the updated cache an output
// (present.<name>). Key slot l of row b takes row l - pos[b] of the new rows when that is in
// [0, T) and pos[b] >= 0, and keeps the cache's value otherwise.
void ex_cache_write(Exporter& e, int n) {
  const ShapeV& cs = e.in_shape(n, 0);
  const ShapeV& rs = e.in_shape(n, 1);
  const int rank = cs.rank;
  const DimV& len = cs[rank - 2];
  const DimV& t = rs[rank - 2];
  const std::string pos64 = e.op("Cast", {e.in(n, 2)}, "cache", [&](onnx::NodeProto& nd) {
    e.attr_i(nd, "to", TensorProto::INT64);
  });
  std::vector<std::int64_t> pshape(static_cast<std::size_t>(rank), 1);
  pshape[0] = -1;  // [B] per row, or one position for every row
  const std::string pos = e.op("Reshape", {pos64, e.init_i64(pshape)}, "cache");
  std::vector<std::int64_t> lshape(static_cast<std::size_t>(rank), 1);
  lshape[static_cast<std::size_t>(rank - 2)] = -1;
  const std::string slots = e.op("Reshape", {e.range(len), e.init_i64(lshape)}, "cache");
  const std::string rel = e.op("Sub", {slots, pos}, "cache");  // [B|1, 1.., L, 1]
  const std::string t1 = e.op("Sub", {e.dim0(t), e.init_i64({1}, true)}, "cache");
  const std::string zero = e.init_i64({0}, true);
  const std::string inside = e.op(
      "And",
      {e.op("And",
            {e.op("GreaterOrEqual", {rel, zero}, "cache"), e.op("LessOrEqual", {rel, t1}, "cache")},
            "cache"),
       e.op("GreaterOrEqual", {pos, zero}, "cache")},
      "cache");
  const std::string idx = e.op("Max", {e.op("Min", {rel, t1}, "cache"), zero}, "cache");
  const std::string full = e.op("Expand", {idx, e.shape_tensor(cs)}, "cache");
  const std::string rows = e.op("GatherElements", {e.in(n, 1), full}, "cache",
                                [&](onnx::NodeProto& nd) { e.attr_i(nd, "axis", rank - 2); });
  e.set(n, "Where", {inside, rows, e.in(n, 0)});
}

void ex_cast(Exporter& e, int n) {
  const DType from = e.dtype(e.g.node(n).in[0]), to = e.dtype(n);
  const std::string& x = e.in(n, 0);
  auto cast = [&](const std::string& v, DType t) {
    return e.op("Cast", {v}, "cast",
                [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(t)); });
  };
  if (from == to) return e.set(n, "Identity", {x});
  if (to == DType::boolean)  // nonzero (NaN too) is true
    return e.set(n, "Not", {e.op("Equal", {x, e.scalar(0.0, from)}, "cast")});
  const bool int_to = to == DType::i32 || to == DType::i64;
  if (int_to && is_float(from)) {  // truncate toward zero, saturate, NaN -> 0
    const double top = to == DType::i32 ? 2147483648.0 : 9223372036854775808.0;
    const double below = from == DType::f32
                             ? static_cast<double>(std::nextafter(static_cast<float>(top), 0.f))
                             : std::nextafter(top, 0.0);
    const std::string clean =
        e.op("Where", {e.op("IsNaN", {x}, "cast"), e.scalar(0.0, from), x}, "cast");
    const std::string clipped = e.op(
        "Where", {e.op("Less", {clean, e.scalar(-top, from)}, "cast"), e.scalar(-top, from), clean},
        "cast");
    const std::string low = e.op(
        "Where",
        {e.op("Greater", {clipped, e.scalar(below, from)}, "cast"), e.scalar(below, from), clipped},
        "cast");
    const std::string r = cast(low, to);
    const std::string max = to == DType::i32
                                ? e.scalar(2147483647.0, to)
                                : e.init_i64({std::numeric_limits<std::int64_t>::max()}, true);
    return e.set(n, "Where",
                 {e.op("GreaterOrEqual", {clean, e.scalar(top, from)}, "cast"), max, r});
  }
  if (from == DType::i64 && to == DType::i32) {  // saturates
    const std::string lo = e.init_i64({std::numeric_limits<std::int32_t>::min()}, true);
    const std::string hi = e.init_i64({std::numeric_limits<std::int32_t>::max()}, true);
    const std::string c1 = e.op("Where", {e.op("Less", {x, lo}, "cast"), lo, x}, "cast");
    const std::string c2 = e.op("Where", {e.op("Greater", {c1, hi}, "cast"), hi, c1}, "cast");
    return e.set(n, "Cast", {c2}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(to)); });
  }
  e.set(n, "Cast", {x}, [&](onnx::NodeProto& nd) { e.attr_i(nd, "to", onnx_type(to)); });
}

void ex_cumsum(Exporter& e, int n) {
  e.set(n, "CumSum", {e.in(n, 0), e.init_i64({e.attr(n).i[0]}, true)},
        [&](onnx::NodeProto& nd) { e.attr_i(nd, "reverse", e.attr(n).i[1] != 0); });
}

constexpr const char* kBackward =
    "a gradient op: export the inference graph (the model function), not its training graph";
constexpr const char* kOptimizer = "an optimizer update: export the inference graph";
constexpr const char* kLoss =
    "a training loss: export the outputs inference needs (OnnxOptions::outputs, e.g. logits)";

// Every op: its exporter, or why it has none. No default case: a new op without an entry
// returns {} and fails the static_assert below, which names it.
constexpr OnnxSupport entry(OpId op) {
  switch (op) {
    case OpId::input:
      return {&ex_input};
    case OpId::parameter:
      return {&ex_parameter};
    case OpId::constant:
      return {&ex_constant};
    case OpId::positions:
      return {&ex_positions};
    case OpId::numel:
      return {&ex_numel};
    case OpId::add:
    case OpId::sub:
    case OpId::mul:
    case OpId::div:
    case OpId::minimum:
    case OpId::maximum:
      return {&ex_binary};
    case OpId::neg:
    case OpId::exp:
    case OpId::log:
    case OpId::sqrt:
    case OpId::rsqrt:
    case OpId::pow_scalar:
    case OpId::abs:
    case OpId::relu:
    case OpId::gelu:
    case OpId::gelu_tanh:
    case OpId::silu:
    case OpId::sigmoid:
    case OpId::tanh:
    case OpId::sin:
    case OpId::cos:
    case OpId::elu:
    case OpId::floor:
    case OpId::clamp:
    case OpId::mod:
      return {&ex_unary};
    case OpId::matmul:
      return {&ex_matmul};
    case OpId::permute:
      return {&ex_permute};
    case OpId::reshape:
    case OpId::unsqueeze:
    case OpId::squeeze:
      return {&ex_reshape};
    case OpId::expand:
      return {&ex_expand};
    case OpId::slice:
      return {&ex_slice};
    case OpId::concat:
      return {&ex_concat};
    case OpId::sum:
    case OpId::mean:
    case OpId::max:
      return {&ex_reduce};
    case OpId::argmax:
      return {&ex_argmax};
    case OpId::softmax:
    case OpId::log_softmax:
      return {&ex_softmax};
    case OpId::lt:
    case OpId::le:
    case OpId::eq:
      return {&ex_compare};
    case OpId::logical_and:
    case OpId::logical_or:
    case OpId::logical_not:
      return {&ex_logical};
    case OpId::where:
      return {&ex_where};
    case OpId::masked_fill:
      return {&ex_masked_fill};
    case OpId::causal_mask:
      return {&ex_causal_mask};
    case OpId::padding_mask:
      return {&ex_padding_mask};
    case OpId::layer_norm:
      return {&ex_layer_norm};
    case OpId::rms_norm:
      return {&ex_rms_norm};
    case OpId::embedding:
      return {&ex_embedding};
    case OpId::rope:
      return {&ex_rope};
    case OpId::attention:
      return {&ex_attention};
    case OpId::dropout:  // the identity in inference
    case OpId::stop_gradient:
      return {&ex_identity};
    case OpId::cast:
      return {&ex_cast};
    case OpId::cumsum:
      return {&ex_cumsum};
    case OpId::unary_backward:
    case OpId::slice_backward:
    case OpId::concat_backward:
    case OpId::softmax_backward:
    case OpId::log_softmax_backward:
    case OpId::layer_norm_backward:
    case OpId::rms_norm_backward:
    case OpId::embedding_backward:
    case OpId::cross_entropy_backward:
    case OpId::attention_backward:
    case OpId::attention_backward_kv:
      return {nullptr, kBackward};
    case OpId::sgd_update:
    case OpId::adam_update:
      return {nullptr, kOptimizer};
    case OpId::cross_entropy:
    case OpId::mse_loss:
      return {nullptr, kLoss};
    case OpId::cache_write:
      return {&ex_cache_write};
    case OpId::count:
      break;
  }
  return {};
}

#define STAG_X(name)                                                                         \
  static_assert(entry(OpId::name).fn != nullptr || entry(OpId::name).unsupported != nullptr, \
                "stag ONNX export: op '" #name                                               \
                "' has neither an exporter nor a reason in runtime/onnx/export.cpp");
STAG_OP_LIST(STAG_X)
#undef STAG_X

// The outputs to export: (ONNX name, node).
std::vector<std::pair<std::string, int>> chosen_outputs(const GraphView& g, const OnnxOptions& o) {
  std::vector<std::pair<std::string, int>> out;
  if (o.outputs.empty()) {
    bool result_named = false;
    for (const OutputEntry& e : g.outputs) {
      // A gradient output (a training graph) is named as Session::get names it; its backward
      // nodes are then what onnx_unsupported reports.
      out.emplace_back(
          e.grad_of < 0 ? std::string(e.name) : std::string(kGradPrefix) + g.name(e.grad_of),
          e.node);
      result_named = result_named || e.node == g.result;
    }
    if (g.result >= 0 && !result_named) out.emplace_back("result", g.result);
  } else {
    for (const std::string& name : o.outputs) {
      int node = name == "result" ? g.result : g.output(name);
      if (node < 0 && name != "result") node = g.find(name);  // a named intermediate node
      if (node < 0) {
        std::string known;
        for (const OutputEntry& e : g.outputs)
          if (e.grad_of < 0) known += (known.empty() ? "" : ", ") + std::string(e.name);
        throw Error("stag: onnx export: the graph has no output '" + name + "' (outputs: " +
                    (known.empty() ? "none" : known) + "; \"result\" is the graph's result)");
      }
      out.emplace_back(name, node);
    }
  }
  if (out.empty()) throw Error("stag: onnx export: the graph has no outputs to export");
  return out;
}

std::vector<char> needed_nodes(const GraphView& g,
                               const std::vector<std::pair<std::string, int>>& outputs) {
  std::vector<char> need(static_cast<std::size_t>(g.size()), 0);
  std::vector<int> stack;
  for (const auto& o : outputs) stack.push_back(o.second);
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    if (need[static_cast<std::size_t>(n)]) continue;
    need[static_cast<std::size_t>(n)] = 1;
    for (int k = 0; k < g.node(n).nin; ++k) stack.push_back(g.node(n).in[k]);
  }
  return need;
}

// Why node n cannot be exported, beyond its op's entry; empty when it can.
std::string node_refusal(const GraphView& g, int n) {
  const Node& nd = g.node(n);
  const OnnxSupport s = entry(op_id(nd.op));
  if (s.fn == nullptr) return s.unsupported;
  if (nd.dtype == DType::bf16)
    return "bf16 values: export the f32 graph (ONNX Runtime's CPU kernels have no bf16 matmul)";
  const OpId id = op_id(nd.op);
  const ShapeV& s0 = nd.nin > 0 ? g.shape(nd.in[0]) : g.shape(n);
  if (id == OpId::attention) {
    const Attrs& a = g.attr(n);
    if (a.i[4] == 2)
      return "a score_mod / mask_mod (compiled C++ functions have no ONNX form); write the score "
             "change as graph ops (an additive bias, a keep mask) to export it";
    if (!s0[s0.rank - 1].is_static()) return "a symbolic head dim";
    if (s0.rank == 4 && (!s0[1].is_static() || !g.shape(nd.in[1])[1].is_static()))
      return "a symbolic head count";
  }
  if (id == OpId::rope && !g.shape(n)[g.shape(n).rank - 1].is_static())
    return "a symbolic head dim";
  return {};
}

}  // namespace

std::string onnx_unsupported(const GraphView& g, const OnnxOptions& opts) {
  const auto outputs = chosen_outputs(g, opts);
  const std::vector<char> need = needed_nodes(g, outputs);
  for (int n = 0; n < g.size(); ++n) {
    if (!need[static_cast<std::size_t>(n)]) continue;
    const std::string why = node_refusal(g, n);
    if (!why.empty())
      return "stag: onnx export: node '" + g.name(n) + "' (op " +
             std::string(op_name(g.node(n).op)) + ") cannot be exported: " + why;
  }
  return {};
}

std::vector<std::string> onnx_inputs(const GraphView& g, const OnnxOptions& opts) {
  const std::vector<char> need = needed_nodes(g, chosen_outputs(g, opts));
  std::vector<std::string> names;
  for (int n = 0; n < g.size(); ++n)
    if (need[static_cast<std::size_t>(n)] && is_model_input(g, n)) names.push_back(g.name(n));
  return names;
}

namespace {
// The serialised model; with `data`, parameters of 1 KiB or more go there as external data
// (file `location`).
std::string build_model(const GraphView& g, const NamedArrays& params, const OnnxOptions& opts,
                        std::ostream* data, const std::string& location) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  if (const std::string why = onnx_unsupported(g, opts); !why.empty()) throw Error(why);
  const auto outputs = chosen_outputs(g, opts);
  const std::vector<char> need = needed_nodes(g, outputs);

  onnx::ModelProto model;
  model.set_ir_version(opts.attention_op ? 10 : 8);
  model.set_producer_name("stag");
  model.set_producer_version("0.1");
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(opts.attention_op ? kOnnxAttentionOpset : kOnnxOpset);
  onnx::GraphProto* gp = model.mutable_graph();
  gp->set_name(opts.graph_name);

  Exporter e(g, &params, opts, gp);
  if (data != nullptr) e.use_external_data(data, location);
  e.find_symbol_sources(need);
  // Inputs first, in graph order, so the model's inputs read like the graph's.
  for (int n = 0; n < g.size(); ++n)
    if (need[static_cast<std::size_t>(n)] && is_model_input(g, n)) e.add_input(n);
  for (int n = 0; n < g.size(); ++n) {
    if (!need[static_cast<std::size_t>(n)] || is_model_input(g, n)) continue;
    entry(op_id(g.node(n).op)).fn(e, n);
  }
  for (const auto& [name, node] : outputs) e.add_output(name, node);
  // Each state tensor's last write, as present.<name>: the caller feeds it back next step.
  std::map<int, int> last_write;
  for (int n = 0; n < g.size(); ++n)
    if (need[static_cast<std::size_t>(n)] && op_id(g.node(n).op) == OpId::cache_write)
      last_write[g.node(n).in[0]] = n;
  for (const auto& [state, node] : last_write) e.add_output("present." + g.name(state), node);

  try {
    // With external data the checker reads the data file, which is not in place yet:
    // export_onnx checks the written model from its path instead (check_written).
    // libonnx 1.12 knows opset 17 at most: an opset-23 model (attention_op) is not checked.
    if (!opts.attention_op) {
      if (data == nullptr) onnx::checker::check_model(model);
      onnx::shape_inference::InferShapes(model);
    }
  } catch (const std::exception& ex) {
    throw Error(std::string("stag: onnx export: the ONNX checker refused the model: ") + ex.what());
  }
  if (model.ByteSizeLong() > kOnnxInlineLimit)
    throw Error("stag: onnx export: the model is " + std::to_string(model.ByteSizeLong() >> 20) +
                " MiB, over protobuf's 2 GiB limit: export_onnx with "
                "OnnxOptions::external_data writes the weights beside it");
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    throw Error("stag: onnx export: the model could not be serialised");
  return bytes;
}

std::int64_t parameter_bytes(const GraphView& g, const NamedArrays& params) {
  std::int64_t total = 0;
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagParam)
      if (auto it = params.find(g.name(n)); it != params.end())
        total += static_cast<std::int64_t>(it->second.bytes());
  return total;
}

// Writes `bytes` to path's temporary file, checked; the caller renames it into place.
void write_checked(const std::string& tmp, const std::string& path,
                   const std::function<void(std::ostream&)>& write) {
  std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
  if (!f) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      throw Error("stag: onnx export: cannot write " + path + ": the folder " + dir.string() +
                  " does not exist");
    throw Error("stag: onnx export: cannot write " + tmp + ": " + std::strerror(errno));
  }
  try {
    write(f);
  } catch (...) {
    f.close();
    std::remove(tmp.c_str());
    throw;
  }
  f.flush();
  if (!f) {
    f.close();
    std::remove(tmp.c_str());
    throw Error("stag: onnx export: writing " + path + " failed (disk full?)");
  }
}

void rename_into_place(const std::string& tmp, const std::string& path) {
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error("stag: onnx export: cannot rename " + tmp + " to " + path);
  }
}
}  // namespace

std::string onnx_model(const GraphView& g, const NamedArrays& params, const OnnxOptions& opts) {
  return build_model(g, params, opts, nullptr, {});
}

void export_onnx(const GraphView& g, const NamedArrays& params, const std::string& path,
                 const OnnxOptions& opts) {
  const bool external = opts.external_data || parameter_bytes(g, params) > kOnnxExternalAbove;
  const std::string data_path = path + ".data";
  std::string bytes;
  if (external) {
    const std::string location = std::filesystem::path(data_path).filename().string();
    write_checked(data_path + ".tmp", data_path,
                  [&](std::ostream& f) { bytes = build_model(g, params, opts, &f, location); });
  } else {
    bytes = build_model(g, params, opts, nullptr, {});
  }
  write_checked(path + ".tmp", path, [&](std::ostream& f) {
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  });
  if (external) {
    // The checker resolves the data file from the model's folder: put the data in place, check
    // the model file, and take both away if it fails.
    rename_into_place(data_path + ".tmp", data_path);
    if (!opts.attention_op) try {
        onnx::checker::check_model(path + ".tmp");
      } catch (const std::exception& ex) {
        std::remove((path + ".tmp").c_str());
        std::remove(data_path.c_str());
        throw Error(std::string("stag: onnx export: the ONNX checker refused the model: ") +
                    ex.what());
      }
  }
  rename_into_place(path + ".tmp", path);
  // The data file of a model this one replaced, which nothing reads any more.
  if (!external) std::remove(data_path.c_str());
}

}  // namespace stag
