// The example behind docs/training.md: a training loop written by hand with stag::Trainer on the
// UCI sentiment sentences (tools/data.sh installs them; without them it exits 77, which ctest
// reports as skipped): BPE tokens, seeded batches, a cosine schedule, evaluation, a checkpoint
// and an exact resume. Run, it checks that validation accuracy clears the majority class.
#include <filesystem>

#include <stag/models/data/batch.hpp>
#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/split.hpp>
#include <stag/runtime/train/trainer.hpp>

#include "doc_tools.hpp"

using namespace stag;

// snippet-begin: model
constexpr ClassifierConfig kConfig{.vocab = 2000,
                                   .max_len = 64,
                                   .d_model = 64,
                                   .heads = 2,
                                   .d_ff = 128,
                                   .layers = 1,
                                   .classes = 2,
                                   .dropout = 0.1};
constexpr auto net = model([](Builder& g) { return classifier<kConfig>(g); });
constexpr AdamW kAdamW{.weight_decay = 0.1, .clip_norm = 1.0};
// snippet-end: model

std::vector<std::string> texts(const data::TextDataset& d) {
  std::vector<std::string> t;
  for (const auto& e : d.examples) t.push_back(e.text);
  return t;
}

int main() {
  data::TextDataset all;
  try {
    all = data::load_sentiment();
  } catch (const Error& e) {
    std::printf("skipped: %s\n", e.what());
    return 77;
  }
  // snippet-begin: data
  const data::TextSplits split = data::split_dataset(all, {.seed = 0});  // 80 / 10 / 10, by text
  const auto bpe = data::BpeTokenizer::train(texts(split.train), kConfig.vocab);
  const data::EncodedTexts train = data::encode_texts(bpe, split.train);
  const data::EncodedTexts val = data::encode_texts(bpe, split.val);
  const data::PadOptions pad{.max_len = kConfig.max_len};  // longer texts are cut: 64 positions
  std::vector<Batch> val_batches;
  for (const auto& rows : data::make_batches(val.lengths(), {.batch_size = 100, .shuffle = false}))
    val_batches.push_back({data::make_class_batch(val, rows, pad).inputs()});
  // snippet-end: data

  // snippet-begin: loop
  const std::int64_t epochs = 4, steps = epochs * 76;  // 2,401 sentences in batches of 32
  Trainer trainer(training_graphs<net, kAdamW>(), {.session = {.threads = 2, .seed = 1},
                                                   .lr = LrSchedule::cosine(1e-3, 30, steps)});
  for (std::int64_t epoch = 0; epoch < epochs; ++epoch) {
    for (const auto& rows :
         data::make_batches(train.lengths(), {.batch_size = 32, .seed = 1}, epoch))
      trainer.step(data::make_class_batch(train, rows, pad).inputs());  // forward, backward, AdamW
    const EvalStats v = trainer.evaluate(val_batches);                  // dropout off, same weights
    std::printf("epoch %lld: validation loss %.4f, accuracy %.3f\n",
                static_cast<long long>(epoch + 1), v.loss, v.accuracy);
  }
  // snippet-end: loop

  // snippet-begin: resume
  const std::string path =
      (std::filesystem::temp_directory_path() / "stag_doc_training.safetensors").string();
  trainer.save(path);  // parameters, AdamW moments, step, config: one safetensors file
  Trainer again(training_graphs<net, kAdamW>(),
                {.session = {.threads = 2, .seed = 1}, .lr = LrSchedule::cosine(1e-3, 30, steps)});
  again.resume(path);
  const NamedArrays batch =
      data::make_class_batch(train, std::vector<std::size_t>{0, 1, 2, 3}, pad).inputs();
  const double a = trainer.step(batch).loss,
               b = again.step(batch).loss;  // the same step, bit for bit
  // snippet-end: resume
  std::filesystem::remove(path);

  const EvalStats v = trainer.evaluate(val_batches);
  std::printf("after resume: step losses %.9g and %.9g\n", a, b);
  docs::expect(a == b, "a resumed trainer takes exactly the same step");
  docs::expect(v.accuracy > 0.6,
               "the classifier beats the majority class (about 0.52) on validation");
  return 0;
}
