// CPU kernels of the unary ops and unary_backward: oneDNN eltwise forward and backward
// primitives (f32). The op maps to an eltwise algorithm with its alpha/beta parameters.
#include <optional>

#include <stag/ops/cpu_kernel.hpp>
#include <stag/ops/unary/unary.hpp>

namespace stag {
namespace {

struct Eltwise {
  dnnl::algorithm alg;
  float alpha = 0, beta = 0;
};

std::optional<Eltwise> eltwise_of(OpId op, double p) {
  using a = dnnl::algorithm;
  switch (op) {
    case OpId::neg:
      return Eltwise{a::eltwise_linear, -1.f, 0.f};
    case OpId::exp:
      return Eltwise{a::eltwise_exp};
    case OpId::log:
      return Eltwise{a::eltwise_log};
    case OpId::sqrt:
      return Eltwise{a::eltwise_sqrt};
    case OpId::rsqrt:
      return Eltwise{a::eltwise_pow, 1.f, -0.5f};
    case OpId::pow_scalar:
      return Eltwise{a::eltwise_pow, 1.f, static_cast<float>(p)};
    case OpId::abs:
      return Eltwise{a::eltwise_abs};
    case OpId::relu:
      return Eltwise{a::eltwise_relu, 0.f};
    case OpId::gelu:
      return Eltwise{a::eltwise_gelu_erf};
    case OpId::gelu_tanh:
      return Eltwise{a::eltwise_gelu_tanh};
    case OpId::silu:
      return Eltwise{a::eltwise_swish, 1.f};
    case OpId::sigmoid:
      return Eltwise{a::eltwise_logistic};
    case OpId::tanh:
      return Eltwise{a::eltwise_tanh};
    default:
      return std::nullopt;
  }
}

std::unique_ptr<CpuKernel> forward(const CpuNode& n, OpId op) {
  const auto e = eltwise_of(op, n.attr().f[0]);
  if (!e || n.out.dtype != DType::f32 || !n.in[0].contiguous()) return nullptr;
  const dnnl::engine& eng = n.ctx.eng;
  const auto md = memory_desc(n.out);
  dnnl::eltwise_forward::primitive_desc pd(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, e->alg, md, e->alpha, e->beta),
      eng);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::eltwise_forward>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, memory_of(md, n.in[0], eng)},
                                            {DNNL_ARG_DST, memory_of(md, n.out, eng)}},
      "onednn eltwise (" + impl_name(pd) + ")");
}

}  // namespace

#define STAG_UNARY_CPU(id)                                            \
  std::unique_ptr<CpuKernel> OpDef<OpId::id>::cpu(const CpuNode& n) { \
    return forward(n, OpId::id);                                      \
  }
STAG_UNARY_CPU(neg)
STAG_UNARY_CPU(exp)
STAG_UNARY_CPU(log)
STAG_UNARY_CPU(sqrt)
STAG_UNARY_CPU(rsqrt)
STAG_UNARY_CPU(pow_scalar)
STAG_UNARY_CPU(abs)
STAG_UNARY_CPU(relu)
STAG_UNARY_CPU(gelu)
STAG_UNARY_CPU(gelu_tanh)
STAG_UNARY_CPU(silu)
STAG_UNARY_CPU(sigmoid)
STAG_UNARY_CPU(tanh)
STAG_UNARY_CPU(sin)
STAG_UNARY_CPU(cos)
#undef STAG_UNARY_CPU

// dx from (x, y, g): eltwise backward from the source x; the forward descriptor is the hint.
std::unique_ptr<CpuKernel> OpDef<OpId::unary_backward>::cpu(const CpuNode& n) {
  const auto op = static_cast<OpId>(n.attr().i[0]);
  const auto e = eltwise_of(op, n.attr().f[0]);
  if (!e || n.out.dtype != DType::f32) return nullptr;
  for (const TensorView& v : n.in)
    if (!v.contiguous()) return nullptr;
  const dnnl::engine& eng = n.ctx.eng;
  const auto md = memory_desc(n.out);
  dnnl::eltwise_forward::primitive_desc hint(
      dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, e->alg, md, e->alpha, e->beta),
      eng);
  dnnl::eltwise_backward::primitive_desc pd(
      dnnl::eltwise_backward::desc(e->alg, md, md, e->alpha, e->beta), eng, hint);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::eltwise_backward>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, memory_of(md, n.in[0], eng)},
                                            {DNNL_ARG_DIFF_DST, memory_of(md, n.in[2], eng)},
                                            {DNNL_ARG_DIFF_SRC, memory_of(md, n.out, eng)}},
      "onednn eltwise backward (" + impl_name(pd) + ")");
}

}  // namespace stag
