// The masked-language-model batches of `stag-train classify --pretrain-steps` (BERT's recipe),
// for models/classifier.hpp's classifier_mlm graph.
#pragma once

#include <span>

#include <stag/models/data/batch.hpp>
#include <stag/runtime/train/trainer.hpp>

namespace stag::train_app {

// The share of tokens the masked-LM pretraining predicts (BERT's).
inline constexpr double kMaskProb = 0.15;

// One batch of rows `rows` of `d`: each real token is picked with probability p (at least one
// per batch); a picked token becomes <unk> (80%), a random id in [4, vocab) (10%) or stays (10%),
// and is a target. Inputs: "ids", "keep" as the classifier's, "where" (row * seq + column of
// each target) and "targets" (the original ids), both padded to a multiple of 64 with ignored
// targets (-100 at position 0) so that batches come in a few shapes. All draws come from
// (seed, epoch, row, position): a resumed or repeated run masks the same ones. The weight is
// the number of real targets.
Batch mlm_batch(const data::EncodedTexts& d, std::span<const std::size_t> rows,
                const data::PadOptions& pad, double p, std::size_t vocab, std::uint64_t seed,
                std::int64_t epoch);

}  // namespace stag::train_app
