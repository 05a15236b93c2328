// The CPU kernel of a plan's compute node (make_kernel.hpp): own or reference kernels, folded
// operations, and the small-node rule.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

#include <omp.h>

#include <stag/ops/unary/math.hpp>
#include <stag/runtime/cpu/kernel_tables.hpp>
#include <stag/runtime/cpu/make_kernel.hpp>

namespace stag {

namespace {

// Small nodes run on one thread. Every node is an OpenMP parallel region, and waking a second
// thread costs more than a node of a few thousand multiply-adds: a decode step of a small model
// at batch 1 (tens of 1 x 128 x 128 matmuls) ran 2-5x faster on one thread than on two
// (docs/generation.md). The work is a node's multiply-adds (matmul, attention) or the elements
// it reads and writes (everything else). Sleeping threads (OMP_WAIT_POLICY=passive) take tens
// of microseconds to wake on these VMs, spinning ones about one, so the limits are 16x higher
// with passive waiting. STAG_SMALL_NODE_WORK=<scale> multiplies them (0: every node uses every
// thread), a measurement knob.
constexpr double kSmallMatmulWork = 1 << 18;    // multiply-adds
constexpr double kSmallElementWork = 1 << 15;   // elements in and out
constexpr double kLargeOperandBytes = 1 << 21;  // a matmul operand this large is never small

double small_node_limit_scale() {
  static const double scale = [] {
    if (const char* e = std::getenv("STAG_SMALL_NODE_WORK")) return std::atof(e);
    const char* w = std::getenv("OMP_WAIT_POLICY");
    std::string policy = w != nullptr ? w : "";
    for (char& c : policy) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return policy == "passive" ? 16.0 : 1.0;
  }();
  return scale;
}

bool is_small_node(OpId op, const KernelNode& cn) {
  const auto numel = [](const TensorView& v) { return static_cast<double>(v.numel()); };
  const double scale = small_node_limit_scale();
  if (scale == 0.0) return false;
  // A product that reads a large operand once (a decode step's weight of 2 MiB and up) is bound
  // by memory: both cores' bandwidth is worth a thread's wake-up (GPT-2's bf16 decode step).
  if (op == OpId::matmul && cn.in.size() >= 2 &&
      numel(cn.in[1]) * static_cast<double>(dtype_size(cn.in[1].dtype)) >= kLargeOperandBytes)
    return false;
  if ((op == OpId::matmul || op == OpId::attention) && cn.in.size() >= 2 && cn.in[0].rank >= 1 &&
      cn.in[1].rank >= 2) {
    // The reduced dimension: the second-to-last of a transposed left operand (a weight's
    // gradient x^T dy, whose K is every row of the batch, not the 128 of d_model).
    const bool trans_a = op == OpId::matmul && cn.attr().i[0] != 0 && cn.in[0].rank >= 2;
    const double k = static_cast<double>(cn.in[0].dims[cn.in[0].rank - (trans_a ? 2 : 1)]);
    const double work =
        op == OpId::matmul
            ? numel(cn.out) * k
            : 2 * numel(cn.in[0]) * static_cast<double>(cn.in[1].dims[cn.in[1].rank - 2]);
    return work < kSmallMatmulWork * scale;
  }
  double elements = numel(cn.out);
  for (const TensorView& v : cn.in) elements += numel(v);
  return elements < kSmallElementWork * scale;
}

// A kernel run, and made, with OpenMP's team size 1 on the calling thread.
class OneThread {
 public:
  OneThread() : saved_(omp_get_max_threads()) {
    if (saved_ != 1) omp_set_num_threads(1);
  }
  ~OneThread() {
    if (saved_ != 1) omp_set_num_threads(saved_);
  }
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
  int saved_;
};

class OneThreadKernel final : public Kernel {
 public:
  explicit OneThreadKernel(std::unique_ptr<Kernel> k) : k_(std::move(k)) {}
  void run() override {
    const OneThread one;
    k_->run();
  }
  std::string describe() const override { return k_->describe() + " [1 thread: small]"; }

 private:
  std::unique_ptr<Kernel> k_;
};

// Runs an op's reference kernel inside a plan. Strided inputs (folded permutes) are copied
// into contiguous scratch first, since reference kernels read row-major data.
class ReferenceKernel final : public Kernel {
 public:
  ReferenceKernel(const KernelNode& n, KernelFn fn)
      : g_(n.g), node_(n.node), out_(n.out), state_(n.state), fn_(fn) {
    ins_ = n.in;
    for (std::size_t k = 0; k < ins_.size(); ++k) {
      if (ins_[k].contiguous()) continue;
      TensorView dense = ins_[k];
      dense.set_contiguous();
      scratch_.emplace_back(dense.dtype,
                            std::vector<std::int64_t>(dense.dims, dense.dims + dense.rank));
      dense.data = scratch_.back().raw();
      copies_.push_back({ins_[k], dense});
      ins_[k] = dense;
    }
  }
  void run() override {
    for (const auto& [src, dst] : copies_) {
      const std::size_t es = dtype_size(src.dtype);
      const std::int64_t n = src.numel();
      for (std::int64_t i = 0; i < n; ++i)
        std::memcpy(static_cast<char*>(dst.data) + i * static_cast<std::int64_t>(es),
                    static_cast<const char*>(src.data) +
                        kernel::offset_of(src, i) * static_cast<std::int64_t>(es),
                    es);
    }
    const KernelArgs a{g_, node_, ins_, out_, state_};
    fn_(a);
  }
  std::string describe() const override {
    return copies_.empty() ? "reference" : "reference (+strided copy)";
  }

 private:
  const GraphView& g_;
  int node_;
  std::vector<TensorView> ins_;
  TensorView out_;
  const RunState& state_;
  KernelFn fn_;
  std::vector<Array> scratch_;
  std::vector<std::pair<TensorView, TensorView>> copies_;
};

// The operations the planner folded into a matmul (bias, scale, activation, in that order),
// applied after a kernel that does not do them itself: the matmul's reference kernel where
// oneDNN has no primitive for it (bf16 operands on a CPU without AVX-512, for instance).
class PostOpsKernel final : public Kernel {
 public:
  PostOpsKernel(std::unique_ptr<Kernel> k, const KernelNode& n) : k_(std::move(k)), out_(n.out) {
    post_ = n.post;
    for (const PostOp& po : post_)
      folded_ += " +" + std::string(op_name(code(po.kind == PostOp::Kind::eltwise ? po.act
                                                 : po.kind == PostOp::Kind::bias  ? OpId::add
                                                                                  : OpId::mul)));
  }
  void run() override {
    k_->run();
    float* y = out_.as<float>();  // folding needs an f32 matmul output (try_fold)
    const std::int64_t total = out_.numel(), cols = out_.dims[out_.rank - 1];
    for (std::int64_t i = 0; i < total; ++i) {
      float v = y[i];
      for (const PostOp& po : post_) {
        if (po.kind == PostOp::Kind::bias)
          v += static_cast<float>(kernel::load(po.bias, (i % cols) * po.bias.strides[0]));
        else if (po.kind == PostOp::Kind::scale)
          v *= po.scale;
        else
          v = unary_math::forward<float>(po.act, v, 0.0);
      }
      y[i] = v;
    }
  }
  std::string describe() const override { return k_->describe() + folded_; }

 private:
  std::unique_ptr<Kernel> k_;
  TensorView out_;
  std::vector<PostOp> post_;
  std::string folded_;
};

}  // namespace

std::uint8_t cpu_strided(OpCode op) {
  return kCpuStrided[op.value];
}

std::unique_ptr<Kernel> make_cpu_kernel(const KernelNode& cn) {
  const GraphView& g = cn.g;
  const int n = cn.node;
  const Node& nd = g.node(n);
  std::unique_ptr<Kernel> kernel;
  const bool small = cn.ctx.threads > 1 && is_small_node(op_id(nd.op), cn);
  if (const CpuFactory f = kCpuFactories[nd.op.value]) {
    std::optional<OneThread> one;
    if (small) one.emplace();  // oneDNN sizes some primitives' work split when made
    kernel = f(cn);
  }
  if (!kernel) {
    const KernelFn ref = kReferenceKernels[nd.op.value];
    if (ref == nullptr)
      throw Error("stag: op '" + std::string(op_name(nd.op)) + "' (node " + g.name(n) +
                  ") has no CPU kernel");
    kernel = std::make_unique<ReferenceKernel>(cn, ref);
    if (!cn.post.empty()) {
      if (cn.out.dtype != DType::f32 || !cn.out.contiguous())
        throw Error("stag: internal error: " + g.name(n) +
                    ": no kernel for the operations folded into it");
      kernel = std::make_unique<PostOpsKernel>(std::move(kernel), cn);
    }
  }
  if (small) kernel = std::make_unique<OneThreadKernel>(std::move(kernel));
  return kernel;
}

}  // namespace stag
