// Parameter initialisation: each parameter node carries its Init kind (ops/parameter); this
// fills a NamedArrays store from a graph with counter-based random numbers, so the values
// depend only on the seed and the parameter's name, never on creation order or threads.
#pragma once

#include <stag/runtime/bind.hpp>

namespace stag {

// Creates every parameter of `g` (concrete shapes from `b`) that `store` does not hold yet.
void init_params(const GraphView& g, const Bindings& b, NamedArrays& store, std::uint64_t seed,
                 DType float_type = DType::f32);

// Binds the symbols that parameters alone determine from `dims`, then initialises them.
NamedArrays make_params(const GraphView& g,
                        const std::map<std::string, std::int64_t, std::less<>>& dims,
                        std::uint64_t seed, DType float_type = DType::f32);

}  // namespace stag
