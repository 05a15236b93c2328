// Parameter initialisation (Xavier uniform, normal, uniform, zeros, ones) and its overrides.
#include <cmath>

#include <stag/ops/random.hpp>
#include <stag/runtime/params.hpp>

namespace stag {
namespace {

// Fills `a` from `spec`; element i draws from the counter-based stream (seed, 0, salt, i).
void fill(Array& a, const InitSpec& spec, std::uint64_t seed, std::uint64_t salt) {
  const std::vector<std::int64_t>& dims = a.dims();
  const std::int64_t count = a.numel();
  double lo = 0, hi = 0;
  if (spec.kind == Init::xavier_uniform) {
    const double fan_out = dims.empty() ? 1.0 : static_cast<double>(dims.back());
    const double fan_in = dims.size() < 2 ? fan_out : static_cast<double>(dims[dims.size() - 2]);
    const double r = std::sqrt(6.0 / (fan_in + fan_out));
    lo = -r;
    hi = r;
  } else if (spec.kind == Init::uniform) {
    lo = spec.a;
    hi = spec.b;
  }
  for (std::int64_t i = 0; i < count; ++i) {
    double v = 0;
    switch (spec.kind) {
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
        v = spec.a + spec.b * std::sqrt(-2.0 * std::log(u1)) * std::cos(2 * M_PI * u2);
        break;
      }
      case Init::uniform:
      case Init::xavier_uniform:
        v = lo + (hi - lo) * random::uniform(seed, 0, salt, static_cast<std::uint64_t>(i));
        break;
    }
    a.set(i, v);
  }
}

bool is_param(const GraphView& g, int n) {
  return (g.node(n).flags & kFlagParam) != 0;
}

}  // namespace

std::string InitSpec::describe() const {
  auto num = [](double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return std::string(buf);
  };
  switch (kind) {
    case Init::zeros:
      return "zeros";
    case Init::ones:
      return "ones";
    case Init::normal:
      return "normal(" + num(a) + ", " + num(b) + ")";
    case Init::uniform:
      return "uniform(" + num(a) + ", " + num(b) + ")";
    case Init::xavier_uniform:
      return "xavier_uniform";
  }
  return "?";
}

bool glob_match(std::string_view pattern, std::string_view name) {
  // Greedy matching with one backtrack point: the last '*' seen.
  std::size_t p = 0, s = 0, star = std::string_view::npos, star_s = 0;
  while (s < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[s])) {
      ++p;
      ++s;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_s = s;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      s = ++star_s;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

InitSpec resolve_init(const GraphView& g, int n, const InitOverrides& overrides) {
  const Attrs& at = g.attr(n);
  InitSpec spec{static_cast<Init>(at.i[0]), at.f[0], at.f[1]};
  if (!is_param(g, n)) return spec;  // optimizer state keeps its zeros
  const std::string name = g.name(n);
  for (const InitOverride& o : overrides)
    if (glob_match(o.pattern, name)) spec = o.init;
  return spec;
}

void check_init_overrides(const GraphView& g, const InitOverrides& overrides) {
  for (const InitOverride& o : overrides) {
    const std::string what = "stag: init override '" + o.pattern + "' (" + o.init.describe() + ")";
    if (o.init.kind == Init::normal && !(o.init.b >= 0))
      throw Error(what + ": the standard deviation must be >= 0");
    if (o.init.kind == Init::uniform && !(o.init.a <= o.init.b))
      throw Error(what + ": the low end must not be above the high end");
    bool used = false;
    for (int n = 0; n < g.size() && !used; ++n)
      used = is_param(g, n) && glob_match(o.pattern, g.name(n));
    if (!used) {
      std::string names;
      int shown = 0;
      for (int n = 0; n < g.size() && shown < 5; ++n)
        if (is_param(g, n)) names += (shown++ ? ", '" : "'") + g.name(n) + "'";
      throw Error(what + " matches no parameter (parameters are named like " + names + ")");
    }
  }
}

void init_params(const GraphView& g, const Bindings& b, NamedArrays& store, std::uint64_t seed,
                 DType float_type, const InitOverrides& overrides) {
  for (int n = 0; n < g.size(); ++n) {
    if (!(g.node(n).flags & (kFlagParam | kFlagState))) continue;  // parameters and optimizer state
    const std::string name = g.name(n);
    if (store.count(name)) continue;
    const DType t = g.node(n).dtype == DType::f32 ? float_type : g.node(n).dtype;
    Array a(t, concrete_dims(g.shape(n), b));
    fill(a, resolve_init(g, n, overrides), seed, fnv1a(name));
    store.emplace(name, std::move(a));
  }
}

namespace {
Bindings dim_bindings(const GraphView& g,
                      const std::map<std::string, std::int64_t, std::less<>>& dims) {
  Bindings b;
  for (const auto& [name, v] : dims)
    for (const SymEntry& s : g.syms)
      if (s.name == name) b.set(s.id, v);
  return b;
}
}  // namespace

int first_unsized_param(const GraphView& g,
                        const std::map<std::string, std::int64_t, std::less<>>& dims) {
  const Bindings b = dim_bindings(g, dims);
  for (int n = 0; n < g.size(); ++n) {
    if (!(g.node(n).flags & (kFlagParam | kFlagState))) continue;
    const ShapeV& s = g.shape(n);
    for (int i = 0; i < s.rank; ++i)
      for (int k = 0; k < s.dims[i].nsym; ++k)
        if (!b.has(s.dims[i].sym[k])) return n;
  }
  return -1;
}

NamedArrays make_params(const GraphView& g,
                        const std::map<std::string, std::int64_t, std::less<>>& dims,
                        std::uint64_t seed, DType float_type, const InitOverrides& overrides,
                        const NamedArrays* given) {
  check_init_overrides(g, overrides);
  const Bindings b = dim_bindings(g, dims);
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
  if (given)
    for (int n = 0; n < g.size(); ++n) {
      if (!(g.node(n).flags & (kFlagParam | kFlagState))) continue;
      const auto it = given->find(g.name(n));
      const DType t = g.node(n).dtype == DType::f32 ? float_type : g.node(n).dtype;
      if (it != given->end() && it->second.dtype() == t &&
          it->second.dims() == concrete_dims(g.shape(n), b))
        store.emplace(it->first, it->second);  // shares the storage
    }
  init_params(g, b, store, seed, float_type, overrides);
  return store;
}

}  // namespace stag
