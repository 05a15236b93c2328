// Greedy and top-k / temperature sampling over one row of logits, in double precision.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include <stag/graph/fixed_string.hpp>
#include <stag/models/sampling.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/ops/random.hpp>

namespace stag {
namespace {

std::size_t candidates(std::span<const float> logits, std::int64_t vocab_limit) {
  std::size_t n = logits.size();
  if (vocab_limit > 0 && static_cast<std::size_t>(vocab_limit) < n)
    n = static_cast<std::size_t>(vocab_limit);
  if (n == 0) throw Error("stag: sample_token: no candidate ids (empty logits or vocab_limit)");
  return n;
}

void check(const SampleOptions& o) {
  if (!(o.temperature >= 0))
    throw Error("stag: sample_token: temperature must be >= 0, got " +
                std::to_string(o.temperature));
  if (o.top_k < 0)
    throw Error("stag: sample_token: top_k must be >= 0, got " + std::to_string(o.top_k));
  if (!(o.top_p > 0 && o.top_p <= 1))
    throw Error("stag: sample_token: top_p must be in (0, 1], got " + std::to_string(o.top_p));
}

// The most likely id; NaN never wins, ties go to the smaller id.
std::int32_t argmax(std::span<const float> logits, std::size_t n) {
  std::size_t best = n;
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isnan(logits[i]) && (best == n || logits[i] > logits[best])) best = i;
  if (best == n || logits[best] == -INFINITY)
    throw Error("stag: sample_token: every logit is NaN or -inf");
  return static_cast<std::int32_t>(best);
}

}  // namespace

void sample_probabilities(std::span<const float> logits, const SampleOptions& o,
                          std::span<double> out, std::int64_t vocab_limit) {
  check(o);
  const std::size_t n = candidates(logits, vocab_limit);
  std::fill(out.begin(), out.end(), 0.0);
  if (o.temperature == 0 || o.top_k == 1) {
    out[static_cast<std::size_t>(argmax(logits, n))] = 1.0;
    return;
  }
  // Ids by decreasing logit (ties: smaller id first); NaN counts as -inf.
  std::vector<std::size_t> ids(n);
  std::iota(ids.begin(), ids.end(), std::size_t{0});
  auto value = [&](std::size_t i) {
    return std::isnan(logits[i]) ? -INFINITY : static_cast<double>(logits[i]);
  };
  const std::size_t k = o.top_k > 0 ? std::min(n, static_cast<std::size_t>(o.top_k)) : n;
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(),
                    [&](std::size_t a, std::size_t b) {
                      return value(a) > value(b) || (value(a) == value(b) && a < b);
                    });
  const double top = value(ids[0]);
  if (top == -INFINITY) throw Error("stag: sample_token: every logit is NaN or -inf");
  // NOTE: subtract the largest logit before exp: logits / temperature overflow exp otherwise.
  double total = 0;
  for (std::size_t r = 0; r < k; ++r) {
    const double p = std::exp((value(ids[r]) - top) / o.temperature);
    out[ids[r]] = p;
    total += p;
  }
  for (std::size_t r = 0; r < k; ++r) out[ids[r]] /= total;
  if (o.top_p >= 1) return;
  // Nucleus: the most likely ids (in the order above) until their mass reaches top_p.
  double kept = 0;
  std::size_t keep = 0;
  while (keep < k && kept < o.top_p) kept += out[ids[keep++]];
  for (std::size_t r = keep; r < k; ++r) out[ids[r]] = 0;
  for (std::size_t r = 0; r < keep; ++r) out[ids[r]] /= kept;
}

std::int32_t sample_token(std::span<const float> logits, const SampleOptions& o,
                          std::uint64_t counter, std::int64_t vocab_limit) {
  check(o);
  const std::size_t n = candidates(logits, vocab_limit);
  if (o.temperature == 0 || o.top_k == 1) return argmax(logits, n);
  std::vector<double> p(n);
  sample_probabilities(logits, o, p, vocab_limit);
  // Inverse CDF in id order with one uniform number in [0, 1).
  const double u = random::uniform(o.seed, counter, fnv1a("sample_token"), 0);
  double acc = 0;
  std::size_t last = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] == 0) continue;
    acc += p[i];
    last = i;
    if (u < acc) return static_cast<std::int32_t>(i);
  }
  return static_cast<std::int32_t>(last);  // NOTE: rounding can leave acc a hair below 1
}

}  // namespace stag
