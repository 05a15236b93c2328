// What the Trainer's tests share (runtime/train/test_trainer*.cpp): two small classifiers, with
// and without dropout, an optimizer whose hyper-parameters are inputs, random labelled rows, and
// trainer options.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <stag/models/data/batch.hpp>
#include <stag/runtime/train/trainer.hpp>

#include "harness.hpp"

namespace trainer_fixtures {
using namespace stag;

constexpr ClassifierConfig kDrop{.vocab = 20,
                                 .max_len = 12,
                                 .d_model = 16,
                                 .heads = 2,
                                 .d_ff = 32,
                                 .layers = 1,
                                 .classes = 3,
                                 .dropout = 0.1};
constexpr ClassifierConfig kNoDrop{.vocab = 20,
                                   .max_len = 12,
                                   .d_model = 16,
                                   .heads = 2,
                                   .d_ff = 32,
                                   .layers = 1,
                                   .classes = 3,
                                   .dropout = 0.0};
constexpr auto drop_net = model([](Builder& g) { return classifier<kDrop>(g); });
constexpr auto nodrop_net = model([](Builder& g) { return classifier<kNoDrop>(g); });
constexpr AdamW kOpt{.weight_decay = 0.01, .clip_norm = 1.0, .hparams_as_inputs = true};

// Rows of random ids with random lengths; the label is the id of the first token mod 3, so
// there is something to learn.
inline data::EncodedTexts make_rows(std::size_t n, std::uint64_t seed) {
  data::EncodedTexts d;
  const Array ids = th::random_array(DType::i32, {static_cast<std::int64_t>(n), 10}, seed, 4, 20);
  const Array lens = th::random_array(DType::i32, {static_cast<std::int64_t>(n)}, seed + 1, 2, 11);
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::int32_t> row;
    for (std::int64_t k = 0; k < static_cast<std::int64_t>(lens.at(static_cast<std::int64_t>(i)));
         ++k)
      row.push_back(static_cast<std::int32_t>(ids.at(static_cast<std::int64_t>(i) * 10 + k)));
    d.labels.push_back(row[0] % 3);
    d.ids.push_back(std::move(row));
  }
  return d;
}

inline Batch batch_of(const data::EncodedTexts& d, std::vector<std::size_t> rows) {
  return Batch{data::make_class_batch(d, rows).inputs()};
}

inline DataSource source_of(const data::EncodedTexts& d, std::size_t batch_size,
                            std::uint64_t seed) {
  const std::vector<std::size_t> lengths = d.lengths();
  return {[=](std::int64_t e) {
            return data::make_batches(lengths, {.batch_size = batch_size, .seed = seed},
                                      static_cast<std::uint64_t>(e))
                .size();
          },
          [=, &d](std::int64_t e, std::size_t i) {
            const auto plan = data::make_batches(lengths, {.batch_size = batch_size, .seed = seed},
                                                 static_cast<std::uint64_t>(e));
            return batch_of(d, plan[i]);
          }};
}

inline std::vector<double> train_losses(const std::string& metrics) {
  std::vector<double> out;
  for (const MetricsRecord& r : read_metrics(metrics))
    if (r.split == "train") out.push_back(*r.get("loss"));
  return out;
}

inline TrainerOptions options(std::uint64_t seed, const std::string& metrics = {}) {
  return {.session = {.threads = 2, .seed = seed},
          .lr = LrSchedule::cosine(3e-3, 3, 40),
          .metrics_path = metrics,
          .progress = false};
}

}  // namespace trainer_fixtures
