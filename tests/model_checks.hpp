// Inputs and the check_op call shared by the models' gradient checks (models/test_gradcheck*.cpp):
// right-padded keep masks, random tensors, labels with ignored positions. To add a helper that
// several model tests need, put it here.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "op_harness.hpp"

namespace th {

// keep[b, s] = s < lengths[b]: right padding, as tokenizers produce (a 0 length is a fully
// padded row, whose attention weights and pooled value are zeros).
inline stag::Array lengths_keep(const std::vector<std::int64_t>& lengths, std::int64_t s) {
  stag::Array a(DType::boolean, {static_cast<std::int64_t>(lengths.size()), s});
  for (std::size_t b = 0; b < lengths.size(); ++b)
    for (std::int64_t i = 0; i < s; ++i)
      a.set(static_cast<std::int64_t>(b) * s + i, i < lengths[b] ? 1.0 : 0.0);
  return a;
}

inline stag::Array f32(std::vector<std::int64_t> dims, std::uint64_t seed) {
  return random_array(DType::f32, std::move(dims), seed);
}
inline stag::Array i32(std::vector<std::int64_t> dims, std::uint64_t seed, int hi) {
  return random_array(DType::i32, std::move(dims), seed, 0, hi);
}
// An i32 vector of the given values.
inline stag::Array i32_values(const std::vector<std::int32_t>& values) {
  stag::Array a(DType::i32, {static_cast<std::int64_t>(values.size())});
  for (std::size_t i = 0; i < values.size(); ++i) a.set(static_cast<std::int64_t>(i), values[i]);
  return a;
}
// Labels in [0, hi), and -100 (ignored) where keep is false.
inline stag::Array labels(const stag::Array& keep, std::uint64_t seed, int hi) {
  stag::Array y = i32(keep.dims(), seed, hi);
  for (std::int64_t i = 0; i < y.numel(); ++i)
    if (keep.at(i) == 0) y.set(i, -100);
  return y;
}

// check_op over two bindings of the symbols, with a gradient check of every element of every
// parameter and float input: at these sizes the whole [gradcheck] label of the models takes a
// few seconds, so no sampling is needed.
inline void check_model(const std::string& what, const stag::GraphView& fwd,
                        const stag::GraphView& train, std::function<stag::NamedArrays(int)> inputs,
                        stag::EvalOptions eval = {}) {
  check_op({.what = what,
            .forward = fwd,
            .train = train,
            .inputs = std::move(inputs),
            .bindings = 2,
            .eval = eval,
            .grad = {.max_elements = std::int64_t{1} << 40}});
}

}  // namespace th
