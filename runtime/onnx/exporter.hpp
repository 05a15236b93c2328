// The ONNX exporter's internals (runtime/onnx/): the Exporter, which builds the GraphProto (values,
// initializers, symbolic dims at run time, shared patterns such as the masked softmax), and the
// per-op exporters the table of export.cpp points at, defined in export_ops.cpp (elementwise,
// shape, reduction, mask and norm ops) and export_attention.cpp (rope, the fused attention, the
// KV-cache write, cast, cumsum). Included only by those files: it brings protobuf and libonnx.
#pragma once

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <stag/runtime/array.hpp>
#include <stag/runtime/onnx/export.hpp>

namespace stag::onnx_export {

using onnx::TensorProto;

inline int onnx_type(DType t) {
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
inline bool is_model_input(const GraphView& g, int n) {
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

// The exporters: node n of the graph written as ONNX nodes, its value's name left in e.value(n).
void ex_input(Exporter& e, int n);
void ex_parameter(Exporter& e, int n);
void ex_constant(Exporter& e, int n);
void ex_positions(Exporter& e, int n);
void ex_numel(Exporter& e, int n);
void ex_binary(Exporter& e, int n);
void ex_unary(Exporter& e, int n);
void ex_matmul(Exporter& e, int n);
void ex_permute(Exporter& e, int n);
void ex_reshape(Exporter& e, int n);
void ex_expand(Exporter& e, int n);
void ex_identity(Exporter& e, int n);
void ex_slice(Exporter& e, int n);
void ex_concat(Exporter& e, int n);
void ex_reduce(Exporter& e, int n);
void ex_argmax(Exporter& e, int n);
void ex_softmax(Exporter& e, int n);
void ex_compare(Exporter& e, int n);
void ex_logical(Exporter& e, int n);
void ex_where(Exporter& e, int n);
void ex_masked_fill(Exporter& e, int n);
void ex_causal_mask(Exporter& e, int n);
void ex_padding_mask(Exporter& e, int n);
void ex_layer_norm(Exporter& e, int n);
void ex_rms_norm(Exporter& e, int n);
void ex_embedding(Exporter& e, int n);
void ex_rope(Exporter& e, int n);
void ex_attention(Exporter& e, int n);
void ex_cache_write(Exporter& e, int n);
void ex_cast(Exporter& e, int n);
void ex_cumsum(Exporter& e, int n);

}  // namespace stag::onnx_export
