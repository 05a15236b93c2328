// The pictures of a (tiny) training run, compiled and run by ctest (doc.train_pictures): a
// one-layer classifier learns whether a sentence is positive: "good" or "bad", negated by a
// "not" anywhere before it (so the sentiment word must attend to the "not"); the run logs metrics
// (train loss, lr, tokens/s; validation loss and accuracy) and then writes, into argv[1]:
//   metrics.jsonl   for `stag-plot --metrics metrics.jsonl -o curves.svg`
//   model.svg       the model's graph, as a trainer writes it next to a checkpoint
//   attention.svg   the trained attention weights of a padded validation sentence
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <stag/stag.hpp>

using namespace stag;

constexpr ClassifierConfig kConfig{.vocab = 16,
                                   .max_len = 12,
                                   .d_model = 32,
                                   .heads = 2,
                                   .d_ff = 64,
                                   .layers = 1,
                                   .classes = 2,
                                   .dropout = 0.0};
constexpr auto net = model([](Builder& g) { return classifier<kConfig>(g); });
constexpr auto step = train_step<net, AdamW{.weight_decay = 0.01, .clip_norm = 1.0}>();

const std::vector<std::string> kWords = {"<pad>",  "the", "a",     "movie", "film",  "plot",
                                         "acting", "was", "is",    "very",  "quite", "good",
                                         "bad",    "not", "story", "music"};
constexpr int kGood = 11, kBad = 12, kNot = 13, kLen = 12;

struct Sentences {
  Array ids, keep, label;
};

// Sentences of 5..12 words with one "good" or "bad" and, half of the time, a "not" somewhere
// before it. Label 1 (positive) for "good" or "not ... bad".
Sentences make_batch(int n, std::mt19937& rng) {
  Sentences b{Array(DType::i32, {n, kLen}), Array(DType::boolean, {n, kLen}),
              Array(DType::i32, {n})};
  std::uniform_int_distribution<int> len(5, kLen), filler(1, 10), extra(14, 15), coin(0, 1);
  for (int r = 0; r < n; ++r) {
    const int l = len(rng);
    const int at = std::uniform_int_distribution<int>(1, l - 1)(rng);
    const int negation = coin(rng) ? std::uniform_int_distribution<int>(0, at - 1)(rng) : -1;
    const bool good = coin(rng) == 1;
    for (int p = 0; p < kLen; ++p) {
      int word = coin(rng) ? filler(rng) : extra(rng);
      if (p == at) word = good ? kGood : kBad;
      if (p == negation) word = kNot;
      if (p >= l) word = 0;
      b.ids.set(r * kLen + p, word);
      b.keep.set(r * kLen + p, p < l);
    }
    b.label.set(r, good != (negation >= 0));
  }
  return b;
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : ".";
  std::mt19937 rng(7);
  const Sentences valid = make_batch(256, rng);
  const int steps = 300, batch = 32;
  const LrSchedule lr = LrSchedule::cosine(3e-3, 30, steps, 3e-4);

  Session trainer(step, {.threads = 1, .seed = 1});
  Session eval(net, {.threads = 1, .seed = 1, .keep = {"enc.0.self_attn.weights"}});
  MetricsLog log(dir + "/metrics.jsonl", false);
  double last_accuracy = 0;
  for (int i = 1; i <= steps; ++i) {
    const Sentences b = make_batch(batch, rng);
    trainer.set_inputs({{"ids", b.ids}, {"keep", b.keep}, {"label", b.label}});
    trainer.set_input("lr", Array::from<float>({}, {static_cast<float>(lr.at(i))}));
    trainer.set_input("step", Array::from<float>({}, {static_cast<float>(i)}));
    const auto t0 = std::chrono::steady_clock::now();
    trainer.run({.training = true, .step = static_cast<std::uint64_t>(i)});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double tokens = 0;
    for (const double k : b.keep.to_doubles()) tokens += k;
    // snippet-begin: log
    log.write(MetricsRecord{.step = i, .epoch = 0}
                  .set("loss", trainer.result())
                  .set("lr", lr.at(i))
                  .set("tokens_per_s", tokens / seconds));
    // snippet-end: log
    if (i % 20 == 0 || i == steps) {  // validation with the current parameters
      for (const auto& [name, value] : eval.params())
        eval.set_param(name, trainer.params().at(name));
      eval.set_inputs({{"ids", valid.ids}, {"keep", valid.keep}, {"label", valid.label}});
      eval.run();
      const Array logits = eval.get("logits");
      int right = 0;
      for (int r = 0; r < 256; ++r)
        right += (logits.at(2 * r + 1) > logits.at(2 * r)) == (valid.label.at(r) != 0);
      last_accuracy = right / 256.0;
      // snippet-begin: log-valid
      log.write(MetricsRecord{.step = i, .epoch = 0, .split = "valid"}
                    .set("loss", eval.result())
                    .set("accuracy", last_accuracy));
      // snippet-end: log-valid
    }
  }

  // Attention of the first negated validation sentence with some padding, labelled with its words.
  int row = 0;
  auto word_at = [&](int r, int p) { return static_cast<int>(valid.ids.at(r * kLen + p)); };
  auto pick = [&](int r) {
    int real = 0, nots = 0;
    for (int p = 0; p < kLen; ++p) {
      real += valid.keep.at(r * kLen + p) != 0;
      nots += word_at(r, p) == kNot;
    }
    return nots == 1 && real >= 8 && real < kLen;
  };
  while (row < 255 && !pick(row)) ++row;
  std::vector<std::string> words;
  for (int p = 0; p < kLen; ++p) words.push_back(kWords[static_cast<std::size_t>(word_at(row, p))]);

  // snippet-begin: pictures
  // The model's graph, as a trainer draws it next to its checkpoint (repeated layers once).
  draw_model_svg(net, dir + "/model.svg", true,
                 "the classifier of docs/examples/train_pictures.cpp");

  // One batch row of a kept attention node: [heads, q_len, k_len] (eval kept it by name).
  const Array w = attention_weights(eval, "enc.0.self_attn.weights", row);
  double on_padding = 0;  // the largest weight any query gives a padded key: must be 0
  for (std::int64_t i = 0; i < w.numel(); ++i)
    if (valid.keep.at(row * kLen + i % kLen) == 0) on_padding = std::max(on_padding, w.at(i));
  const HeatmapOptions look{.keys = words,
                            .title = "trained classifier: a negated sentence, padded"};
  write_text_file(dir + "/attention.svg", attention_heatmap_svg(w, look));
  // snippet-end: pictures
  std::printf(
      "validation accuracy %.3f after %d steps, largest attention on a padded key %g; wrote "
      "metrics.jsonl, model.svg, attention.svg in %s\n",
      last_accuracy, steps, on_padding, dir.c_str());
  if (!(last_accuracy > 0.9) || on_padding != 0) {
    std::printf(
        "FAILED: the classifier should learn this task (accuracy > 0.9) and give padded "
        "keys no attention\n");
    return 1;
  }
  return 0;
}
