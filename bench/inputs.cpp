// Deterministic benchmark inputs (token ids and padding masks), shared by the model files.
// A new kind of input gets its maker here and its declaration in bench_models.hpp.
#include "bench_models.hpp"

namespace stag::bench {

Array random_ids(std::vector<std::int64_t> dims, std::int64_t vocab, std::uint64_t seed) {
  Array a(DType::i32, std::move(dims));
  std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    x ^= x << 13;  // xorshift64
    x ^= x >> 7;
    x ^= x << 17;
    a.set(i, static_cast<double>(x % static_cast<std::uint64_t>(vocab)));
  }
  return a;
}

Array keep_mask(std::int64_t batch, std::int64_t len, std::int64_t padded) {
  Array a(DType::boolean, {batch, len});
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t s = 0; s < len; ++s)
      a.set(b * len + s, b % 2 == 1 && s >= len - padded ? 0.0 : 1.0);
  return a;
}

}  // namespace stag::bench
