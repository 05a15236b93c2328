// The CUDA backend's kernel table: for every op, the factory that turns a planned node into a
// NodeKernel calling its launch function (ops/<op>/cuda.cu), or the reason the GPU cannot run
// it. A static_assert below names any op that has neither, so a new op cannot be forgotten.
// Factories check dtypes and layouts at plan time and refuse what the kernels do not handle.
#include <cmath>
#include <cstring>
#include <span>

#include <stag/ops/attention/positions.hpp>
#include <stag/ops/cache_write/position.hpp>
#include <stag/ops/op_traits.hpp>
#include <stag/runtime/array.hpp>
#include <stag/runtime/cuda/backend.hpp>
#include <stag/runtime/cuda/kernels.hpp>

namespace stag::STAG_CUDA_NAMESPACE {

static_assert(kRank == kMaxRank, "the launch interface's rank must be stag's");
static_assert(static_cast<int>(Dt::boolean) == static_cast<int>(DType::boolean) &&
                  static_cast<int>(Dt::bf16) == static_cast<int>(DType::bf16) &&
                  static_cast<int>(Dt::i64) == static_cast<int>(DType::i64),
              "cuda::Dt must number the dtypes as stag::DType");

Tensor tensor(const TensorView& v) {
  Tensor t;
  t.data = v.data;
  t.dtype = static_cast<Dt>(v.dtype);
  t.rank = v.rank;
  for (int d = 0; d < v.rank; ++d) {
    t.dims[d] = v.dims[d];
    t.strides[d] = v.strides[d];
  }
  return t;
}

Tensor sub(const Tensor& whole, int axis, std::int64_t start, std::int64_t len) {
  Tensor t = whole;
  t.dims[axis] = len;
  t.data = static_cast<char*>(whole.data) +
           start * whole.strides[axis] *
               static_cast<std::int64_t>(dtype_size(static_cast<DType>(whole.dtype)));
  return t;
}

void refuse(const KernelNode& n, const std::string& why) {
  throw Error("stag: cuda cannot run node '" + n.name() + "' (op " +
              std::string(op_name(n.n().op)) + "): " + why);
}

NodeKernel::NodeKernel(const KernelNode& n, PlanState& s, std::string what, bool reports)
    : g_(n.g),
      node_(n.node),
      in_(n.in),
      out_(n.out),
      state_(n.state),
      s_(s),
      what_(std::move(what)) {
  if (reports) s.reporters[static_cast<std::size_t>(n.node)] = this;
}

NodeKernel::~NodeKernel() {
  if (s_.reporters.size() > static_cast<std::size_t>(node_) &&
      s_.reporters[static_cast<std::size_t>(node_)] == this)
    s_.reporters[static_cast<std::size_t>(node_)] = nullptr;
  for (void* w : workspaces_) s_.backend->free(w);
}

void* NodeKernel::workspace(std::size_t bytes) {
  workspaces_.push_back(s_.backend->alloc(bytes));
  return workspaces_.back();
}

void NodeKernel::run() {
  Launch l;
  l.stream = s_.backend->stream();
  l.bad = s_.bad;
  l.tag = static_cast<unsigned long long>(node_);
  l.rng = s_.rng;
  fn_(l);
  check(cudaGetLastError(), ("launching " + what_ + " for " + g_.name(node_)).c_str());
}

// The node's inputs copied to the host, and its reference kernel run on them: it throws the
// same Error the CPU would have (an id outside the table, a label outside the classes, ...).
void NodeKernel::rethrow_on_host() const {
  std::vector<Array> host;
  std::vector<TensorView> views;
  for (const TensorView& v : in_) {
    Array a(v.dtype, std::vector<std::int64_t>(v.dims, v.dims + v.rank));
    if (v.contiguous() && a.bytes() > 0) s_.backend->to_host(a.raw(), v.data, a.bytes());
    host.push_back(a);
  }
  for (const Array& a : host) views.push_back(a.view());
  Array out(out_.dtype, std::vector<std::int64_t>(out_.dims, out_.dims + out_.rank));
  const KernelFn ref = kReferenceKernels[g_.node(node_).op.value];
  if (ref != nullptr) ref(KernelArgs{g_, node_, views, out.view(), state_});
  throw Error("stag: cuda: node '" + g_.name(node_) +
              "' reported a bad input that the reference "
              "kernel accepts (a CUDA kernel bug)");
}

namespace {

int op_int(const KernelNode& n) {
  return static_cast<int>(op_id(n.n().op));
}
bool float_type(DType t) {
  return t == DType::f32 || t == DType::f64;
}
void need_float(const KernelNode& n, DType t) {
  if (!float_type(t))
    refuse(n, std::string("dtype ") + std::string(dtype_name(t)) +
                  " (the CUDA kernel handles f32 and f64)");
}
void need_contiguous(const KernelNode& n) {
  for (std::size_t k = 0; k < n.in.size(); ++k)
    if (!n.in[k].contiguous())
      refuse(n, "input " + std::to_string(k) + " is strided (internal: the plan must copy it)");
  if (!n.out.contiguous()) refuse(n, "strided output (internal)");
}
// Runs the op's reference kernel on views without data: for checks that depend only on
// dims and attrs (a slice out of range, a dropout p outside [0, 1)), which then throw the
// CPU's message at plan time. Only called when the check is known to fail.
[[noreturn]] void throw_reference_check(const KernelNode& n) {
  std::vector<TensorView> in = n.in;
  for (TensorView& v : in) v.data = nullptr;
  TensorView out = n.out;
  out.data = nullptr;
  kReferenceKernels[n.n().op.value](KernelArgs{n.g, n.node, in, out, n.state});
  refuse(n, "invalid attributes");
}

template <class Fn>
std::unique_ptr<Kernel> node(const KernelNode& n, PlanState& s, std::string what, Fn fn,
                             bool reports = false) {
  auto k = std::make_unique<NodeKernel>(n, s, "cuda " + what, reports);
  k->set(std::move(fn));
  return k;
}

// ---- elementwise ----------------------------------------------------------------------------
std::unique_ptr<Kernel> make_unary(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  const int op = op_int(n);
  const double p = n.attr().f[0], q = n.attr().f[1];
  const Tensor x = tensor(n.in[0]), y = tensor(n.out);
  return node(n, s, "unary", [=](const Launch& l) { unary(l, op, p, q, x, y); });
}
std::unique_ptr<Kernel> make_unary_backward(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  const auto fwd = static_cast<int>(n.attr().i[0]);
  const double p = n.attr().f[0], q = n.attr().f[1];
  const Tensor x = tensor(n.in[0]), y = tensor(n.in[1]), g = tensor(n.in[2]), dx = tensor(n.out);
  return node(n, s, "unary_backward",
              [=](const Launch& l) { unary_backward(l, fwd, p, q, x, y, g, dx); });
}
std::unique_ptr<Kernel> make_binary(const KernelNode& n, PlanState& s) {
  const DType t = n.out.dtype;
  if (t == DType::bf16 || t == DType::boolean) refuse(n, "dtype " + std::string(dtype_name(t)));
  const int op = op_int(n);
  const Tensor a = tensor(n.in[0]), b = tensor(n.in[1]), out = tensor(n.out);
  const bool reports = op_id(n.n().op) == OpId::div && !float_type(t);
  return node(
      n, s, "binary", [=](const Launch& l) { binary(l, op, a, b, out); }, reports);
}
std::unique_ptr<Kernel> make_compare(const KernelNode& n, PlanState& s) {
  if (n.in[0].dtype == DType::bf16) refuse(n, "bf16 operands");
  const int op = op_int(n);
  const Tensor a = tensor(n.in[0]), b = tensor(n.in[1]), out = tensor(n.out);
  return node(n, s, "compare", [=](const Launch& l) { compare(l, op, a, b, out); });
}
std::unique_ptr<Kernel> make_logical(const KernelNode& n, PlanState& s) {
  const int op = op_int(n);
  const Tensor a = tensor(n.in[0]), b = tensor(n.in.size() > 1 ? n.in[1] : n.in[0]),
               out = tensor(n.out);
  return node(n, s, "logical", [=](const Launch& l) { logical(l, op, a, b, out); });
}
std::unique_ptr<Kernel> make_where(const KernelNode& n, PlanState& s) {
  const Tensor c = tensor(n.in[0]), a = tensor(n.in[1]), b = tensor(n.in[2]), out = tensor(n.out);
  return node(n, s, "where", [=](const Launch& l) { where(l, c, a, b, out); });
}
std::unique_ptr<Kernel> make_masked_fill(const KernelNode& n, PlanState& s) {
  const double value = n.attr().f[0];
  const Tensor x = tensor(n.in[0]), m = tensor(n.in[1]), out = tensor(n.out);
  return node(n, s, "masked_fill", [=](const Launch& l) { masked_fill(l, x, m, value, out); });
}
// A strided copy: out's dims, x read through `x` (already reshaped to out's dims).
std::unique_ptr<Kernel> copy_node(const KernelNode& n, PlanState& s, std::string what, Tensor x,
                                  Tensor out) {
  return node(n, s, std::move(what), [=](const Launch& l) { convert(l, x, out); });
}
std::unique_ptr<Kernel> make_cast(const KernelNode& n, PlanState& s) {
  return copy_node(n, s, "cast", tensor(n.in[0]), tensor(n.out));
}
std::unique_ptr<Kernel> make_copy(const KernelNode& n, PlanState& s) {  // stop_gradient, expand
  return copy_node(n, s, "copy", tensor(n.in[0]), tensor(n.out));
}
std::unique_ptr<Kernel> make_reshape(const KernelNode& n, PlanState& s) {
  // The input's elements in row-major order: write them into out viewed with the input's dims.
  Tensor out = tensor(n.in[0]);
  out.data = n.out.data;
  std::int64_t st = 1;
  for (int d = out.rank - 1; d >= 0; --d) {
    out.strides[d] = st;
    st *= out.dims[d];
  }
  return copy_node(n, s, "copy (reshape)", tensor(n.in[0]), out);
}
std::unique_ptr<Kernel> make_permute(const KernelNode& n, PlanState& s) {
  Tensor x = tensor(n.in[0]);
  const Tensor src = x;
  for (int k = 0; k < x.rank; ++k) {
    const auto p = static_cast<int>(n.attr().i[k]);
    x.dims[k] = src.dims[p];
    x.strides[k] = src.strides[p];
  }
  return copy_node(n, s, "copy (permute)", x, tensor(n.out));
}
std::unique_ptr<Kernel> make_slice(const KernelNode& n, PlanState& s) {
  const auto axis = static_cast<int>(n.attr().i[0]);
  const std::int64_t start = n.attr().i[1], end = n.attr().i[2];
  if (!(start >= 0 && end >= start && end <= n.in[0].dims[axis])) throw_reference_check(n);
  return copy_node(n, s, "copy (slice)", sub(tensor(n.in[0]), axis, start, end - start),
                   tensor(n.out));
}
std::unique_ptr<Kernel> make_slice_backward(const KernelNode& n, PlanState& s) {
  const auto axis = static_cast<int>(n.attr().i[0]);
  const std::int64_t start = n.attr().i[1], end = n.attr().i[2];
  if (!(start >= 0 && end >= start && end <= n.out.dims[axis])) throw_reference_check(n);
  const Tensor part = tensor(n.in[0]), out = tensor(n.out);
  const Tensor dst = sub(out, axis, start, end - start);
  return node(n, s, "slice_backward", [=](const Launch& l) {
    fill(l, 0.0, out);
    convert(l, part, dst);
  });
}
std::unique_ptr<Kernel> make_concat(const KernelNode& n, PlanState& s) {
  const auto axis = static_cast<int>(n.attr().i[0]);
  std::vector<std::pair<Tensor, Tensor>> copies;
  std::int64_t offset = 0;
  const Tensor out = tensor(n.out);
  for (const TensorView& part : n.in) {
    copies.emplace_back(tensor(part), sub(out, axis, offset, part.dims[axis]));
    offset += part.dims[axis];
  }
  if (offset != n.out.dims[axis]) refuse(n, "internal: the inputs do not fill the output");
  return node(n, s, "concat", [=](const Launch& l) {
    for (const auto& [src, dst] : copies) convert(l, src, dst);
  });
}
std::unique_ptr<Kernel> make_concat_backward(const KernelNode& n, PlanState& s) {
  const auto axis = static_cast<int>(n.attr().i[0]);
  const std::int64_t prefix = n.attr().i[2], total = n.attr().i[3];
  const std::int64_t whole = n.in[0].dims[axis];
  if (total < 0 || prefix < 0 || (total > 0 && whole % total != 0)) throw_reference_check(n);
  const std::int64_t offset = prefix * (total > 0 ? whole / total : 0);
  if (offset + n.out.dims[axis] > whole) throw_reference_check(n);
  return copy_node(n, s, "copy (concat_backward)",
                   sub(tensor(n.in[0]), axis, offset, n.out.dims[axis]), tensor(n.out));
}
std::unique_ptr<Kernel> make_constant(const KernelNode& n, PlanState& s) {
  const double v = n.attr().f[0];
  const Tensor out = tensor(n.out);
  return node(n, s, "fill", [=](const Launch& l) { fill(l, v, out); });
}
std::unique_ptr<Kernel> make_numel(const KernelNode& n, PlanState& s) {
  double count = 1;  // known when the plan is made: the bound dims
  const auto mask = static_cast<std::uint32_t>(n.attr().i[0]);
  for (int d = 0; d < n.in[0].rank; ++d)
    if (mask & (1u << d)) count *= static_cast<double>(n.in[0].dims[d]);
  const Tensor out = tensor(n.out);
  return node(n, s, "fill (numel)", [=](const Launch& l) { fill(l, count, out); });
}
std::unique_ptr<Kernel> make_positions(const KernelNode& n, PlanState& s) {
  const std::int64_t start = n.attr().i[0];
  const Tensor out = tensor(n.out);
  return node(n, s, "iota", [=](const Launch& l) { iota(l, start, out); });
}
std::unique_ptr<Kernel> make_causal_mask(const KernelNode& n, PlanState& s) {
  const Tensor out = tensor(n.out);
  return node(n, s, "causal_mask", [=](const Launch& l) { causal_mask(l, out); });
}
std::unique_ptr<Kernel> make_padding_mask(const KernelNode& n, PlanState& s) {
  need_contiguous(n);
  const Tensor len = tensor(n.in[0]), out = tensor(n.out);
  return node(
      n, s, "padding_mask", [=](const Launch& l) { padding_mask(l, len, out); }, true);
}
std::unique_ptr<Kernel> make_dropout(const KernelNode& n, PlanState& s) {
  const double p = n.attr().f[0];
  if (!(p >= 0.0 && p < 1.0)) throw_reference_check(n);
  need_float(n, n.out.dtype);
  need_contiguous(n);
  const auto salt = static_cast<std::uint64_t>(n.attr().i[0]);
  const Tensor x = tensor(n.in[0]), out = tensor(n.out);
  const RunState* st = &n.state;
  const std::int64_t count = n.out.numel();
  return node(n, s, "dropout", [=](const Launch& l) {
    if (!st->training || p == 0.0) {
      if (x.data != out.data) convert(l, x, out);
      return;
    }
    dropout(l, p, salt, global_index_offset(*st, count), x, out);
  });
}

// ---- rows -------------------------------------------------------------------------------------
std::int64_t normalised_length(const KernelNode& n) {
  const auto k = static_cast<int>(n.attr().i[0]);
  if (k < 1 || k > n.in[0].rank) refuse(n, "bad number of normalised dims");
  std::int64_t len = 1;
  for (int d = n.in[0].rank - k; d < n.in[0].rank; ++d) len *= n.in[0].dims[d];
  return len;
}
std::unique_ptr<Kernel> make_softmax(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  need_contiguous(n);
  const bool log = op_id(n.n().op) == OpId::log_softmax;
  const auto axis = static_cast<int>(n.attr().i[0]);
  const Tensor x = tensor(n.in[0]), out = tensor(n.out);
  const bool masked = n.in.size() > 1;
  const Tensor m = masked ? tensor(n.in[1]) : Tensor{};
  return node(n, s, log ? "log_softmax" : "softmax",
              [=](const Launch& l) { softmax(l, log, axis, x, masked ? &m : nullptr, out); });
}
std::unique_ptr<Kernel> make_softmax_backward(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  need_contiguous(n);
  const bool log = op_id(n.n().op) == OpId::log_softmax_backward;
  const auto axis = static_cast<int>(n.attr().i[0]);
  const Tensor y = tensor(n.in[0]), g = tensor(n.in[1]), out = tensor(n.out);
  return node(n, s, "softmax_backward",
              [=](const Launch& l) { softmax_backward(l, log, axis, y, g, out); });
}
// layer_norm (x, [w, b]), rms_norm (x, [w]) and their backward ops (x, [w], g): one factory.
std::unique_ptr<Kernel> make_norm(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  need_contiguous(n);
  const OpId op = op_id(n.n().op);
  const bool backward = op == OpId::layer_norm_backward || op == OpId::rms_norm_backward;
  const bool layer = op == OpId::layer_norm || op == OpId::layer_norm_backward;
  const std::int64_t len = normalised_length(n);
  const double eps = n.attr().f[0];
  const bool weighted = n.in.size() > (backward ? 2u : 1u);
  const Tensor x = tensor(n.in[0]), out = tensor(n.out);
  const Tensor w = weighted ? tensor(n.in[1]) : Tensor{};
  if (backward) {
    const Tensor g = tensor(n.in.back());
    return node(n, s, std::string(op_name(n.n().op)), [=](const Launch& l) {
      if (layer)
        layer_norm_backward(l, len, eps, x, weighted ? &w : nullptr, g, out);
      else
        rms_norm_backward(l, len, eps, x, weighted ? &w : nullptr, g, out);
    });
  }
  const Tensor b = layer && weighted ? tensor(n.in[2]) : Tensor{};
  return node(n, s, std::string(op_name(n.n().op)), [=](const Launch& l) {
    if (layer)
      layer_norm(l, len, eps, x, weighted ? &w : nullptr, weighted ? &b : nullptr, out);
    else
      rms_norm(l, len, eps, x, weighted ? &w : nullptr, out);
  });
}
std::unique_ptr<Kernel> make_reduce(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  const OpId op = op_id(n.n().op);
  const int fold = op == OpId::sum ? 0 : (op == OpId::mean ? 1 : 2);
  const auto mask = static_cast<std::uint32_t>(n.attr().i[0]);
  const Tensor x = tensor(n.in[0]), out = tensor(n.out);
  return node(n, s, "reduce", [=](const Launch& l) { reduce(l, fold, mask, x, out); });
}
constexpr const char* kModsRefused =
    "score_mod / mask_mod are compiled for the host; the GPU attention kernel does not run them "
    "yet";
bool has_mods(const GraphView& g, int n) {
  const OpId op = op_id(g.node(n).op);
  return (op == OpId::attention || op == OpId::attention_backward ||
          op == OpId::attention_backward_kv) &&
         g.attr(n).i[4] == 2;
}

// attention (q, k, v, [keep | pos]), attention_backward (q, k, v, o, do, [keep | pos]) and
// attention_backward_kv (dq, then attention_backward's inputs): one factory.
std::unique_ptr<Kernel> make_attention(const KernelNode& n, PlanState& s) {
  const OpId op = op_id(n.n().op);
  const std::span<const TensorView> in =
      op == OpId::attention_backward_kv ? std::span(n.in).subspan(1) : std::span(n.in);
  const Attrs& at = n.attr();
  if (at.i[4] == 2) refuse(n, kModsRefused);
  need_float(n, n.out.dtype);
  need_contiguous(n);
  const TensorView &q = in[0], &k = in[1], &v = in[2];
  if (q.dtype != k.dtype || q.dtype != v.dtype ||
      (q.dtype != DType::f32 && q.dtype != DType::f64 && q.dtype != DType::bf16))
    refuse(n, "q, k and v must share one dtype: f32, f64 or bf16");
  AttentionArgs a;
  a.q = q.data;
  a.k = k.data;
  a.v = v.data;
  a.qt = static_cast<Dt>(q.dtype);
  const kernel::AttentionDims dims = kernel::attention_dims(q, k, v);
  a.B = dims.B;
  a.Hq = dims.Hq;
  a.Hkv = dims.Hkv;
  a.Sq = dims.Sq;
  a.Sk = dims.Sk;
  a.Dk = dims.Dk;
  a.Dv = dims.Dv;
  if (a.Dk > kMaxHeadDim || a.Dv > kMaxHeadDim)
    refuse(n, "head dims above " + std::to_string(kMaxHeadDim) + " are not supported on the GPU");
  a.mask_kind = static_cast<int>(at.i[0]);
  a.window = at.i[1];
  a.salt = static_cast<std::uint64_t>(at.i[2]);
  a.scale = at.i[3] ? 1.0 / std::sqrt(static_cast<double>(a.Dk)) : at.f[0];
  a.score_kind = static_cast<int>(at.i[6]);
  a.softcap = at.f[2];
  const bool backward = op != OpId::attention;
  if (backward) {
    a.g = in[4].data;
    a.gt = static_cast<Dt>(in[4].dtype);
  }
  const std::size_t extra = backward ? 5 : 3;  // the keep mask or the positions
  if (at.i[4] == 1) {
    a.pos = static_cast<const std::int32_t*>(in[extra].data);
  } else if (in.size() > extra) {
    kernel::keep_strides(in[extra], dims, a.keep_st);
    a.keep = static_cast<const bool*>(in[extra].data);
  }
  const double drop = at.f[1];
  const RunState* st = &n.state;
  const std::int64_t weights = a.B * a.Hq * a.Sq * a.Sk;
  const Tensor out = tensor(n.out);
  auto kern = std::make_unique<NodeKernel>(n, s, "cuda " + std::string(op_name(n.n().op)),
                                           a.pos != nullptr);
  void* ws = backward ? kern->workspace(attention_workspace(a)) : nullptr;
  const bool dv = at.i[5] == 1;
  kern->set([=](const Launch& l) {
    AttentionArgs run = a;
    if (st->training && drop > 0) {
      run.drop = drop;
      run.rng = l.rng;
      run.index_offset = global_index_offset(*st, weights);
    }
    if (op == OpId::attention)
      attention_forward(l, run, out);
    else if (op == OpId::attention_backward)
      attention_backward_dq(l, run, out, ws);
    else
      attention_backward_kv(l, run, dv, out, ws);
  });
  return kern;
}
std::unique_ptr<Kernel> make_cache_write(const KernelNode& n, PlanState& s) {
  need_contiguous(n);
  const TensorView &cache = n.in[0], &rows = n.in[1], &pos = n.in[2];
  if (pos.dtype != DType::i32 && pos.dtype != DType::i64)
    refuse(n,
           "cache_write positions must be i32 or i64, got " + std::string(dtype_name(pos.dtype)));
  if (rows.dtype != cache.dtype) refuse(n, "rows and cache differ in dtype");
  const kernel::CacheWriteLayout lay = kernel::cache_write_layout(cache, rows);
  CacheWriteArgs a;
  a.pos = pos.data;
  a.pos64 = pos.dtype == DType::i64;
  // Per row as the reference decides it (kernel::cache_write_positions): pos is [B] in the graph.
  const ShapeV& ps = n.g.shape(n.g.node(n.node).in[2]);
  a.per_row = cache.rank >= 3 && ps.rank == 1 && !(ps.dims[0] == static_dim(1)) &&
              ps.dims[0] == n.g.shape(n.g.node(n.node).in[0]).dims[0];
  a.batch = cache.rank >= 3 ? cache.dims[0] : 1;
  a.outer = lay.outer;
  a.inner = lay.inner;
  a.len = lay.len;
  a.t = lay.t;
  a.d = cache.dims[cache.rank - 1];
  const Tensor c = tensor(cache), r = tensor(rows), out = tensor(n.out);
  const bool copy = n.out.data != cache.data;  // the result is not the cache's own bytes
  return node(
      n, s, "cache_write",
      [=](const Launch& l) {
        cache_write(l, a, r, c);
        if (copy) convert(l, c, out);
      },
      true);
}
std::unique_ptr<Kernel> make_argmax(const KernelNode& n, PlanState& s) {
  const DType t = n.in[0].dtype;
  if (t != DType::f32 && t != DType::f64 && t != DType::i32 && t != DType::i64)
    refuse(n, "argmax takes f32, f64, i32 or i64, got " + std::string(dtype_name(t)));
  need_contiguous(n);
  const int axis = static_cast<int>(n.attr().i[0]);
  const std::int64_t len = n.in[0].dims[axis];
  if (n.out.numel() > 0 && (len == 0 || len > INT32_MAX))
    throw_reference_check(n);  // the CPU's message: an empty dim, or indices past i32
  const Tensor x = tensor(n.in[0]), out = tensor(n.out);
  return node(n, s, "argmax", [=](const Launch& l) { argmax(l, axis, x, out); });
}
std::unique_ptr<Kernel> make_cumsum(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  need_contiguous(n);
  const int axis = static_cast<int>(n.attr().i[0]);
  const bool reverse = n.attr().i[1] != 0;
  const Tensor x = tensor(n.in[0]), out = tensor(n.out);
  return node(n, s, "cumsum", [=](const Launch& l) { cumsum(l, axis, reverse, x, out); });
}
void need_ids(const KernelNode& n, const TensorView& ids, const char* what) {
  if (ids.dtype != DType::i32 && ids.dtype != DType::i64)
    refuse(n, std::string(what) + " must be i32 or i64, got " + std::string(dtype_name(ids.dtype)));
}
std::unique_ptr<Kernel> make_cross_entropy(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  need_contiguous(n);
  need_ids(n, n.in[1], "labels");
  const std::int64_t ignore = n.attr().i[0];
  const double eps = n.attr().f[0];
  const Tensor x = tensor(n.in[0]), y = tensor(n.in[1]), out = tensor(n.out);
  auto k = std::make_unique<NodeKernel>(n, s, "cuda cross_entropy", true);
  void* ws = k->workspace(cross_entropy_workspace(n.in[1].numel()));
  if (op_id(n.n().op) == OpId::cross_entropy) {
    k->set([=](const Launch& l) { cross_entropy(l, ignore, eps, x, y, out, ws); });
  } else {
    const Tensor g = tensor(n.in[2]);
    k->set([=](const Launch& l) { cross_entropy_backward(l, ignore, eps, x, y, g, out, ws); });
  }
  return k;
}
std::unique_ptr<Kernel> make_mse_loss(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  need_contiguous(n);
  const Tensor p = tensor(n.in[0]), t = tensor(n.in[1]), out = tensor(n.out);
  return node(n, s, "mse_loss", [=](const Launch& l) { mse_loss(l, p, t, out); });
}
std::unique_ptr<Kernel> make_embedding(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  need_contiguous(n);
  need_ids(n, n.in[0], "ids");
  const Tensor ids = tensor(n.in[0]), out = tensor(n.out);
  if (op_id(n.n().op) == OpId::embedding) {
    const Tensor table = tensor(n.in[1]);
    return node(
        n, s, "embedding", [=](const Launch& l) { embedding(l, ids, table, out); }, true);
  }
  const Tensor g = tensor(n.in[1]);
  auto k =
      std::make_unique<NodeKernel>(n, s, "cuda embedding_backward (sorted, deterministic)", true);
  const std::size_t bytes = embedding_backward_workspace(n.in[0].numel());
  void* ws = k->workspace(bytes);
  k->set([=](const Launch& l) { embedding_backward(l, ids, g, out, ws, bytes); });
  return k;
}

std::unique_ptr<Kernel> make_rope(const KernelNode& n, PlanState& s) {
  need_float(n, n.out.dtype);
  need_contiguous(n);
  const double theta = n.attr().f[0];
  const std::int64_t dh = n.in[0].dims[n.in[0].rank - 1];
  if (dh % 2 != 0 || !(theta > 0.0)) throw_reference_check(n);
  const std::int64_t offset = n.attr().i[0];
  const bool inverse = n.attr().i[1] != 0;
  const Tensor x = tensor(n.in[0]), out = tensor(n.out);
  const bool has_pos = n.in.size() > 1;
  const Tensor pos = has_pos ? tensor(n.in[1]) : Tensor{};
  return node(n, s, "rope", [=](const Launch& l) {
    rope(l, theta, offset, inverse, x, has_pos ? &pos : nullptr, out);
  });
}

// ---- optimizers -------------------------------------------------------------------------------
const float* scalar(const KernelNode& n, std::size_t k, std::int64_t count = 1) {
  const TensorView& v = n.in[k];
  if (v.dtype != DType::f32 || v.numel() != count)
    refuse(n, "input " + std::to_string(k) + " must be f32 with " + std::to_string(count) +
                  " element(s), got " + std::string(dtype_name(v.dtype)));
  return static_cast<const float*>(v.data);
}
OptimAttrs optim_attrs(const KernelNode& n) {
  OptimAttrs a;
  for (int k = 0; k < 4; ++k) a.f[k] = n.attr().f[k];
  for (int k = 0; k < 2; ++k) a.i[k] = n.attr().i[k];
  return a;
}
std::unique_ptr<Kernel> make_sgd(const KernelNode& n, PlanState& s) {
  if (n.in[0].dtype != DType::f32 || n.out.dtype != DType::f32)
    refuse(n, "the CUDA update handles f32 parameters");
  const OptimAttrs at = optim_attrs(n);
  const Tensor p = tensor(n.in[0]), g = tensor(n.in[1]), buf = tensor(n.in[2]), out = tensor(n.out);
  const float* lr = scalar(n, 3);
  const float* gs = scalar(n, 4);
  const float* hp = n.in.size() > 5 ? scalar(n, 5, 2) : nullptr;
  return node(n, s, "sgd_update",
              [=](const Launch& l) { sgd_update(l, at, p, g, buf, lr, gs, hp, out); });
}
std::unique_ptr<Kernel> make_adam(const KernelNode& n, PlanState& s) {
  if (n.in[0].dtype != DType::f32 || n.out.dtype != DType::f32)
    refuse(n, "the CUDA update handles f32 parameters");
  const OptimAttrs at = optim_attrs(n);
  const Tensor p = tensor(n.in[0]), g = tensor(n.in[1]), m = tensor(n.in[2]), v = tensor(n.in[3]),
               out = tensor(n.out);
  const float* lr = scalar(n, 4);
  const float* t = scalar(n, 5);
  const float* gs = scalar(n, 6);
  const float* hp = n.in.size() > 7 ? scalar(n, 7, 4) : nullptr;
  return node(n, s, "adam_update",
              [=](const Launch& l) { adam_update(l, at, p, g, m, v, lr, t, gs, hp, out); });
}

constexpr const char* kSource = "a graph source, never a kernel";

// Every op: its factory, or why it has none. No default case: a new op without an entry
// returns {} and fails the static_assert below, which names it.
constexpr OpSupport entry(OpId op) {
  switch (op) {
    case OpId::input:
    case OpId::parameter:
      return {nullptr, kSource};
    case OpId::constant:
      return {&make_constant};
    case OpId::positions:
      return {&make_positions};
    case OpId::numel:
      return {&make_numel};
    case OpId::add:
    case OpId::sub:
    case OpId::mul:
    case OpId::div:
    case OpId::minimum:
    case OpId::maximum:
      return {&make_binary};
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
      return {&make_unary};
    case OpId::unary_backward:
      return {&make_unary_backward};
    case OpId::matmul:
      return {&make_matmul};
    case OpId::permute:
      return {&make_permute};
    case OpId::reshape:
    case OpId::unsqueeze:
    case OpId::squeeze:
      return {&make_reshape};
    case OpId::expand:
    case OpId::stop_gradient:
      return {&make_copy};
    case OpId::slice:
      return {&make_slice};
    case OpId::slice_backward:
      return {&make_slice_backward};
    case OpId::concat:
      return {&make_concat};
    case OpId::concat_backward:
      return {&make_concat_backward};
    case OpId::sum:
    case OpId::mean:
    case OpId::max:
      return {&make_reduce};
    case OpId::argmax:
      return {&make_argmax};
    case OpId::softmax:
    case OpId::log_softmax:
      return {&make_softmax};
    case OpId::softmax_backward:
    case OpId::log_softmax_backward:
      return {&make_softmax_backward};
    case OpId::lt:
    case OpId::le:
    case OpId::eq:
      return {&make_compare};
    case OpId::logical_and:
    case OpId::logical_or:
    case OpId::logical_not:
      return {&make_logical};
    case OpId::where:
      return {&make_where};
    case OpId::masked_fill:
      return {&make_masked_fill};
    case OpId::causal_mask:
      return {&make_causal_mask};
    case OpId::padding_mask:
      return {&make_padding_mask};
    case OpId::layer_norm:
    case OpId::layer_norm_backward:
    case OpId::rms_norm:
    case OpId::rms_norm_backward:
      return {&make_norm};
    case OpId::embedding:
    case OpId::embedding_backward:
      return {&make_embedding};
    case OpId::cross_entropy:
    case OpId::cross_entropy_backward:
      return {&make_cross_entropy};
    case OpId::mse_loss:
      return {&make_mse_loss};
    case OpId::rope:
      return {&make_rope};
    case OpId::cache_write:
      return {&make_cache_write};
    case OpId::attention:
    case OpId::attention_backward:
    case OpId::attention_backward_kv:
      return {&make_attention};
    case OpId::dropout:
      return {&make_dropout};
    case OpId::cast:
      return {&make_cast};
    case OpId::sgd_update:
      return {&make_sgd};
    case OpId::adam_update:
      return {&make_adam};
    case OpId::cumsum:
      return {&make_cumsum};
    case OpId::count:
      break;
  }
  return {};
}

#define STAG_X(name)                                                                           \
  static_assert(entry(OpId::name).make != nullptr || entry(OpId::name).unsupported != nullptr, \
                "stag CUDA backend: op '" #name                                                \
                "' has neither a CUDA kernel nor a reason in runtime/cuda/kernels.cpp");
STAG_OP_LIST(STAG_X)
#undef STAG_X

constexpr std::array<OpSupport, kOpCount> kTable = [] {
  std::array<OpSupport, kOpCount> t{};
  for (int i = 0; i < kOpCount; ++i) t[static_cast<std::size_t>(i)] = entry(static_cast<OpId>(i));
  return t;
}();

}  // namespace

const OpSupport& support(OpId op) {
  return kTable[static_cast<std::size_t>(op)];
}

std::string unsupported(const GraphView& g) {
  for (int n = 0; n < g.size(); ++n) {
    const OpSupport& s = support(op_id(g.node(n).op));
    const OpId op = op_id(g.node(n).op);
    if (s.make == nullptr && op != OpId::input && op != OpId::parameter)
      return "stag: cuda cannot run node '" + g.name(n) + "' (op " +
             std::string(op_name(g.node(n).op)) + "): " + s.unsupported;
    if (has_mods(g, n))  // refused by the factory too (make_attention)
      return "stag: cuda cannot run node '" + g.name(n) + "' (op " +
             std::string(op_name(g.node(n).op)) + "): " + kModsRefused;
  }
  return "";
}

// The kernels that read every input through its own strides (and broadcast): the elementwise
// family, the copies and the reductions. Others get dense inputs (the plan copies a permute).
std::uint8_t strided_bits(OpId op) {
  const Factory f = support(op).make;
  const bool strided = f == &make_unary || f == &make_unary_backward || f == &make_binary ||
                       f == &make_compare || f == &make_logical || f == &make_where ||
                       f == &make_masked_fill || f == &make_cast || f == &make_copy ||
                       f == &make_reduce;
  return strided ? 0xff : 0;
}

}  // namespace stag::STAG_CUDA_NAMESPACE
