// Parameter initialisation (Xavier uniform, normal, uniform, zeros, ones).
#include <cmath>

#include <stag/ops/parameter/parameter.hpp>
#include <stag/ops/random.hpp>
#include <stag/runtime/params.hpp>

namespace stag {

void init_params(const GraphView& g, const Bindings& b, NamedArrays& store, std::uint64_t seed,
                 DType float_type) {
  for (int n = 0; n < g.size(); ++n) {
    if (!(g.node(n).flags & (kFlagParam | kFlagState))) continue;  // parameters and optimizer state
    const std::string name = g.name(n);
    if (store.count(name)) continue;
    const std::vector<std::int64_t> dims = concrete_dims(g.shape(n), b);
    const DType t = g.node(n).dtype == DType::f32 ? float_type : g.node(n).dtype;
    Array a(t, dims);
    const Attrs& at = g.attr(n);
    const auto init = static_cast<Init>(at.i[0]);
    const std::uint64_t salt = fnv1a(name);
    const std::int64_t count = a.numel();
    double lo = 0, hi = 0;
    if (init == Init::xavier_uniform) {
      const double fan_out = dims.empty() ? 1.0 : static_cast<double>(dims.back());
      const double fan_in = dims.size() < 2 ? fan_out : static_cast<double>(dims[dims.size() - 2]);
      const double r = std::sqrt(6.0 / (fan_in + fan_out));
      lo = -r;
      hi = r;
    } else if (init == Init::uniform) {
      lo = at.f[0];
      hi = at.f[1];
    }
    for (std::int64_t i = 0; i < count; ++i) {
      double v = 0;
      switch (init) {
        case Init::zeros:
          v = 0;
          break;
        case Init::ones:
          v = 1;
          break;
        case Init::normal: {
          // Box-Muller from two counter-based uniforms.
          const double u1 = 1.0 - random::uniform(seed, 0, salt, 2 * static_cast<std::uint64_t>(i));
          const double u2 = random::uniform(seed, 0, salt, 2 * static_cast<std::uint64_t>(i) + 1);
          v = at.f[0] + at.f[1] * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
          break;
        }
        case Init::uniform:
        case Init::xavier_uniform:
          v = lo + (hi - lo) * random::uniform(seed, 0, salt, static_cast<std::uint64_t>(i));
          break;
      }
      a.set(i, v);
    }
    store.emplace(name, std::move(a));
  }
}

NamedArrays make_params(const GraphView& g,
                        const std::map<std::string, std::int64_t, std::less<>>& dims,
                        std::uint64_t seed, DType float_type) {
  Bindings b;
  for (const auto& [name, v] : dims)
    for (const SymEntry& s : g.syms)
      if (s.name == name) b.set(s.id, v);
  for (int n = 0; n < g.size(); ++n) {
    if (!(g.node(n).flags & (kFlagParam | kFlagState))) continue;
    const ShapeV& s = g.shape(n);
    for (int i = 0; i < s.rank; ++i)
      for (int k = 0; k < s.dims[i].nsym; ++k)
        if (!b.has(s.dims[i].sym[k]))
          throw Error("stag: parameter '" + g.name(n) + "' has symbolic dim '" +
                      std::string(g.sym_name(s.dims[i].sym[k])) + "'; give its value in dims");
  }
  NamedArrays store;
  init_params(g, b, store, seed, float_type);
  return store;
}

}  // namespace stag
