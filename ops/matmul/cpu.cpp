// CPU kernel of matmul: one oneDNN matmul primitive. Transposed operands and permuted
// (strided) inputs are passed as strides, without copies; a linear layer ([.., K] @ [K, N])
// is collapsed to one 2-D product; consumers the planner folded in (a bias add, a constant
// scale, an activation) become oneDNN's bias, output scale and eltwise post-op. If oneDNN
// rejects a stride pattern, the strided operand is reordered into contiguous scratch first.
// Without bf16 matmuls in oneDNN (an AVX2 CPU), bf16 operands are widened to f32 first.
#include <optional>
#include <vector>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/matmul/matmul.hpp>
#include <stag/ops/registry.hpp>

namespace stag {

// A few rows by a large [N, K] weight (a decode step), own kernel (cpu_matvec.cpp); nullptr
// where it does not apply.
std::unique_ptr<Kernel> matvec_kernel(const TensorView& a, const TensorView& b, const TensorView& c,
                                      const std::vector<PostOp>& post, const std::string& folded);

namespace {

void swap_last_two(TensorView& v) {
  std::swap(v.dims[v.rank - 1], v.dims[v.rank - 2]);
  std::swap(v.strides[v.rank - 1], v.strides[v.rank - 2]);
}

// Rows of [d0, ..., dk, K] collapse to one dim when each batch stride steps over whole rows.
bool rows_collapse(const TensorView& v) {
  for (int i = 0; i < v.rank - 2; ++i)
    if (v.dims[i] != 1 && v.strides[i] != v.strides[i + 1] * v.dims[i + 1]) return false;
  return true;
}

TensorView collapse_rows(const TensorView& v) {
  TensorView c = v;
  c.rank = 2;
  c.dims[0] = 1;
  for (int i = 0; i < v.rank - 1; ++i) c.dims[0] *= v.dims[i];
  c.dims[1] = v.dims[v.rank - 1];
  c.strides[0] = v.strides[v.rank - 2];
  c.strides[1] = v.strides[v.rank - 1];
  return c;
}

dnnl::algorithm eltwise_alg(OpId act) {
  switch (act) {
    case OpId::relu:
      return dnnl::algorithm::eltwise_relu;
    case OpId::gelu:
      return dnnl::algorithm::eltwise_gelu_erf;
    case OpId::gelu_tanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case OpId::silu:
      return dnnl::algorithm::eltwise_swish;
    case OpId::sigmoid:
      return dnnl::algorithm::eltwise_logistic;
    default:
      return dnnl::algorithm::eltwise_tanh;
  }
}

// A transposed left operand at least this tall, with at most this many output columns, is
// copied into row-major order before the product (see StagedKernel), if the copy takes at most
// 32 MiB (gpt's tied-embedding gradient: 4096 x 2048 floats).
constexpr std::int64_t kStageMinRows = 1024, kStageMaxCols = 256, kStageMaxElems = 1 << 23;

// A matmul with some operands in f32 buffers: a tall transposed left operand reordered into
// row-major order (oneDNN's reorder, a step of the wrapped kernel), or bf16 operands widened to
// f32 and a bf16 product narrowed from one (own conversions, before and after it).
// oneDNN 2.6's gemm ran A^T B (a weight's gradient dy^T x, rows reduced) at half the rate of A B
// on an AVX2 machine once A^T was tall and C narrow: gpt's tied-embedding gradient (4096 x 2048
// x 256) took 55-60 ms against 26 + 7.5 ms for the copy and the plain product
// (docs/benchmarks.md, "Transposed-operand matmuls"). The buffer is the thread's
// (thread_staging), shared by every such kernel, so it costs the largest staging once per
// thread, not once per node; it lives outside the arena.
class StagedKernel final : public Kernel {
 public:
  struct Staged {
    dnnl::memory mem;      // an operand or product of the wrapped kernel
    std::size_t offset;    // in floats, into the thread's buffer
    void* bf16 = nullptr;  // widened from here before (an operand), narrowed into after (C)
    std::int64_t elems = 0;
    bool product = false;
  };
  StagedKernel(std::unique_ptr<OnednnKernel> k, std::vector<Staged> staged, std::size_t floats)
      : k_(std::move(k)), staged_(std::move(staged)), floats_(floats) {}
  void run() override {
    float* buf = thread_staging(floats_);
    for (Staged& s : staged_) {
      s.mem.set_data_handle(buf + s.offset);
      if (s.bf16 && !s.product)
        widen_bf16(static_cast<const std::uint16_t*>(s.bf16), buf + s.offset, s.elems);
    }
    k_->run();
    for (const Staged& s : staged_)
      if (s.product) narrow_to_bf16(buf + s.offset, static_cast<std::uint16_t*>(s.bf16), s.elems);
  }
  std::string describe() const override { return k_->describe(); }

 private:
  std::unique_ptr<OnednnKernel> k_;
  std::vector<Staged> staged_;
  std::size_t floats_;
};

}  // namespace

bool cpu_has_bf16_matmul() {
  static const bool has = [] {
    try {
      const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
      const auto bf16 = dnnl::memory::data_type::bf16, f32 = dnnl::memory::data_type::f32;
      const dnnl::memory::dims dims{16, 16};
      const dnnl::memory::desc a(dims, bf16, dnnl::memory::format_tag::ab),
          c(dims, f32, dnnl::memory::format_tag::ab);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, a, c), eng);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

std::unique_ptr<Kernel> OpDef<OpId::matmul>::cpu(const KernelNode& n) {
  // f32, or bf16 operands (AMX / AVX-512 BF16 where the CPU has them) with an f32 or bf16 product.
  const DType in = n.in[0].dtype, out = n.out.dtype;
  if (!(in == DType::f32 || in == DType::bf16) || n.in[1].dtype != in || n.out.rank < 2)
    return nullptr;
  if (!(out == DType::f32 || (in == DType::bf16 && out == DType::bf16))) return nullptr;
  const bool ta = n.attr().i[0] != 0, tb = n.attr().i[1] != 0;
  TensorView a = n.in[0], b = n.in[1], c = n.out;
  if (ta) swap_last_two(a);
  if (tb) swap_last_two(b);
  const int r = c.rank;
  a = padded(a, r);
  b = padded(b, r);
  bool b_shared = true;
  for (int i = 0; i < r - 2; ++i) b_shared = b_shared && b.dims[i] == 1;
  if (r > 2 && b_shared && rows_collapse(a) && c.contiguous()) {
    a = collapse_rows(a);
    c = collapse_rows(c);
    TensorView b2 = b;
    b2.rank = 2;
    b2.dims[0] = b.dims[r - 2];
    b2.dims[1] = b.dims[r - 1];
    b2.strides[0] = b.strides[r - 2];
    b2.strides[1] = b.strides[r - 1];
    b = b2;
  }

  // Folded consumers, in order: bias, scale, activation.
  dnnl::primitive_attr attr;
  dnnl::post_ops post_ops;
  std::optional<TensorView> bias;
  std::string folded;
  for (const PostOp& po : n.post) {
    if (po.kind == PostOp::Kind::bias) {
      bias = padded(po.bias, c.rank);  // [N] as [1, ..., 1, N]
      if (!bias->contiguous()) return nullptr;
      folded += " +bias";
    } else if (po.kind == PostOp::Kind::scale) {
      attr.set_output_scales(0, {po.scale});
      folded += " *scale";
    } else {
      post_ops.append_eltwise(1.f, eltwise_alg(po.act), po.act == OpId::silu ? 1.f : 0.f, 0.f);
      folded += " +" + std::string(op_name(code(po.act)));
    }
  }
  attr.set_post_ops(post_ops);
  if (auto k = matvec_kernel(a, b, c, n.post, folded)) return k;

  const dnnl::engine& eng = n.ctx.eng;
  std::vector<OnednnKernel::Step> steps;
  std::vector<Array> scratch;
  auto try_pd = [&](const TensorView& av, const TensorView& bv,
                    const TensorView& cv) -> std::optional<dnnl::matmul::primitive_desc> {
    try {
      const auto desc = bias
                            ? dnnl::matmul::desc(memory_desc(av), memory_desc(bv),
                                                 memory_desc(*bias), memory_desc(cv))
                            : dnnl::matmul::desc(memory_desc(av), memory_desc(bv), memory_desc(cv));
      return dnnl::matmul::primitive_desc(desc, attr, eng);
    } catch (const dnnl::error&) {
      return std::nullopt;
    }
  };
  auto reorder = [&](const dnnl::memory& src, const dnnl::memory& dst) {
    steps.push_back({make_primitive<dnnl::reorder>(dnnl::reorder::primitive_desc(src, dst)),
                     {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}}});
  };
  // `v` as an f32 view with no data yet, dense or with v's own strides: a StagedKernel buffer
  // of `elems` floats binds it (and widens `bf16` into it, or narrows it into `bf16` after the
  // product).
  std::vector<StagedKernel::Staged> staged;
  std::size_t staging = 0;  // floats of the thread's staging buffer the kernel uses
  auto f32_buffer = [](TensorView v, bool dense) {
    v.dtype = DType::f32;
    if (dense) v.set_contiguous();
    v.data = nullptr;
    return v;
  };
  auto stage = [&](const TensorView& v, const dnnl::memory::desc& md, std::int64_t elems,
                   void* bf16 = nullptr, bool product = false) {
    dnnl::memory m = memory_of(md, v, eng);
    staged.push_back({m, staging, bf16, elems, product});
    staging += staged_floats(elems);
    return m;
  };
  std::optional<dnnl::matmul::primitive_desc> pd;
  TensorView a_used = a, b_used = b;
  dnnl::memory a_mem, b_mem, c_mem;  // where set, the staged operands
  std::string how;
  // A^T stored as a dense [K, M] (a weight's gradient): copied to row-major [M, K] first.
  if (ta && in == DType::f32 && a.rank == 2 && a.strides[0] == 1 && a.strides[1] == a.dims[0] &&
      a.dims[0] >= kStageMinRows && c.dims[c.rank - 1] <= kStageMaxCols &&
      a.numel() <= kStageMaxElems) {
    const TensorView dense = f32_buffer(a, true);
    if ((pd = try_pd(dense, b, c))) {
      a_mem = stage(dense, pd->src_desc(), dense.numel());
      reorder(memory_of(a, eng), a_mem);
      a_used = dense;
      how = ", A^T staged";
    }
  }
  if (!pd) pd = try_pd(a, b, c);
  // bf16 operands where oneDNN has no bf16 matmul (2.6 needs AVX-512; an AVX2 CPU has none):
  // both are widened to f32, keeping their strides, and multiplied in f32; a bf16 product is
  // narrowed from an f32 one. A product of two bf16 values is exact in f32, so this is a bf16
  // matmul with f32 accumulation, as on AVX-512 or AMX, at f32 speed. The reference kernel took
  // 150 times as long (cls_bf16's forward pass: 2.6 s against 17 ms in f32).
  if (!pd && in == DType::bf16 && (out == DType::f32 || c.contiguous())) {
    const TensorView wa = f32_buffer(a, false), wb = f32_buffer(b, false);
    const TensorView wc = out == DType::bf16 ? f32_buffer(c, true) : c;
    if ((pd = try_pd(wa, wb, wc))) {
      a_mem = stage(wa, pd->src_desc(), view_span(a), a.data);
      b_mem = stage(wb, pd->weights_desc(), view_span(b), b.data);
      if (out == DType::bf16) c_mem = stage(wc, pd->dst_desc(), c.numel(), c.data, true);
      how = ", bf16 widened to f32";
    }
  }
  if (!pd) {  // copy strided operands into contiguous scratch
    for (TensorView* v : {&a_used, &b_used}) {
      if (v->contiguous()) continue;
      TensorView dense = *v;
      dense.set_contiguous();
      scratch.emplace_back(dense.dtype,
                           std::vector<std::int64_t>(dense.dims, dense.dims + dense.rank));
      dense.data = scratch.back().raw();
      dnnl::memory dst = memory_of(dense, eng);
      reorder(memory_of(*v, eng), dst);
      *v = dense;
    }
    pd = try_pd(a_used, b_used, c);
    if (!pd) return nullptr;
    if (!scratch.empty()) how = ", +reorder";
  }
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, a_mem ? a_mem : memory_of(pd->src_desc(), a_used, eng)},
      {DNNL_ARG_WEIGHTS, b_mem ? b_mem : memory_of(pd->weights_desc(), b_used, eng)},
      {DNNL_ARG_DST, c_mem ? c_mem : memory_of(pd->dst_desc(), c, eng)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, memory_of(pd->bias_desc(), *bias, eng));
  steps.push_back({make_primitive<dnnl::matmul>(*pd), std::move(args)});
  auto k = std::make_unique<OnednnKernel>(eng, std::move(steps),
                                          "onednn matmul (" + impl_name(*pd) + how + ")" + folded);
  k->scratch = std::move(scratch);
  if (staged.empty()) return k;
  return std::make_unique<StagedKernel>(std::move(k), std::move(staged), staging);
}

}  // namespace stag
