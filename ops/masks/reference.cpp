// Reference kernels of causal_mask and padding_mask: index arithmetic on the bound sizes.
#include <string>

#include <stag/ops/kernel.hpp>
#include <stag/ops/masks/masks.hpp>

namespace stag {

void OpDef<OpId::causal_mask>::reference(const KernelArgs& a) {
  const std::int64_t sq = a.out.dims[0], sk = a.out.dims[1];
  bool* out = a.out.as<bool>();
  for (std::int64_t q = 0; q < sq; ++q)
    for (std::int64_t k = 0; k < sk; ++k) out[q * sk + k] = k <= q + (sk - sq);
}

void OpDef<OpId::padding_mask>::reference(const KernelArgs& a) {
  const TensorView& lengths = a.in[0];
  const std::int64_t batch = a.out.dims[0], s = a.out.dims[1];
  bool* out = a.out.as<bool>();
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t len = lengths.dtype == DType::i64 ? lengths.as<const std::int64_t>()[b]
                                                         : lengths.as<const std::int32_t>()[b];
    if (len < 0 || len > s)
      throw Error("stag: " + a.name() + ": lengths[" + std::to_string(b) +
                  "] = " + std::to_string(len) + " is outside [0, " + std::to_string(s) +
                  "] (S = " + std::to_string(s) + ", the mask's sequence length)");
    for (std::int64_t k = 0; k < s; ++k) out[b * s + k] = k < len;
  }
}

}  // namespace stag
