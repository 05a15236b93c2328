// Reference kernel of dropout: element i is kept when uniform(seed, step, salt, i) >= p.
#include <cstring>
#include <string>

#include <stag/ops/dropout/dropout.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/ops/random.hpp>

namespace stag {

void OpDef<OpId::dropout>::reference(const KernelArgs& a) {
  const double p = a.attr().f[0];
  const auto salt = static_cast<std::uint64_t>(a.attr().i[0]);
  const std::int64_t n = a.out.numel();
  if (!(p >= 0.0 && p < 1.0))
    throw Error("stag: " + a.name() + ": dropout p = " + std::to_string(p) + " is not in [0, 1)");
  if (!a.state.training || p == 0.0) {
    if (a.out.data != a.in[0].data)  // in place (planned by the runtime): nothing to copy
      std::memcpy(a.out.data, a.in[0].data, static_cast<std::size_t>(n) * dtype_size(a.out.dtype));
    return;
  }
  const double scale = 1.0 / (1.0 - p);
  const std::uint64_t offset = global_index_offset(a.state, n);
  kernel::with_float(a.out.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.in[0].as<const T>();
    T* y = a.out.as<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      const double u =
          random::uniform(a.state.seed, a.state.step, salt, offset + static_cast<std::uint64_t>(i));
      y[i] = u >= p ? static_cast<T>(static_cast<double>(x[i]) * scale) : T(0);
    }
  });
}

}  // namespace stag
