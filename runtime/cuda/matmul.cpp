// matmul on the GPU with cuBLASLt: row-major C[M, N] = op(A)[M, K] op(B)[K, N] is computed as
// the column-major product C^T = op(B)^T op(A)^T, so no operand is copied. Batch dims become
// cuBLASLt's strided batch where the operands' batch offsets are linear (a broadcast operand
// has batch stride 0; a weight shared by every batch row folds the batch into M); other batch
// dims are looped on the host. The algorithm is chosen once, when the plan is made.
#include <vector>

#include <stag/runtime/cuda/backend.hpp>
#include <stag/runtime/cuda/kernels.hpp>

namespace stag::STAG_CUDA_NAMESPACE {
#if !defined(STAG_CUDA_INTERPRET)
namespace {

void check_blas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    throw Error(std::string("stag: cuda: cuBLASLt ") + what + " failed (status " +
                std::to_string(static_cast<int>(st)) + ")");
}

cudaDataType_t blas_type(DType t) {
  return t == DType::bf16 ? CUDA_R_16BF : (t == DType::f64 ? CUDA_R_64F : CUDA_R_32F);
}

}  // namespace
#endif

// What both matmul kernels (cuBLASLt, and the host GEMM of interpret mode) take: no folded
// epilogue, operands of one float dtype with dense matrices, a contiguous output.
static void check_operands(const KernelNode& n) {
  const TensorView &a = n.in[0], &b = n.in[1], &c = n.out;
  if (!n.post.empty()) refuse(n, "internal: folded operations reached the GPU");
  if (a.dtype != b.dtype ||
      (a.dtype != DType::f32 && a.dtype != DType::bf16 && a.dtype != DType::f64))
    refuse(n, "operands must be f32, f64 or bf16");
  if (!c.contiguous()) refuse(n, "internal: strided output");
  const auto last_two_dense = [](const TensorView& v) {
    return v.strides[v.rank - 1] == 1 && v.strides[v.rank - 2] == v.dims[v.rank - 1];
  };
  if (!last_two_dense(a) || !last_two_dense(b))
    refuse(n, "internal: an operand's matrices are not dense (the plan must copy it)");
}

Gemm plan_gemm(const TensorView& a, const TensorView& b, const TensorView& c, bool ta) {
  Gemm g;
  g.m = c.dims[c.rank - 2];
  g.n = c.dims[c.rank - 1];
  g.k = a.dims[a.rank - (ta ? 2 : 1)];
  const int br = c.rank - 2;
  std::int64_t sa[kMaxRank] = {}, sb[kMaxRank] = {}, dims[kMaxRank] = {};
  for (int d = 0; d < br; ++d) {
    dims[d] = c.dims[d];
    const int ia = a.rank - 2 - br + d, ib = b.rank - 2 - br + d;
    sa[d] = (ia < 0 || a.dims[ia] != c.dims[d]) ? 0 : a.strides[ia];
    sb[d] = (ib < 0 || b.dims[ib] != c.dims[d]) ? 0 : b.strides[ib];
  }
  // The longest suffix of batch dims over which both offsets are bi * stride.
  int split = br;
  std::int64_t inner = 1, la = 0, lb = 0;
  for (int d = br - 1; d >= 0; --d) {
    if (dims[d] == 1) {
      split = d;
      continue;
    }
    const std::int64_t ea = inner == 1 ? sa[d] : la * inner, eb = inner == 1 ? sb[d] : lb * inner;
    if (sa[d] != ea || sb[d] != eb) break;
    if (inner == 1) la = sa[d], lb = sb[d];
    inner *= dims[d];
    split = d;
  }
  g.batch = inner;
  g.stride_a = la;
  g.stride_b = lb;
  g.stride_c = g.m * g.n;
  std::int64_t outer = 1;
  for (int d = 0; d < split; ++d) outer *= dims[d];
  for (std::int64_t o = 0; o < outer; ++o) {
    std::int64_t rem = o, oa = 0, ob = 0;
    for (int d = split - 1; d >= 0; --d) {
      const std::int64_t i = rem % dims[d];
      rem /= dims[d];
      oa += i * sa[d];
      ob += i * sb[d];
    }
    g.outer_a.push_back(oa);
    g.outer_b.push_back(ob);
    g.outer_c.push_back(o * inner * g.m * g.n);
  }
  // A weight shared by every batch row ([.., M, K] x [K, N]): one GEMM with M * batch rows.
  if (!ta && g.batch > 1 && g.stride_b == 0 && g.stride_a == g.m * g.k) {
    g.m *= g.batch;
    g.batch = 1;
  }
  return g;
}

#if defined(STAG_CUDA_INTERPRET)
namespace {

// Interpret mode: the GEMMs the plan hands cuBLASLt on a GPU (plan_gemm's calls, batches and
// offsets, so that the batch planning is exercised too), computed on the host with a double
// accumulator. A stand-in for cuBLASLt's results, not a model of its rounding or of TF32.
class Matmul {
 public:
  Matmul(const KernelNode& n, PlanState&) {
    const TensorView &a = n.in[0], &b = n.in[1], &c = n.out;
    ta_ = n.attr().i[0] != 0;
    tb_ = n.attr().i[1] != 0;
    check_operands(n);
    g_ = plan_gemm(a, b, c, ta_);
    a_ = static_cast<const char*>(a.data);
    b_ = static_cast<const char*>(b.data);
    c_ = static_cast<char*>(c.data);
    t_ = a.dtype;
    e_ = static_cast<std::int64_t>(dtype_size(a.dtype));
    tc_ = c.dtype;  // f32 for bf16 operands under autocast, as cuBLASLt's C type
    ec_ = static_cast<std::int64_t>(dtype_size(c.dtype));
    what_ = "host gemm (interpret) " + std::string(dtype_name(a.dtype)) + " " +
            std::to_string(g_.m) + "x" + std::to_string(g_.n) + "x" + std::to_string(g_.k) +
            (g_.batch > 1 ? " batch " + std::to_string(g_.batch) : "") +
            (g_.outer_a.size() > 1 ? " x" + std::to_string(g_.outer_a.size()) + " launches" : "");
  }
  // In stream order, as a host function (a host node where the step is a captured graph).
  void run(const Launch& l) const {
    check(cudaLaunchHostFunc(
              static_cast<cudaStream_t>(l.stream),
              [](void* self) { static_cast<const Matmul*>(self)->compute(); },
              const_cast<Matmul*>(this)),
          "the host GEMM");
  }
  void compute() const {
    const std::int64_t m = g_.m, n = g_.n, k = g_.k;
    for (std::size_t o = 0; o < g_.outer_a.size(); ++o)
      for (std::int64_t bi = 0; bi < g_.batch; ++bi) {
        const char* A = a_ + (g_.outer_a[o] + bi * g_.stride_a) * e_;
        const char* B = b_ + (g_.outer_b[o] + bi * g_.stride_b) * e_;
        char* C = c_ + (g_.outer_c[o] + bi * g_.stride_c) * ec_;
        for (std::int64_t i = 0; i < m; ++i)
          for (std::int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (std::int64_t p = 0; p < k; ++p)
              acc += load(A, ta_ ? p * m + i : i * k + p) * load(B, tb_ ? j * k + p : p * n + j);
            store(C, i * n + j, acc);
          }
      }
  }
  const std::string& what() const { return what_; }

 private:
  double load(const char* p, std::int64_t i) const {
    if (t_ == DType::f64) return reinterpret_cast<const double*>(p)[i];
    if (t_ == DType::bf16) return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(p)[i]);
    return reinterpret_cast<const float*>(p)[i];
  }
  void store(char* p, std::int64_t i, double v) const {
    if (tc_ == DType::f64)
      reinterpret_cast<double*>(p)[i] = v;
    else if (tc_ == DType::bf16)
      reinterpret_cast<__nv_bfloat16*>(p)[i] = __double2bfloat16(v);
    else
      reinterpret_cast<float*>(p)[i] = static_cast<float>(v);
  }

  Gemm g_;
  bool ta_ = false, tb_ = false;
  const char* a_ = nullptr;
  const char* b_ = nullptr;
  char* c_ = nullptr;
  DType t_ = DType::f32, tc_ = DType::f32;  // the operands' and the product's
  std::int64_t e_ = 4, ec_ = 4;
  std::string what_;
};

}  // namespace
#else
namespace {

class Matmul {
 public:
  Matmul(const KernelNode& n, PlanState& s) : backend_(s.backend) {
    const TensorView &a = n.in[0], &b = n.in[1], &c = n.out;
    const bool ta = n.attr().i[0] != 0, tb = n.attr().i[1] != 0;
    check_operands(n);
    g_ = plan_gemm(a, b, c, ta);
    a_ = static_cast<const char*>(a.data);
    b_ = static_cast<const char*>(b.data);
    c_ = static_cast<char*>(c.data);
    ea_ = static_cast<std::int64_t>(dtype_size(a.dtype));
    ec_ = static_cast<std::int64_t>(dtype_size(c.dtype));
    const bool f64 = a.dtype == DType::f64;
    const cublasComputeType_t compute = f64 ? CUBLAS_COMPUTE_64F
                                        : (s.tf32 && a.dtype == DType::f32)
                                            ? CUBLAS_COMPUTE_32F_FAST_TF32
                                            : CUBLAS_COMPUTE_32F;
    const cudaDataType_t scale = f64 ? CUDA_R_64F : CUDA_R_32F;
    check_blas(cublasLtMatmulDescCreate(&desc_, compute, scale), "MatmulDescCreate");
    // Column-major view: "A" is B as stored, "B" is A as stored.
    const cublasOperation_t op_a = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    check_blas(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
        "set TRANSA");
    check_blas(
        cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
        "set TRANSB");
    const auto M = static_cast<std::uint64_t>(g_.m), N = static_cast<std::uint64_t>(g_.n),
               K = static_cast<std::uint64_t>(g_.k);
    layout(&la_, blas_type(b.dtype), tb ? K : N, tb ? N : K, tb ? K : N, g_.stride_b);
    layout(&lb_, blas_type(a.dtype), ta ? M : K, ta ? K : M, ta ? M : K, g_.stride_a);
    layout(&lc_, blas_type(c.dtype), N, M, N, g_.stride_c);
    cublasLtMatmulPreference_t pref = nullptr;
    check_blas(cublasLtMatmulPreferenceCreate(&pref), "PreferenceCreate");
    const std::size_t ws = Backend::kBlasWorkspace;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                         sizeof ws);
    int found = 0;
    const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(backend_->blas(), desc_, la_, lb_, lc_,
                                                             lc_, pref, 1, &algo_, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || found == 0)
      refuse(n, "cuBLASLt has no algorithm for " + std::to_string(g_.m) + "x" +
                    std::to_string(g_.n) + "x" + std::to_string(g_.k));
    what_ = std::string("cublasLt matmul ") + std::string(dtype_name(a.dtype)) +
            (compute == CUBLAS_COMPUTE_32F_FAST_TF32 ? " (tf32)" : "") + " " +
            std::to_string(g_.m) + "x" + std::to_string(g_.n) + "x" + std::to_string(g_.k) +
            (g_.batch > 1 ? " batch " + std::to_string(g_.batch) : "") +
            (g_.outer_a.size() > 1 ? " x" + std::to_string(g_.outer_a.size()) + " launches" : "");
    f64_ = f64;
  }
  ~Matmul() {
    if (la_) cublasLtMatrixLayoutDestroy(la_);
    if (lb_) cublasLtMatrixLayoutDestroy(lb_);
    if (lc_) cublasLtMatrixLayoutDestroy(lc_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;

  void run(const Launch& l) const {
    const float one = 1.f, zero = 0.f;
    const double one_d = 1.0, zero_d = 0.0;
    const void* alpha = f64_ ? static_cast<const void*>(&one_d) : &one;
    const void* beta = f64_ ? static_cast<const void*>(&zero_d) : &zero;
    for (std::size_t o = 0; o < g_.outer_a.size(); ++o) {
      const void* A = b_ + g_.outer_b[o] * ea_;
      const void* B = a_ + g_.outer_a[o] * ea_;
      void* C = c_ + g_.outer_c[o] * ec_;
      check_blas(cublasLtMatmul(backend_->blas(), desc_, alpha, A, la_, B, lb_, beta, C, lc_, C,
                                lc_, &algo_.algo, backend_->blas_workspace(),
                                Backend::kBlasWorkspace, static_cast<cudaStream_t>(l.stream)),
                 "Matmul");
    }
  }
  const std::string& what() const { return what_; }

 private:
  void layout(cublasLtMatrixLayout_t* out, cudaDataType_t t, std::uint64_t rows, std::uint64_t cols,
              std::int64_t ld, std::int64_t batch_stride) {
    check_blas(cublasLtMatrixLayoutCreate(out, t, rows, cols, ld), "MatrixLayoutCreate");
    if (g_.batch > 1) {
      const auto count = static_cast<int>(g_.batch);
      cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                       sizeof count);
      cublasLtMatrixLayoutSetAttribute(*out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                       &batch_stride, sizeof batch_stride);
    }
  }

  Backend* backend_;
  Gemm g_;
  const char* a_ = nullptr;
  const char* b_ = nullptr;
  char* c_ = nullptr;
  std::int64_t ea_ = 4, ec_ = 4;
  bool f64_ = false;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, lc_ = nullptr;
  cublasLtMatmulHeuristicResult_t algo_{};
  std::string what_;
};

}  // namespace
#endif

std::unique_ptr<Kernel> make_matmul(const KernelNode& n, PlanState& s) {
  auto mm = std::make_shared<Matmul>(n, s);
  auto k = std::make_unique<NodeKernel>(n, s, mm->what());
  k->set([mm](const Launch& l) { mm->run(l); });
  return k;
}

}  // namespace stag::STAG_CUDA_NAMESPACE
