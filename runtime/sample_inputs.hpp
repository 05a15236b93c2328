// Generated inputs for running a graph without data (profiling, drawing annotations, looking at
// attention): every input node gets a tensor of its dtype and shape, integer ids in the range
// that their consumer (an embedding table, a loss's classes) accepts, and padding masks with
// real padding. To support an integer input read by another op, add its case to index_range.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <stag/runtime/bind.hpp>

namespace stag {

using DimValues = std::map<std::string, std::int64_t, std::less<>>;

struct SampleInputOptions {
  std::uint64_t seed = 1;
  // Boolean inputs are keep masks [..., len]: row 0 keeps every position, every other row ends
  // in padding (at least one position, at most half of them). false: keep everything.
  bool pad = true;
  double lr = 1e-3;  // the value of a scalar f32 input called "lr" (training graphs)
};

// A tensor for every input of `g`. `dims` gives every symbol the inputs' shapes use (it may
// hold more); stag::Error names all missing ones at once, an integer input whose range no
// consumer tells, and a non-positive dim. Floating inputs are standard normal, except scalars:
// "lr" gets opts.lr and any other scalar 1 (an optimizer's "step").
NamedArrays sample_inputs(const GraphView& g, const DimValues& dims,
                          const SampleInputOptions& opts = {});

// The number of true (kept) positions in each row of a boolean mask [..., len]; sample_inputs'
// masks keep positions [0, kept[r]) of row r.
std::vector<std::int64_t> kept_lengths(const Array& keep);

}  // namespace stag
