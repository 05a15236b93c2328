// Shared helpers for the tests: random arrays, comparisons that print the largest difference,
// and a helper to run a gradient check and report it.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <stag/ops/random.hpp>
#include <stag/runtime/gradcheck.hpp>
#include <stag/stag.hpp>

namespace th {

// The device of the [gpu] cases: the GPU (ctest label cuda), or the same CUDA backend in
// interpret mode, its kernels run on the CPU (STAG_TEST_DEVICE=cuda_interpret, label
// cuda_interpret, in every test run).
inline stag::Device gpu_device() {
  const char* d = std::getenv("STAG_TEST_DEVICE");
  return d != nullptr && std::string(d) == "cuda_interpret" ? stag::Device::cuda_interpret
                                                            : stag::Device::cuda;
}

using stag::Array;
using stag::DType;

// Values in [lo, hi) from the counter-based RNG (reproducible, no global state).
inline Array random_array(DType t, std::vector<std::int64_t> dims, std::uint64_t seed,
                          double lo = -1.0, double hi = 1.0) {
  Array a(t, std::move(dims));
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    const double u = stag::random::uniform(seed, 7, 11, static_cast<std::uint64_t>(i));
    double v = lo + (hi - lo) * u;
    if (stag::is_integer(t)) v = std::floor(v);
    if (t == DType::boolean) v = u < 0.5 ? 0.0 : 1.0;
    a.set(i, v);
  }
  return a;
}

inline std::string compare_text(const std::vector<double>& got, const std::vector<double>& want,
                                double& worst, std::size_t& at) {
  worst = 0;
  at = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d =
        std::isnan(got[i]) != std::isnan(want[i]) ? INFINITY : std::abs(got[i] - want[i]);
    if (d > worst || std::isnan(d)) {
      worst = d;
      at = i;
    }
  }
  std::ostringstream s;
  s.precision(9);
  s << "largest difference " << worst << " at " << at;
  if (at < got.size() && at < want.size()) s << " (got " << got[at] << ", want " << want[at] << ")";
  return s.str();
}

// Requires `got` to equal `want` elementwise within `tol` (absolute), printing the worst.
inline void require_close(const Array& got, const std::vector<double>& want, double tol = 1e-6) {
  const std::vector<double> g = got.to_doubles();
  REQUIRE(g.size() == want.size());
  double worst = 0;
  std::size_t at = 0;
  const std::string text = compare_text(g, want, worst, at);
  INFO(text);
  REQUIRE(worst <= tol);
}

inline void require_close(const Array& got, const Array& want, double tol = 1e-6) {
  REQUIRE(got.dims() == want.dims());
  require_close(got, want.to_doubles(), tol);
}

// max |got - want| over max |want|: an error relative to the tensor's scale.
inline double relative_error(const Array& got, const Array& want) {
  REQUIRE(got.dims() == want.dims());
  const std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

inline void require_gradcheck(const stag::GraphView& train, const stag::NamedArrays& inputs,
                              const stag::NamedArrays& params, stag::GradcheckOptions opts = {}) {
  const stag::GradcheckReport r = stag::gradcheck(train, inputs, params, opts);
  INFO(r.text());
  REQUIRE(r.checked > 0);
  REQUIRE(r.ok);
}

}  // namespace th
