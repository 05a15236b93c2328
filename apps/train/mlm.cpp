// See mlm.hpp.
#include "mlm.hpp"

#include <algorithm>

#include <stag/ops/random.hpp>

namespace stag::train_app {

Batch mlm_batch(const data::EncodedTexts& d, std::span<const std::size_t> rows,
                const data::PadOptions& pad, double p, std::size_t vocab, std::uint64_t seed,
                std::int64_t epoch) {
  data::ClassBatch b = data::make_class_batch(d, rows, pad);
  const std::int64_t n = b.ids.dim(0), len = b.ids.dim(1);
  auto* ids = b.ids.data<std::int32_t>();
  const bool* keep = b.keep.data<bool>();
  std::vector<std::int32_t> where, targets;
  const auto e = static_cast<std::uint64_t>(epoch);
  auto mask = [&](std::int64_t r, std::int64_t k) {
    const std::int64_t at = r * len + k;
    const std::uint64_t row = rows[static_cast<std::size_t>(r)],
                        pos = static_cast<std::uint64_t>(k);
    where.push_back(static_cast<std::int32_t>(at));
    targets.push_back(ids[at]);
    const double how = random::uniform(seed ^ 0x6d6c6d2d686f7721ULL, e, row, pos);
    if (how < 0.8) {
      ids[at] = data::kUnkId;
    } else if (how < 0.9) {
      const double u = random::uniform(seed ^ 0x6d6c6d2d72616e64ULL, e, row, pos);
      ids[at] = data::kNumSpecial +
                static_cast<std::int32_t>(u * static_cast<double>(vocab - data::kNumSpecial));
    }
  };
  for (std::int64_t r = 0; r < n; ++r)
    for (std::int64_t k = 0; k < len; ++k)
      if (keep[r * len + k] &&
          random::uniform(seed ^ 0x6d6c6d2d7069636bULL, e, rows[static_cast<std::size_t>(r)],
                          static_cast<std::uint64_t>(k)) < p)
        mask(r, k);
  if (where.empty() && n > 0 && keep[0]) mask(0, 0);
  double tokens = 0;
  for (std::int64_t k = 0; k < b.keep.numel(); ++k) tokens += b.keep.at(k);
  // The targets are padded to a multiple of 64 (ignored ones, -100, at position 0), so that
  // batches come in a few shapes and the sessions reuse a few plans.
  const std::size_t real = where.size();
  while (where.size() % 64 != 0) {
    where.push_back(0);
    targets.push_back(-100);
  }
  auto vec = [](const std::vector<std::int32_t>& v) {
    Array a(DType::i32, {static_cast<std::int64_t>(v.size())});
    std::copy(v.begin(), v.end(), a.data<std::int32_t>());
    return a;
  };
  NamedArrays in{
      {"ids", b.ids}, {"keep", b.keep}, {"where", vec(where)}, {"targets", vec(targets)}};
  return Batch{std::move(in), static_cast<double>(real), tokens};
}

}  // namespace stag::train_app
