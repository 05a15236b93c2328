// Parameter initialisation: each parameter node carries its Init kind (ops/parameter); this
// fills a NamedArrays store from a graph with counter-based random numbers, so the values
// depend only on the seed, the parameter's name and its initialiser, never on creation order
// or threads. Overrides by name pattern replace the graph's initialiser per parameter.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <stag/ops/parameter/parameter.hpp>
#include <stag/runtime/bind.hpp>

namespace stag {

// An initialiser: an Init kind with its arguments.
struct InitSpec {
  Init kind = Init::xavier_uniform;
  double a = 0.0, b = 0.0;  // normal: mean, standard deviation; uniform: low, high

  static constexpr InitSpec zeros() { return {Init::zeros}; }
  static constexpr InitSpec ones() { return {Init::ones}; }
  static constexpr InitSpec normal(double mean, double std) { return {Init::normal, mean, std}; }
  static constexpr InitSpec uniform(double lo, double hi) { return {Init::uniform, lo, hi}; }
  // U(-r, r), r = sqrt(6 / (fan_in + fan_out)), fans from the last two dims.
  static constexpr InitSpec xavier_uniform() { return {Init::xavier_uniform}; }

  // E.g. "normal(0, 0.02)".
  std::string describe() const;
  bool operator==(const InitSpec&) const = default;
};

// Replaces the initialiser of every parameter whose full name matches `pattern`, a glob in
// which '*' matches any run of characters (dots included) and '?' any one character:
// "*.bias", "enc.*.attn.*.weight", "tok.weight". When several match, the last one wins.
// Optimizer state is never overridden (it starts at zero).
struct InitOverride {
  std::string pattern;
  InitSpec init;
};
using InitOverrides = std::vector<InitOverride>;

bool glob_match(std::string_view pattern, std::string_view name);

// The initialiser of parameter node `n`: the last override matching its name, else the graph's.
InitSpec resolve_init(const GraphView& g, int n, const InitOverrides& overrides = {});

// stag::Error when an override matches no parameter of `g` (a typo would silently do nothing)
// or has invalid arguments (a negative standard deviation, low above high).
void check_init_overrides(const GraphView& g, const InitOverrides& overrides);

// Creates every parameter of `g` (concrete shapes from `b`) that `store` does not hold yet.
void init_params(const GraphView& g, const Bindings& b, NamedArrays& store, std::uint64_t seed,
                 DType float_type = DType::f32, const InitOverrides& overrides = {});

// The first parameter or state tensor of `g` with a symbolic dim that `dims` does not give
// (its node index), or -1 when make_params can create them all.
int first_unsized_param(const GraphView& g,
                        const std::map<std::string, std::int64_t, std::less<>>& dims);
// Binds the symbols that parameters alone determine from `dims`, then initialises them. A
// tensor of `given` with a parameter's name, dtype and shape is used instead of creating that
// parameter (its storage shared, nothing initialised: loaded weights cost no second copy);
// other tensors of `given` are ignored here.
NamedArrays make_params(const GraphView& g,
                        const std::map<std::string, std::int64_t, std::less<>>& dims,
                        std::uint64_t seed, DType float_type = DType::f32,
                        const InitOverrides& overrides = {}, const NamedArrays* given = nullptr);

}  // namespace stag
