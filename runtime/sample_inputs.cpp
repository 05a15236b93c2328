// Generated inputs: shapes from the given symbol values, id ranges from the ops that read them,
// counter-based random values (the same seed gives the same tensors on every machine).
#include <algorithm>
#include <cmath>
#include <numbers>

#include <stag/ops/random.hpp>
#include <stag/ops/registry.hpp>
#include <stag/runtime/sample_inputs.hpp>

namespace stag {

namespace {

// A dim's value under `dims`; a missing symbol is added to `missing` (and counts as 1).
std::int64_t dim_value_of(const GraphView& g, const DimV& d, const DimValues& dims,
                          std::vector<std::string>& missing) {
  std::int64_t v = d.coef;
  for (int k = 0; k < d.nsym; ++k) {
    const std::string_view name = g.sym_name(d.sym[k]);
    const auto it = dims.find(name);
    if (it == dims.end()) {
      if (std::find(missing.begin(), missing.end(), name) == missing.end())
        missing.emplace_back(name);
      continue;
    }
    v *= it->second;
  }
  return v;
}

// How many distinct values integer input `n` may take: the smallest table or class count
// among the ops that read it; 0 when no consumer says.
std::int64_t index_range(const GraphView& g, int n, const DimValues& dims,
                         std::vector<std::string>& missing) {
  std::int64_t range = 0;
  auto take = [&](std::int64_t r) { range = range == 0 ? r : std::min(range, r); };
  for (int c = 0; c < g.size(); ++c) {
    const Node& nd = g.node(c);
    for (int k = 0; k < nd.nin; ++k) {
      if (nd.in[k] != n) continue;
      const OpId op = op_id(nd.op);
      if (op == OpId::embedding && k == 0) {
        take(dim_value_of(g, g.shape(nd.in[1]).dims[0], dims, missing));  // table [V, D]
      } else if (op == OpId::embedding_backward && k == 0) {
        take(dim_value_of(g, g.shape(c).dims[0], dims, missing));  // dtable [V, D]
      } else if ((op == OpId::cross_entropy || op == OpId::cross_entropy_backward) && k == 1) {
        const ShapeV& logits = g.shape(nd.in[0]);
        take(dim_value_of(g, logits.dims[logits.rank - 1], dims, missing));  // classes
      }
    }
  }
  return range;
}

}  // namespace

NamedArrays sample_inputs(const GraphView& g, const DimValues& dims,
                          const SampleInputOptions& opts) {
  for (const auto& [name, v] : dims)
    if (v <= 0)
      throw Error("stag: sample inputs: symbol '" + name + "' must be positive, got " +
                  std::to_string(v));
  std::vector<std::string> missing;
  std::vector<int> input_nodes;
  for (int n = 0; n < g.size(); ++n)
    if (g.node(n).flags & kFlagInput) input_nodes.push_back(n);
  std::vector<std::vector<std::int64_t>> shapes;
  for (const int n : input_nodes) {
    const ShapeV& s = g.shape(n);
    std::vector<std::int64_t> d;
    for (int i = 0; i < s.rank; ++i) d.push_back(dim_value_of(g, s.dims[i], dims, missing));
    shapes.push_back(std::move(d));
  }
  if (!missing.empty()) {
    std::string names, example;
    for (const std::string& m : missing) {
      names += (names.empty() ? "" : ", ") + m;
      example += (example.empty() ? "" : " ") + std::string("--dim ") + m + "=8";
    }
    throw Error("stag: sample inputs need a value for symbol" +
                std::string(missing.size() > 1 ? "s " : " ") + names + " (e.g. " + example + ")");
  }

  NamedArrays out;
  for (std::size_t i = 0; i < input_nodes.size(); ++i) {
    const int n = input_nodes[i];
    const std::string name = g.name(n);
    const DType t = g.node(n).dtype;
    Array a(t, shapes[i]);
    const std::uint64_t salt = static_cast<std::uint64_t>(n) + 1;
    auto uniform = [&](std::int64_t k) {
      return random::uniform(opts.seed, 0, salt, static_cast<std::uint64_t>(k));
    };
    if (t == DType::boolean) {
      const std::int64_t len = a.rank() > 0 ? a.dim(-1) : 1;
      const std::int64_t rows = len > 0 ? a.numel() / len : 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        std::int64_t kept = len;
        if (opts.pad && r > 0 && len > 1) {
          const std::int64_t most =
              std::max<std::int64_t>(1, len / 2);  // padded positions: 1 .. len/2
          kept = len - 1 - static_cast<std::int64_t>(uniform(r) * static_cast<double>(most));
          kept = std::clamp<std::int64_t>(kept, len - most, len - 1);
        }
        for (std::int64_t p = 0; p < len; ++p) a.set(r * len + p, p < kept ? 1.0 : 0.0);
      }
    } else if (is_integer(t)) {
      std::vector<std::string> unused;
      const std::int64_t range = index_range(g, n, dims, unused);
      if (range <= 0)
        throw Error("stag: sample inputs: cannot tell which values integer input '" + name +
                    "' may take (no embedding or loss reads it directly); pass it yourself");
      for (std::int64_t k = 0; k < a.numel(); ++k)
        a.set(k, std::floor(uniform(k) * static_cast<double>(range)));
    } else if (a.rank() == 0) {
      a.set(0, name == "lr" ? opts.lr : 1.0);
    } else {
      for (std::int64_t k = 0; k < a.numel(); ++k) {  // Box-Muller from two uniforms
        const double u1 = 1.0 - uniform(2 * k), u2 = uniform(2 * k + 1);
        a.set(k, std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
      }
    }
    out.emplace(name, std::move(a));
  }
  return out;
}

std::vector<std::int64_t> kept_lengths(const Array& keep) {
  if (keep.dtype() != DType::boolean)
    throw Error("stag: kept_lengths: expects a boolean mask, got " + keep.describe());
  const std::int64_t len = keep.rank() > 0 ? keep.dim(-1) : 1;
  std::vector<std::int64_t> out;
  for (std::int64_t r = 0; len > 0 && r < keep.numel() / len; ++r) {
    std::int64_t c = 0;
    for (std::int64_t p = 0; p < len; ++p) c += keep.at(r * len + p) != 0;
    out.push_back(c);
  }
  return out;
}

}  // namespace stag
