// CPU kernel of cast between f32, bf16, i32 and bool(u8). f32 <-> bf16 on contiguous data is an
// own vectorised loop: oneDNN 2.6 converts bf16 with its generic reorder (simple:any) on a CPU
// without AVX-512, at about 100 ns an element (cls_bf16's largest cast took 113 ms). Other casts
// are a oneDNN reorder with conversion.
// NOTE: oneDNN's float -> int conversion rounds to nearest and saturates, while the reference
// truncates; casts to integers therefore stay on the reference kernel.
#include <algorithm>
#include <cstring>
#include <vector>

#include <stag/ops/cast/cast.hpp>
#include <stag/ops/cpu_kernel.hpp>

namespace stag {
namespace {

constexpr std::int64_t kBlock = 1 << 15;  // elements per parallel block

void widen_block(const std::uint16_t* __restrict src, float* __restrict dst, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    const std::uint32_t w = static_cast<std::uint32_t>(src[i]) << 16;
    float f;
    std::memcpy(&f, &w, sizeof f);
    dst[i] = f;
  }
}

void narrow_block(const float* __restrict src, std::uint16_t* __restrict dst, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) dst[i] = kernel::float_to_bf16(src[i]);
}

template <class From, class To, class Block>
void blocked(const From* src, To* dst, std::int64_t n, Block block) {
  if (n <= kBlock) return block(src, dst, n);
#pragma omp parallel for schedule(static)
  for (std::int64_t b = 0; b < n; b += kBlock) block(src + b, dst + b, std::min(kBlock, n - b));
}

class Bf16CastKernel final : public Kernel {
 public:
  Bf16CastKernel(const TensorView& in, const TensorView& out) : in_(in), out_(out) {}
  void run() override {
    if (in_.dtype == DType::bf16)
      widen_bf16(in_.as<const std::uint16_t>(), out_.as<float>(), out_.numel());
    else
      narrow_to_bf16(in_.as<const float>(), out_.as<std::uint16_t>(), out_.numel());
  }
  std::string describe() const override {
    return in_.dtype == DType::bf16 ? "own cast (bf16 to f32)" : "own cast (f32 to bf16)";
  }

 private:
  TensorView in_, out_;
};

}  // namespace

void widen_bf16(const std::uint16_t* src, float* dst, std::int64_t n) {
  blocked(src, dst, n, widen_block);
}

void narrow_to_bf16(const float* src, std::uint16_t* dst, std::int64_t n) {
  blocked(src, dst, n, narrow_block);
}

float* thread_staging(std::size_t floats) {
  static thread_local std::vector<float> buf;
  if (buf.size() < floats) buf.resize(floats);
  return buf.data();
}

std::unique_ptr<Kernel> OpDef<OpId::cast>::cpu(const KernelNode& n) {
  const DType from = n.in[0].dtype, to = n.out.dtype;
  const bool floats =
      (from == DType::f32 || from == DType::bf16) && (to == DType::f32 || to == DType::bf16);
  const bool widen = (from == DType::boolean || from == DType::i32) && to == DType::f32;
  if (!(floats || widen) || n.out.rank == 0) return nullptr;
  if (from != to && floats && n.in[0].contiguous() && n.out.contiguous())
    return std::make_unique<Bf16CastKernel>(n.in[0], n.out);
  const dnnl::engine& eng = n.ctx.eng;
  dnnl::memory s = memory_of(n.in[0], eng), d = memory_of(n.out, eng);
  dnnl::reorder::primitive_desc pd(s, d);
  return std::make_unique<OnednnKernel>(
      eng, make_primitive<dnnl::reorder>(pd),
      std::unordered_map<int, dnnl::memory>{{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, d}},
      "onednn reorder (" + impl_name(pd) + ")");
}

}  // namespace stag
