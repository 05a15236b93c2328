// Binding a graph's symbolic dims to numbers from the tensors a caller passes, with the checks
// users rely on: every error names the input, the dim, what was expected and what was given.
// Shared by the reference evaluator and the CPU/CUDA sessions, so their messages are the same.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <stag/runtime/array.hpp>

namespace stag {

// Named tensors: graph inputs, parameters, outputs.
using NamedArrays = std::map<std::string, Array, std::less<>>;

class Bindings {
 public:
  bool has(SymId id) const;
  std::int64_t get(SymId id) const;  // throws if unbound
  void set(SymId id, std::int64_t v) { values_.emplace_back(id, v); }
  const std::vector<std::pair<SymId, std::int64_t>>& values() const { return values_; }
  bool operator==(const Bindings& o) const;
  bool operator<(const Bindings& o) const;
  // "batch=8, seq=32"
  std::string describe(const GraphView& g) const;

 private:
  std::vector<std::pair<SymId, std::int64_t>> values_;  // sorted by id after bind_symbols
  friend Bindings bind_symbols(const GraphView&, const NamedArrays&, const NamedArrays*,
                               const std::map<std::string, std::int64_t, std::less<>>&, bool);
};

// The number a dim stands for under `b`.
std::int64_t dim_value(const DimV& d, const Bindings& b);
std::vector<std::int64_t> concrete_dims(const ShapeV& s, const Bindings& b);

// A shape with symbol names, e.g. "[batch, seq, 512]".
std::string shape_text(const GraphView& g, const ShapeV& s);

// Validates `inputs` (and `params`, when given) against the graph's input and parameter nodes
// and binds every symbol. `dims` binds symbols that no tensor determines (e.g. a vocabulary
// size used only by parameters when params are not given). Throws stag::Error on:
// a missing or unknown input, a wrong dtype, a wrong rank, a static dim that differs, one
// symbol bound to two values, a symbol left unbound.
// With `f64_ok`, f64 tensors are also accepted where the graph says f32 (f64 evaluation).
Bindings bind_symbols(const GraphView& g, const NamedArrays& inputs, const NamedArrays* params,
                      const std::map<std::string, std::int64_t, std::less<>>& dims = {},
                      bool f64_ok = false);

}  // namespace stag
