// Reference kernel of mse_loss: the squared differences summed in double, divided by numel.
#include <stag/ops/kernel.hpp>
#include <stag/ops/mse_loss/mse_loss.hpp>

namespace stag {

void OpDef<OpId::mse_loss>::reference(const KernelArgs& a) {
  kernel::with_float(a.out.dtype, [&](auto z) {
    using T = decltype(z);
    const T* p = a.in[0].as<const T>();
    const T* t = a.in[1].as<const T>();
    const std::int64_t n = a.in[0].numel();
    double sum = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double d = static_cast<double>(p[i]) - static_cast<double>(t[i]);
      sum += d * d;
    }
    // NOTE: an empty input gives 0 rather than 0 / 0.
    a.out.as<T>()[0] = static_cast<T>(n == 0 ? 0.0 : sum / static_cast<double>(n));
  });
}

}  // namespace stag
