// stag-train's pieces: the single-batch overfit test of the default classifier preset, the
// bag-of-words baseline, edit distance and error rates, the unigram baseline, Hana reflection
// of the flags, the tokeniser's JSON round trip, and the masked-LM batches (their statistics, and
// that a model trained on them learns from context). Expected values are worked out by hand.
#include <cmath>
#include <functional>

#include <catch2/catch.hpp>

#include <stag/models/data/batch.hpp>
#include <stag/models/presets.hpp>
#include <stag/ops/random.hpp>
#include <stag/runtime/train/trainer.hpp>

#include "bow.hpp"
#include "common.hpp"
#include "mlm.hpp"
#include "options.hpp"
#include "reflect.hpp"
#include "tokenizer.hpp"

namespace {
using namespace stag;
using namespace stag::train_app;

constexpr auto default_net = model([](Builder& g) { return classifier<kClassifyPre>(g); });

TEST_CASE("the default classifier fits one batch: loss below 0.01 within 200 steps",
          "[train_app][overfit]") {
  // 32 rows of random ids (lengths 5..40) with random labels: only memorising fits them.
  data::EncodedTexts d;
  for (std::uint64_t i = 0; i < 32; ++i) {
    const auto len = 5 + static_cast<std::size_t>(random::uniform(1, 2, 3, i) * 36);
    std::vector<std::int32_t> row;
    for (std::size_t k = 0; k < len; ++k)
      row.push_back(4 + static_cast<std::int32_t>(random::uniform(1, 4, i, k) * 1996));
    d.ids.push_back(row);
    d.labels.push_back(random::uniform(1, 5, 6, i) < 0.5 ? 0 : 1);
  }
  std::vector<std::size_t> rows(32);
  for (std::size_t i = 0; i < 32; ++i) rows[i] = i;
  const Batch batch{data::make_class_batch(d, rows).inputs()};
  Trainer t(training_graphs<default_net, AdamW{.hparams_as_inputs = true}, false>(),
            {.session = {.threads = 2, .seed = 1},
             .lr = LrSchedule::constant(1e-3, 10),
             .progress = false});
  double loss = 0, first = 0;
  int steps = 0;
  while (steps < 200) {
    loss = t.step(batch).loss;
    if (steps == 0) first = loss;
    ++steps;
    if (loss < 0.01) break;
  }
  INFO("loss " << loss << " after " << steps << " steps (dropout on); first step " << first);
  // It starts from chance (two classes: ln 2), so the fit is learnt, not initial.
  CHECK(std::abs(first - std::log(2.0)) < 0.2);
  CHECK(loss < 0.01);
}

// Rows where each id is the previous one plus one (cycling through 4..53) from a random
// start: an id is known from either neighbour, never from its own frequency (all are equal).
data::EncodedTexts counting_rows(std::size_t n, std::size_t len, std::uint64_t seed) {
  data::EncodedTexts d;
  for (std::uint64_t i = 0; i < n; ++i) {
    auto id = static_cast<std::int32_t>(random::uniform(seed, 1, 2, i) * 50);
    std::vector<std::int32_t> row;
    for (std::size_t k = 0; k < len; ++k) row.push_back(4 + (id++ % 50));
    d.ids.push_back(row);
    d.labels.push_back(0);
  }
  return d;
}

TEST_CASE("masked-LM batches: 15% of the real tokens, 80/10/10, targets where they were",
          "[train_app][mlm]") {
  data::EncodedTexts d = counting_rows(64, 40, 7);
  for (std::size_t i = 0; i < 64; i += 2) d.ids[i].resize(25);  // padding in half the rows
  std::vector<std::size_t> rows(64);
  for (std::size_t i = 0; i < 64; ++i) rows[i] = i;
  const Batch b = mlm_batch(d, rows, {}, kMaskProb, 54, 3, 0);
  const Array& ids = b.inputs.at("ids");
  const Array& keep = b.inputs.at("keep");
  const Array& where = b.inputs.at("where");
  const Array& targets = b.inputs.at("targets");
  REQUIRE(ids.dim(1) == 40);
  CHECK(where.numel() % 64 == 0);
  std::vector<bool> picked(static_cast<std::size_t>(ids.numel()), false);
  int real = 0, unk = 0, same = 0;
  for (std::int64_t j = 0; j < where.numel(); ++j) {
    const auto at = static_cast<std::int64_t>(where.at(j));
    if (targets.at(j) == -100) {
      CHECK(at == 0);  // padding of the target list
      continue;
    }
    ++real;
    REQUIRE(keep.at(at) == 1);  // never a padded position
    const auto r = static_cast<std::size_t>(at / 40), k = static_cast<std::size_t>(at % 40);
    CHECK(targets.at(j) == d.ids[r][k]);  // the original id
    picked[static_cast<std::size_t>(at)] = true;
    unk += ids.at(at) == data::kUnkId;
    same += ids.at(at) == d.ids[r][k];
    CHECK(ids.at(at) >= (ids.at(at) == data::kUnkId ? 1 : 4));
    CHECK(ids.at(at) < 54);
  }
  CHECK(b.weight == real);
  // Tokens not picked are untouched.
  for (std::int64_t at = 0; at < ids.numel(); ++at)
    if (keep.at(at) == 1 && !picked[static_cast<std::size_t>(at)])
      CHECK(ids.at(at) ==
            d.ids[static_cast<std::size_t>(at / 40)][static_cast<std::size_t>(at % 40)]);
  // 32 * 40 + 32 * 25 = 2,080 real tokens; a binomial share of 0.15 has sd 0.008 here.
  const double share = real / 2080.0;
  INFO("picked " << real << ", <unk> " << unk << ", unchanged " << same);
  CHECK(share > 0.12);
  CHECK(share < 0.18);
  CHECK(unk > 0.7 * real);
  CHECK(unk < 0.9 * real);
  CHECK(same > 0.03 * real);  // 10% kept (plus a random id that happens to be the same)
  CHECK(same < 0.2 * real);
  // The same (seed, epoch) masks the same tokens; another epoch masks others.
  const Batch again = mlm_batch(d, rows, {}, kMaskProb, 54, 3, 0);
  const Array& w2 = again.inputs.at("where");
  REQUIRE(w2.numel() == where.numel());
  for (std::int64_t j = 0; j < where.numel(); ++j) CHECK(w2.at(j) == where.at(j));
  const Batch other = mlm_batch(d, rows, {}, kMaskProb, 54, 3, 1);
  const Array& w3 = other.inputs.at("where");
  bool differs = w3.numel() != where.numel();
  for (std::int64_t j = 0; !differs && j < where.numel(); ++j) differs = w3.at(j) != where.at(j);
  CHECK(differs);
}

constexpr ClassifierConfig kTinyMlm{.vocab = 54,
                                    .max_len = 16,
                                    .d_model = 32,
                                    .heads = 2,
                                    .d_ff = 64,
                                    .layers = 1,
                                    .classes = 2,
                                    .dropout = 0.0,
                                    .pre_norm = true};
constexpr auto tiny_mlm = model([](Builder& g) { return classifier_mlm<kTinyMlm>(g); });

TEST_CASE("a masked LM trained on these batches predicts ids from their neighbours",
          "[train_app][mlm]") {
  const data::EncodedTexts train = counting_rows(512, 16, 11), held = counting_rows(128, 16, 12);
  std::vector<std::size_t> all(128);
  for (std::size_t i = 0; i < 128; ++i) all[i] = i;
  const Batch test = mlm_batch(held, all, {}, kMaskProb, 54, 5, 0);
  Trainer t(training_graphs<tiny_mlm, AdamW{.hparams_as_inputs = true}, false>(),
            {.session = {.threads = 2, .seed = 2},
             .lr = LrSchedule::constant(3e-3, 20),
             .progress = false});
  const double before = t.evaluate(std::span<const Batch>(&test, 1)).accuracy;
  for (std::int64_t step = 0; step < 400; ++step) {
    std::vector<std::size_t> rows;
    for (std::size_t i = 0; i < 32; ++i)
      rows.push_back((static_cast<std::size_t>(step) * 32 + i) % 512);
    t.step(mlm_batch(train, rows, {}, kMaskProb, 54, 1, step));
  }
  const EvalStats after = t.evaluate(std::span<const Batch>(&test, 1));
  INFO("held-out masked accuracy " << before << " -> " << after.accuracy << ", loss "
                                   << after.loss);
  // Frequencies alone give 1 in 50; the neighbours give the id.
  CHECK(before < 0.1);
  CHECK(after.accuracy > 0.9);
}

TEST_CASE("bag-of-words words: lower case, apostrophes kept, CJK characters alone", "[train_app]") {
  CHECK(bow_words("Don't STOP, 2 go!") == std::vector<std::string>{"don't", "stop", "2", "go"});
  CHECK(bow_words("über Café") == std::vector<std::string>{"über", "café"});
  CHECK(bow_words("学而时习之 ok") == std::vector<std::string>{"学", "而", "时", "习", "之", "ok"});
}

TEST_CASE("the bag-of-words baseline separates words that decide the label", "[train_app]") {
  // "good" means 1 and "bad" means 0, whatever else the text holds.
  const std::vector<std::string> train = {"good film", "bad film",    "good food",
                                          "bad food",  "really good", "really bad"};
  const std::vector<std::int32_t> labels = {1, 0, 1, 0, 1, 0};
  const std::vector<std::string> val = {"good day", "bad day"},
                                 test = {"bad film really", "food good"};
  const BowResult r = bow_baseline(train, labels, val, {1, 0}, test, {0, 1}, 2);
  CHECK(r.features == 5);  // good, bad, film, food, really ("day" is not in training)
  CHECK(r.train_accuracy == 1.0);
  CHECK(r.val_accuracy == 1.0);
  CHECK(r.test_accuracy == 1.0);
}

TEST_CASE("run options reflect into flags and JSON and back", "[train_app]") {
  RunOptions o = defaults_for(Task::classify);
  CLI::App app;
  add_flags(app, o, &help_for);
  const char* argv[] = {"x",           "--batch-size",  "7",     "--lr", "0.5",
                        "--no-bucket", "--lr-schedule", "linear"};
  app.parse(8, const_cast<char**>(argv));
  CHECK(o.batch_size == 7);
  CHECK(o.lr == 0.5);
  CHECK_FALSE(o.bucket);
  CHECK(o.lr_schedule == "linear");
  const nlohmann::ordered_json j = to_json(o);
  CHECK(j.at("batch_size") == 7);
  CHECK(j.begin().key() == "data");  // declaration order
  RunOptions back = defaults_for(Task::lm);
  from_json(nlohmann::json::parse(j.dump()), back);
  CHECK(to_json(back) == j);
  for (auto it = j.begin(); it != j.end(); ++it) {
    INFO(it.key());
    CHECK(std::string(help_for(it.key())).size() > 10);  // every flag has help
  }
  CHECK(to_json(kClassifyBase).at("d_model") == 128);
}

TEST_CASE("bad flag values are refused with the flag's name", "[train_app]") {
  RunOptions o = defaults_for(Task::g2p);
  o.data = "sentiment";
  CHECK_THROWS_WITH(validate(o, Task::g2p),
                    Catch::Contains("--data: 'sentiment' is not one of cmudict"));
  o = defaults_for(Task::classify);
  o.min_lr = 1.0;
  CHECK_THROWS_WITH(validate(o, Task::classify), Catch::Contains("--min-lr"));
}

TEST_CASE("the run's tokenizer survives the checkpoint's JSON", "[train_app]") {
  const std::vector<std::string> texts = {"hello world", "hello there", "world of words"};
  for (const char* kind : {"char", "bpe"}) {
    const TextTokenizer t = TextTokenizer::learn(kind, texts, 300, 280);
    const TextTokenizer back = TextTokenizer::from_json(nlohmann::json::parse(t.to_json().dump()));
    CHECK(back.encode("hello words") == t.encode("hello words"));
    CHECK(back.vocab_size() == t.vocab_size());
    double chars = 0;
    for (std::int32_t id : t.encode("héllo")) chars += t.chars_of(id);
    CHECK(chars == 5);  // é is one character even when BPE splits its two bytes
  }
}

// The message of the stag::Error `fn` throws ("" for none); any other exception fails the test.
std::string stag_error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST_CASE("negative counts and values a preset cannot hold are refused by flag",
          "[train_app][reliability]") {
  // Each of these used to be accepted: --max-steps -5 trained nothing and exited 0.
  const std::pair<std::function<void(RunOptions&)>, std::string> cases[] = {
      {[](RunOptions& o) { o.max_steps = -5; }, "--max-steps: -5 is negative"},
      {[](RunOptions& o) { o.checkpoint_every = -1; }, "--checkpoint-every: -1 is negative"},
      {[](RunOptions& o) { o.eval_every = -2; }, "--eval-every: -2 is negative"},
      {[](RunOptions& o) { o.max_seconds = -1; }, "--max-seconds: must not be negative"}};
  for (const auto& [edit, want] : cases) {
    RunOptions o = defaults_for(Task::lm);
    edit(o);
    CHECK_THAT(stag_error_of([&] { validate(o, Task::lm); }), Catch::Contains(want));
  }
  // --bpe-vocab above the preset's vocabulary was clamped to it silently.
  const std::vector<std::string> texts = {"hello world", "hello there"};
  CHECK_THAT(stag_error_of([&] { TextTokenizer::learn("bpe", texts, 2048, 100000); }),
             Catch::Contains("--bpe-vocab 100000 is above the 2048 ids"));
}

TEST_CASE("a checkpoint's tokenizer with wrongly typed fields is a stag::Error",
          "[train_app][reliability]") {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"kind": 5, "tokenizer": {}})", "no \"kind\" string"},
      {R"({"kind": "char"})", "no \"tokenizer\" object"},
      {R"({"kind": "word", "tokenizer": {"words": [1, 2]}})", "no \"words\" list of strings"},
      {R"({"kind": "char", "tokenizer": {"type": "char", "version": "1"}})",
       R"("version" is "1")"}};
  // No structured binding: clang 14 cannot capture one in a lambda.
  for (const auto& c : cases) {
    const char* json = c.first;
    INFO(json);
    CHECK_THAT(stag_error_of([&] { TextTokenizer::from_json(nlohmann::json::parse(json)); }),
               Catch::Contains(c.second));
  }
}

TEST_CASE("resuming with flags that change the batches is refused, naming both values",
          "[train_app][reliability]") {
  RunOptions saved = defaults_for(Task::lm);
  saved.batch_size = 1;
  saved.limit = 200;
  const nlohmann::json config = {{"run", to_json(saved)}};
  RunOptions o = saved;
  o.max_steps = 50;  // a longer run is fine
  check_resume_flags("runs/h/model.safetensors", config, o);
  o.batch_size = 64;
  o.limit = 100;
  CHECK(stag_error_of([&] { check_resume_flags("runs/h/model.safetensors", config, o); }) ==
        "stag-train: --resume runs/h/model.safetensors: --limit 100 (the checkpoint's run had "
        "200), --batch-size 64 (the checkpoint's run had 1): a resumed run must see the same "
        "batches as the run it continues. Resume with the checkpoint's values, or start a new run "
        "in another --out");
}

}  // namespace

TEST_CASE("precision auto: bf16 only where the CPU has it natively and the preset compiles it",
          "[train_app]") {
  CHECK(resolve_precision("auto", true, true) == "bf16");
  CHECK(resolve_precision("auto", false, true) == "f32");    // AVX2, or AVX-512 without BF16
  CHECK(resolve_precision("auto", true, false) == "f32");    // a preset without bf16 graphs
  CHECK(resolve_precision("bf16", false, false) == "bf16");  // asked for: kept (and refused
  CHECK(resolve_precision("f32", true, true) == "f32");      // later, by name, if not compiled)
  // Every task's default is compiled in bf16, and every g2p preset.
  for (const Task t : {Task::classify, Task::lm, Task::g2p, Task::seq2seq})
    CHECK(compiles_bf16(t, defaults_for(t).model));
  CHECK(compiles_bf16(Task::g2p, "base"));
  CHECK(!compiles_bf16(Task::classify, "base"));
  CHECK(!compiles_bf16(Task::lm, "small-bpe"));
  CHECK(bf16_presets_text() ==
        "classify's 'pre'; lm's 'small'; g2p's 'small' and 'base'; seq2seq's 'small'");
  RunOptions o = defaults_for(Task::g2p);
  o.precision = "auto";
  CHECK_NOTHROW(validate(o, Task::g2p));
  o.precision = "fp16";
  CHECK_THAT(stag_error_of([&] { validate(o, Task::g2p); }), Catch::Contains("precision"));
}
