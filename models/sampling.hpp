// Choosing the next token from a row of logits: greedy (temperature 0), or sampling from
// softmax(logits / temperature) restricted to the top_k most likely ids and then to the
// smallest set of most likely ids whose probability reaches top_p (nucleus sampling), with
// stag's counter-based random numbers, so a (seed, counter) pair always gives the same token.
// Add a strategy (repetition penalty) as a field of SampleOptions and a step in sample_token.
#pragma once

#include <cstdint>
#include <span>

namespace stag {

struct SampleOptions {
  double temperature = 1.0;  // 0: greedy (the most likely id; ties go to the smaller id)
  int top_k = 0;             // keep the k most likely ids (0: all); 1 is greedy
  // Then keep the most likely ids until their probability (after top_k) reaches top_p, at
  // least one; 1: all. In (0, 1].
  double top_p = 1.0;
  std::uint64_t seed = 0;
};

// The id drawn from `logits` (only ids below `vocab_limit` are candidates, e.g. the tokenizer's
// size when the model's vocabulary is larger; 0: all). `counter` selects the random number:
// give each generated position its own (its index). Throws stag::Error on an empty row, a
// negative or NaN temperature, a negative top_k, a top_p outside (0, 1], or logits that are
// all NaN or -inf.
std::int32_t sample_token(std::span<const float> logits, const SampleOptions& opts,
                          std::uint64_t counter, std::int64_t vocab_limit = 0);

// The probabilities sample_token draws from (0 outside the top k and the top p), for tests and
// inspection.
void sample_probabilities(std::span<const float> logits, const SampleOptions& opts,
                          std::span<double> out, std::int64_t vocab_limit = 0);

}  // namespace stag
