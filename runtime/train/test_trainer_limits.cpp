// stag::Trainer at its limits: a NaN loss, bad checkpoints, ids and labels, pretrained encoders
// loaded by name, refused settings and data positions, warnings, saves of out-of-range weights,
// time boxes, an unwritable checkpoint, bf16 weights, memory budgets and updates in the backward
// pass. The basics: test_trainer.cpp.
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <thread>

#include <stag/models/data/batch.hpp>
#include <stag/runtime/train/trainer.hpp>

#include "harness.hpp"
#include "test_files.hpp"
#include "trainer_fixtures.hpp"

namespace {
using namespace stag;
using namespace trainer_fixtures;

// A regression with a float input, so a NaN can come from the data.
constexpr auto regress = model([](Builder& g) {
  auto x = input<"x", Shape<dims::batch, 3>>(g);
  auto y = input<"y", Shape<dims::batch, 1>>(g);
  auto pred = linear<1>(g / "lin", x);
  return mean<0, 1>((pred - y) * (pred - y));
});

NamedArrays regress_batch(float first) {
  return {{"x", Array::from<float>({2, 3}, {first, 1.f, 2.f, -1.f, 0.5f, 0.25f})},
          {"y", Array::from<float>({2, 1}, {1.f, -1.f})}};
}

TEST_CASE("a NaN loss stops training with the step's number and leaves the parameters alone",
          "[trainer]") {
  Trainer t(training_graphs<regress, kOpt, false>(), options(1));
  t.step(regress_batch(0.5f));
  NamedArrays before;
  for (const auto& [k, v] : t.params()) before.emplace(k, v.clone());
  try {
    t.step(regress_batch(std::nanf("")));
    FAIL("no exception");
  } catch (const NonFiniteLoss& e) {
    CHECK(e.step == 2);
    CHECK_THAT(e.what(), Catch::Contains("step 2: the loss is nan") &&
                             Catch::Contains("parameters are those after step 1"));
  }
  CHECK(t.steps_done() == 1);
  for (const auto& [k, v] : t.params()) {
    INFO(k);
    CHECK(std::memcmp(v.raw(), before.at(k).raw(), v.bytes()) == 0);
  }
  // With the skip policy the run goes on and counts the bad step.
  TrainerOptions o = options(1);
  o.on_nonfinite = NonFinitePolicy::skip;
  Trainer s(training_graphs<regress, kOpt, false>(), o);
  CHECK(s.step(regress_batch(std::nanf(""))).skipped);
  CHECK_FALSE(s.step(regress_batch(0.5f)).skipped);
  CHECK(s.skipped_steps() == 1);
  CHECK(s.steps_done() == 2);
}

// The same regression on 4 features: its "lin.weight" is [1, 4] where regress has [1, 3].
constexpr auto regress4 = model([](Builder& g) {
  auto x = input<"x", Shape<dims::batch, 4>>(g);
  auto y = input<"y", Shape<dims::batch, 1>>(g);
  auto pred = linear<1>(g / "lin", x);
  return mean<0, 1>((pred - y) * (pred - y));
});

NamedArrays copy_params(const Trainer& t) {
  NamedArrays out;
  for (const auto& [k, v] : t.params()) out.emplace(k, v.clone());
  return out;
}

void require_unchanged(const Trainer& t, const NamedArrays& before) {
  for (const auto& [k, v] : t.params()) {
    INFO(k);
    REQUIRE(std::memcmp(v.raw(), before.at(k).raw(), v.bytes()) == 0);
  }
}

TEST_CASE(
    "a checkpoint of another shape or a truncated one is an error naming the tensor; the "
    "trainer keeps its weights",
    "[trainer]") {
  const th::TempDir dir("trainer_bad_ckpt");
  const std::string path = dir / "three.safetensors";
  Trainer three(training_graphs<regress, kOpt, false>(), options(1));
  three.step(regress_batch(0.5f));
  three.save(path);

  Trainer four(training_graphs<regress4, kOpt, false>(), options(1));
  const NamedArrays before = copy_params(four);
  // Parameters and their AdamW moments share the shape; whichever is checked first is named.
  const std::string shape_error = th::error_of([&] { four.resume(path); });
  CHECK_THAT(shape_error, Catch::Contains("tensor 'lin.weight") &&
                              Catch::Contains("has shape [1, 3], the model expects [1, 4]"));
  CHECK_THAT(th::error_of([&] { four.load_weights(path); }),
             Catch::Contains("has shape [1, 3], the model expects [1, 4]"));
  require_unchanged(four, before);
  CHECK(four.steps_done() == 0);

  // The file cut in the middle of its data section.
  std::vector<std::uint8_t> bytes = th::read_bytes(path);
  bytes.resize(bytes.size() - 10);
  const std::string cut = dir / "cut.safetensors";
  th::write_bytes(cut, bytes);
  Trainer again(training_graphs<regress, kOpt, false>(), options(1));
  const NamedArrays fresh = copy_params(again);
  const std::string trunc_error = th::error_of([&] { again.resume(cut); });
  CHECK_THAT(trunc_error, Catch::Contains(cut) && Catch::Contains("tensor '") &&
                              Catch::Contains("is the file truncated?"));
  require_unchanged(again, fresh);
  // The intact file still loads into the right model.
  again.resume(path);
  CHECK(again.steps_done() == 1);
}

constexpr ClassifierConfig kPre{.vocab = 20,
                                .max_len = 12,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .layers = 1,
                                .classes = 3,
                                .dropout = 0.0,
                                .pre_norm = true};
// The same with a larger vocabulary: its "tok.weight" is [24, 16] where kPre's is [20, 16].
constexpr ClassifierConfig kPreWide = [] {
  ClassifierConfig c = kPre;
  c.vocab = 24;
  return c;
}();
constexpr auto pre_net = model([](Builder& g) { return classifier<kPre>(g); });
constexpr auto pre_mlm = model([](Builder& g) { return classifier_mlm<kPre>(g); });
constexpr auto wide_net = model([](Builder& g) { return classifier<kPreWide>(g); });

TEST_CASE(
    "init_from loads a pretrained encoder's parameters by name and nothing else; another "
    "shape or another model is an error",
    "[trainer]") {
  const th::TempDir dir("trainer_init_from");
  const std::string path = dir / "mlm.safetensors";
  const data::EncodedTexts d = make_rows(4, 31);
  NamedArrays mlm_in = data::make_class_batch(d, std::vector<std::size_t>{0, 1, 2, 3}).inputs();
  mlm_in.erase("label");
  const std::int64_t s = mlm_in.at("ids").dim(1);
  mlm_in.emplace("where", Array::from<std::int32_t>({2}, {1, static_cast<std::int32_t>(s)}));
  mlm_in.emplace("targets", Array::from<std::int32_t>({2}, {5, 7}));
  Trainer mlm(training_graphs<pre_mlm, kOpt, false>(), options(5));
  for (int i = 0; i < 3; ++i) mlm.step(mlm_in);
  mlm.save(path);

  Trainer cls(training_graphs<pre_net, kOpt, false>(), options(1));
  const NamedArrays fresh = copy_params(cls);
  const std::vector<std::string> loaded = cls.init_from(path);
  // Every classifier parameter but the head's; the MLM graph has no parameter of its own.
  std::vector<std::string> expected;
  for (const auto& [k, v] : fresh)
    if (k.find(".adam_") == std::string::npos && k.rfind("head.", 0) != 0) expected.push_back(k);
  CHECK(loaded == expected);
  CHECK(loaded.size() > 5);
  for (const auto& [k, v] : cls.params()) {
    INFO(k);
    const Array& want = std::find(loaded.begin(), loaded.end(), k) != loaded.end()
                            ? mlm.params().at(k)
                            : fresh.at(k);  // the head, and every optimizer moment
    CHECK(std::memcmp(v.raw(), want.raw(), v.bytes()) == 0);
  }
  // The pretrained weights really differ from the classifier's own initial values.
  CHECK(std::memcmp(fresh.at("tok.weight").raw(), mlm.params().at("tok.weight").raw(),
                    fresh.at("tok.weight").bytes()) != 0);
  CHECK(cls.steps_done() == 0);
  cls.step(batch_of(d, {0, 1, 2, 3}));

  Trainer wide(training_graphs<wide_net, kOpt, false>(), options(1));
  const NamedArrays wide_before = copy_params(wide);
  CHECK_THAT(th::error_of([&] { wide.init_from(path); }),
             Catch::Contains("tensor 'tok.weight' has shape [20, 16], the model expects [24, 16]"));
  require_unchanged(wide, wide_before);

  Trainer other(training_graphs<regress, kOpt, false>(), options(1));
  CHECK_THAT(th::error_of([&] { other.init_from(path); }),
             Catch::Contains("has no parameter of this model"));
}

TEST_CASE(
    "a token id outside the vocabulary or a label outside the classes is an error, and "
    "training goes on after it",
    "[trainer]") {
  const data::EncodedTexts d = make_rows(8, 21);
  Trainer t(training_graphs<drop_net, kOpt, false>(), options(3));
  t.step(batch_of(d, {0, 1, 2, 3}));
  const NamedArrays before = copy_params(t);

  data::EncodedTexts bad_id = d;
  bad_id.ids[2][1] = 20;  // the vocabulary is 0..19
  const std::string id_error = th::error_of([&] { t.step(batch_of(bad_id, {0, 1, 2, 3})); });
  CHECK_THAT(id_error, Catch::Contains("embedding") &&
                           Catch::Contains("token id 20 at [2, 1] is outside [0, 20)"));
  data::EncodedTexts bad_label = d;
  bad_label.labels[3] = 3;  // three classes: 0..2
  const std::string label_error = th::error_of([&] { t.step(batch_of(bad_label, {0, 1, 2, 3})); });
  CHECK_THAT(label_error, Catch::Contains("label 3") && Catch::Contains("outside [0, 3)"));
  CHECK_THAT(th::error_of([&] { t.evaluate(std::vector<Batch>{batch_of(bad_id, {2})}); }),
             Catch::Contains("token id 20 at [0, 1] is outside [0, 20)"));
  require_unchanged(t, before);
  CHECK(t.steps_done() == 1);
  // Nothing was half-applied: the next good step is the one an undisturbed trainer takes.
  Trainer ref(training_graphs<drop_net, kOpt, false>(), options(3));
  ref.step(batch_of(d, {0, 1, 2, 3}));
  const double a = t.step(batch_of(d, {4, 5, 6, 7})).loss;
  const double b = ref.step(batch_of(d, {4, 5, 6, 7})).loss;
  CHECK(std::memcmp(&a, &b, sizeof a) == 0);
}

TEST_CASE("fit: max_steps with unbounded epochs stops there; an empty data source is an error",
          "[trainer]") {
  const data::EncodedTexts d = make_rows(12, 5);
  Trainer t(training_graphs<drop_net, kOpt, false>(), options(2));
  // 12 rows in batches of 4: 3 steps per epoch, so 7 steps end one step into the third epoch.
  t.fit(source_of(d, 4, 2), {.epochs = std::int64_t{1} << 40, .max_steps = 7});
  CHECK(t.steps_done() == 7);
  CHECK(t.epoch() == 2);
  CHECK(t.batch_in_epoch() == 1);
  const data::EncodedTexts none;
  Trainer e(training_graphs<drop_net, kOpt, false>(), options(2));
  CHECK_THROWS_WITH(e.fit(source_of(none, 4, 2), {.epochs = 3}),
                    Catch::Contains("epoch 0 has no batches"));
}

TEST_CASE("optimizer settings compiled into the graph cannot be overridden silently", "[trainer]") {
  TrainerOptions o = options(1);
  o.optimizer = OptimizerSettings{.weight_decay = 0.5};
  CHECK_THROWS_WITH((Trainer(training_graphs<regress, AdamW{}, false>(), o)),
                    Catch::Contains("hparams_as_inputs"));
  CHECK_THROWS_WITH(
      Trainer(training_graphs<regress, kOpt, false>(), options(1)).step(std::vector<Batch>(2)),
      Catch::Contains("no accumulation graphs"));
}

// ---- What a run can be trusted with (issue 14) ------------------------------------------------

TEST_CASE("fit refuses a data position past the end of the epoch instead of spinning forever",
          "[trainer][reliability]") {
  const th::TempDir dir("trainer_past_epoch");
  const data::EncodedTexts d = make_rows(40, 3);
  {  // 40 rows in batches of 2: 20 batches per epoch; stop at batch 12.
    Trainer t(training_graphs<drop_net, kOpt, false>(), options(4));
    t.fit(source_of(d, 2, 4), {.epochs = 1,
                               .checkpoint_path = dir / "c.safetensors",
                               .checkpoint_every = 12,
                               .stop_after = 12});
    REQUIRE(t.batch_in_epoch() == 12);
  }
  // Resumed with batches of 8 (5 per epoch): batch 12 does not exist. Before the fix the loop
  // took no step and never ended the epoch.
  Trainer t(training_graphs<drop_net, kOpt, false>(), options(4));
  t.resume(dir / "c.safetensors");
  const std::string e = th::error_of([&] { t.fit(source_of(d, 8, 4), {.epochs = 2}); });
  CHECK_THAT(e, Catch::Contains("data position (batch 12 of epoch 0) is past the 5 batches") &&
                    Catch::Contains("another batch size"));
  CHECK(t.steps_done() == 12);
  // A negative position in the file is refused at load.
  save_checkpoint(dir / "neg.safetensors", t.params(),
                  {.step = 3, .seed = 4, .extra = {{"batch", "-1"}}}, "{}");
  CHECK_THAT(th::error_of([&] { t.resume(dir / "neg.safetensors"); }),
             Catch::Contains("extra.batch is -1") && Catch::Contains("cannot be negative"));
  // So are negative counts in FitOptions.
  CHECK_THAT(th::error_of([&] { t.fit(source_of(d, 2, 4), {.max_steps = -5}); }),
             Catch::Contains("FitOptions::max_steps is -5"));
  CHECK_THAT(th::error_of([&] { t.fit(source_of(d, 2, 4), {.checkpoint_every = -1}); }),
             Catch::Contains("FitOptions::checkpoint_every is -1"));
}

TEST_CASE("a user loop keeps its data position in metrics and checkpoints",
          "[trainer][reliability]") {
  const th::TempDir dir("trainer_user_loop");
  const data::EncodedTexts d = make_rows(24, 5);
  const DataSource src = source_of(d, 8, 6);  // 3 batches per epoch
  {
    Trainer t(training_graphs<drop_net, kOpt, false>(), options(6, dir / "m.jsonl"));
    for (std::size_t i = 0; i < src.num_batches(0); ++i) t.step(src.batch(0, i));
    t.end_epoch();
    t.step(src.batch(1, 0));
    t.step(src.batch(1, 1));
    CHECK(t.epoch() == 1);
    CHECK(t.batch_in_epoch() == 2);
    t.save(dir / "c.safetensors");
  }
  const CheckpointInfo info = read_checkpoint_info(dir / "c.safetensors");
  CHECK(info.state.epoch == 1);
  CHECK(info.state.extra.at("batch") == "2");
  const std::vector<MetricsRecord> lines = read_metrics(dir / "m.jsonl");
  REQUIRE(lines.size() == 5);
  CHECK(lines[2].epoch == 0);
  CHECK(lines[3].epoch == 1);
  // resume() restores the position, and fit() continues from it: the next step is batch 2 of
  // epoch 1, as an uninterrupted loop would take.
  Trainer t(training_graphs<drop_net, kOpt, false>(), options(6));
  t.resume(dir / "c.safetensors");
  CHECK(t.epoch() == 1);
  CHECK(t.batch_in_epoch() == 2);
  t.fit(src, {.epochs = 2});
  CHECK(t.steps_done() == 6);
  CHECK(t.epoch() == 2);
}

TEST_CASE("a batch with no label that counts and an empty keep row are warned about once",
          "[trainer][reliability]") {
  const data::EncodedTexts d = make_rows(8, 9);
  Trainer t(training_graphs<drop_net, kOpt, false>(), options(1));
  Batch b = batch_of(d, {0, 1, 2, 3});
  t.step(b);
  CHECK(t.warnings().empty());
  Batch ignored = b;
  ignored.inputs["label"] = Array::from<std::int32_t>({4}, {-100, -100, -100, -100});
  const StepStats st = t.step(ignored);
  CHECK(st.loss == 0);  // what nothing else would have noticed
  t.step(ignored);
  REQUIRE(t.warnings().size() == 1);
  CHECK_THAT(t.warnings()[0], Catch::Contains("step 2: the batch has no label that counts"));
  Batch empty_row = b;
  Array keep = b.inputs.at("keep").clone();
  for (std::int64_t k = 0; k < keep.dim(1); ++k) keep.set(2 * keep.dim(1) + k, 0);
  empty_row.inputs["keep"] = keep;
  t.step(empty_row);
  t.step(empty_row);
  REQUIRE(t.warnings().size() == 2);
  CHECK_THAT(t.warnings()[1],
             Catch::Contains("row 2 of 'keep'") && Catch::Contains("keeps no position"));
}

TEST_CASE("save never writes NaN weights and says when weights left a sane range",
          "[trainer][reliability]") {
  const th::TempDir dir("trainer_finite");
  const std::string path = dir / "c.safetensors";
  Trainer t(training_graphs<regress, kOpt, false>(), options(1));
  t.step(regress_batch(0.5f));
  t.save(path);
  CHECK(t.warnings().empty());
  const std::vector<std::uint8_t> good = th::read_bytes(path);
  Array w = t.params().at("lin.weight");  // shares the trainer's storage
  const double kept = w.at(1);
  w.set(1, std::nan(""));
  CHECK_THAT(th::error_of([&] { t.save(path); }), Catch::Contains(path + " not written") &&
                                                      Catch::Contains("'lin.weight'") &&
                                                      Catch::Contains("nan at element 1"));
  CHECK(th::read_bytes(path) == good);  // the last good checkpoint is still there
  // Finite but far out of range (what --lr 1e9 leaves): saved, marked and warned about.
  w.set(1, 3e9);
  t.save(path);
  REQUIRE(t.warnings().size() == 1);
  CHECK_THAT(t.warnings()[0], Catch::Contains("'lin.weight' reaches |w| = 3.000e+09") &&
                                  Catch::Contains("diverged"));
  CHECK(read_checkpoint_info(path).state.extra.count("weights_out_of_range") == 1);
  w.set(1, kept);
  // A file with a NaN is refused at load unless allowed.
  NamedArrays bad;
  for (const auto& [k, v] : t.params()) bad.emplace(k, v.clone());
  bad.at("lin.bias").set(0, std::numeric_limits<double>::infinity());
  save_checkpoint(dir / "inf.safetensors", bad, {.seed = 1}, "{}");
  Trainer u(training_graphs<regress, kOpt, false>(), options(1));
  CHECK_THAT(th::error_of([&] { u.resume(dir / "inf.safetensors"); }),
             Catch::Contains("'lin.bias' (inf at element 0)") &&
                 Catch::Contains("allow_nonfinite (--allow-nonfinite)"));
  TrainerOptions o = options(1);
  o.allow_nonfinite = true;
  Trainer v(training_graphs<regress, kOpt, false>(), o);
  v.resume(dir / "inf.safetensors");
  CHECK(std::isinf(v.params().at("lin.bias").at(0)));
}

TEST_CASE("a time-boxed fit stops in time and fits its schedule to the steps it can take",
          "[trainer][reliability]") {
  const th::TempDir dir("trainer_time_box");
  const data::EncodedTexts d = make_rows(16, 2);
  TrainerOptions o = options(3);
  o.lr = LrSchedule::cosine(1e-3, 2, 1000000);
  Trainer t(training_graphs<drop_net, kOpt, false>(), o);
  const auto t0 = std::chrono::steady_clock::now();
  t.fit(source_of(d, 4, 3), {.epochs = std::int64_t{1} << 40,
                             .checkpoint_path = dir / "c.safetensors",
                             .max_seconds = 1.0,
                             .plan_steps = 5});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO("steps " << t.steps_done() << " in " << took << " s; schedule "
                << t.options().lr.describe());
  CHECK(t.steps_done() >= 5);
  CHECK(took < 10);
  // The schedule now ends about where the time box does, not at step 1,000,000.
  CHECK(t.options().lr.total() < 100000);
  CHECK(t.options().lr.total() >= 5);
  const CheckpointInfo info = read_checkpoint_info(dir / "c.safetensors");
  CHECK(info.state.step == t.steps_done());  // saved at the end, as a finished run is
  CHECK(info.state.extra.at("lr_total") == std::to_string(t.options().lr.total()));
  // A resumed run continues on the shortened schedule.
  Trainer r(training_graphs<drop_net, kOpt, false>(), o);
  r.resume(dir / "c.safetensors");
  CHECK(r.options().lr.total() == t.options().lr.total());
}

// Batches of 4 rows, the n-th (from 0) taking `delay(n)` to make.
DataSource delayed_source(const data::EncodedTexts& d,
                          std::function<std::chrono::milliseconds(int)> delay) {
  DataSource src = source_of(d, 4, 3);
  auto calls = std::make_shared<int>(0);
  src.batch = [calls, delay, batch = src.batch](std::int64_t e, std::size_t i) {
    std::this_thread::sleep_for(delay((*calls)++));
    return batch(e, i);
  };
  return src;
}

// The first 5 batches take 100 ms each to make (as plans for new shapes do), the rest next to
// no time: a time box's first fit sees 10 steps per second.
DataSource slow_start_source(const data::EncodedTexts& d) {
  return delayed_source(d, [](int n) { return std::chrono::milliseconds(n < 5 ? 100 : 0); });
}

TEST_CASE("a time box fitted on slow first steps is fitted again before the warmup ends",
          "[trainer][reliability]") {
  const data::EncodedTexts d = make_rows(16, 2);
  TrainerOptions o = options(3);
  o.lr = LrSchedule::cosine(1e-3, 60, 1000000);  // still warming up at step 50
  Trainer t(training_graphs<drop_net, kOpt, false>(), o);
  // The first 5 batches take 100 ms each (as plans for new shapes do), the rest no time: the
  // estimate after 5 steps is about 5 + 10 steps/s * 2.5 s (so the warmup's 61 steps), the one
  // after 50 far more.
  const DataSource src = slow_start_source(d);
  t.fit(src, {.epochs = std::int64_t{1} << 40, .max_seconds = 3.0, .plan_steps = 5});
  INFO("steps " << t.steps_done() << "; schedule " << t.options().lr.describe());
  // Fitted once, the schedule would end at the warmup's 61 steps, however many the run takes
  // (the first estimate is at most 5 + 10 steps/s * 2.5 s). How close the refit comes to the
  // steps actually taken depends on the machine's speed, so it is not checked here: under
  // ctest -j2 the steps after the refit ran twice as fast as those it measured.
  CHECK(t.options().lr.total() > 61);
  CHECK(t.options().lr.total() <= 1000000);
}

TEST_CASE("a time-boxed fit ends with its fitted schedule when the steps run faster than fitted",
          "[trainer][reliability]") {
  const data::EncodedTexts d = make_rows(16, 2);
  TrainerOptions o = options(3);
  o.lr = LrSchedule::cosine(1e-3, 2, 1000000);
  Trainer t(training_graphs<drop_net, kOpt, false>(), o);
  // The first 5 batches take 100 ms each, the rest next to no time: the fit after 5 steps
  // (no second one: the warmup is over) plans about 5 + 10 steps/s * 4.5 s = 50 steps, which
  // the fast steps finish long before the box ends. Before the fix the run went on at the
  // cosine's floor, learning rate 0, for thousands of steps until the box was full.
  const DataSource src = slow_start_source(d);
  t.fit(src, {.epochs = std::int64_t{1} << 40, .max_seconds = 5.0, .plan_steps = 5});
  INFO("steps " << t.steps_done() << "; schedule " << t.options().lr.describe());
  CHECK(t.options().lr.total() < 1000000);
  CHECK(t.steps_done() <= t.options().lr.total());
  CHECK(t.steps_done() >= 5);
}

TEST_CASE("a time-boxed fit whose steps slow down refits its schedule to end with the box",
          "[trainer][reliability]") {
  const data::EncodedTexts d = make_rows(16, 2);
  TrainerOptions o = options(3);
  o.lr = LrSchedule::cosine(1e-3, 2, 1000000);
  Trainer t(training_graphs<drop_net, kOpt, false>(), o);
  // The first 40 batches take next to no time, the rest 20 ms each: the fit after 5 steps plans
  // thousands of steps, and about 40 + 50 steps/s * 3 s are taken. Fitted only then (before the
  // fix), the box ended at a few percent of the schedule, the learning rate near its peak.
  const DataSource src =
      delayed_source(d, [](int n) { return std::chrono::milliseconds(n < 40 ? 0 : 20); });
  t.fit(src, {.epochs = std::int64_t{1} << 40, .max_seconds = 3.0, .plan_steps = 5});
  const LrSchedule& lr = t.options().lr;
  INFO("steps " << t.steps_done() << "; schedule " << lr.describe());
  CHECK(t.steps_done() > 40);
  CHECK(t.steps_done() <= lr.total());
  // The last fit, at most a twentieth of the box (0.15 s, 8 slow steps) before its end, leaves
  // the schedule within a few steps of its end: the learning rate is near the cosine's floor.
  CHECK(lr.total() - t.steps_done() <= 20);
  CHECK(lr.at(t.steps_done()) < 0.05 * 1e-3);
}

TEST_CASE("fit checks before step 1 that its checkpoint can be written", "[trainer][reliability]") {
  const th::TempDir dir("trainer_preflight");
  th::write_bytes(dir / "file", {'x'});
  const data::EncodedTexts d = make_rows(16, 2);
  Trainer t(training_graphs<drop_net, kOpt, false>(), options(3));
  // The folder is a regular file: no save can succeed there. Before the fix the whole run
  // trained and failed at the end, losing the work.
  const std::string e = th::error_of([&] {
    t.fit(source_of(d, 4, 3), {.epochs = 2, .checkpoint_path = dir / "file/c.safetensors"});
  });
  CHECK_THAT(e, Catch::Contains(dir / "file/c.safetensors"));
  CHECK(t.steps_done() == 0);
}

}  // namespace

TEST_CASE("bf16 weights: half the file, read back by load_weights, refused by resume",
          "[trainer]") {
  const th::TempDir dir("trainer_bf16_export");
  const data::EncodedTexts d = make_rows(24, 12);
  Trainer t(training_graphs<nodrop_net, kOpt, false>(), options(3));
  t.fit(source_of(d, 8, 3), {.epochs = 1});
  const std::string full = dir / "model.safetensors", half = dir / "model.bf16.safetensors";
  t.save(full);
  t.save_weights(half, DType::bf16);
  // Parameters only (no optimizer moments), 2 bytes each.
  std::int64_t param_numel = 0;
  for (const auto& [name, a] : t.params())
    if (GraphView(nodrop_net).find(name) >= 0) param_numel += a.numel();
  const auto size = static_cast<std::int64_t>(std::filesystem::file_size(half));
  CHECK(size >= 2 * param_numel);
  CHECK(size < 2 * param_numel + 8192);
  CHECK(std::filesystem::file_size(full) > static_cast<std::uintmax_t>(3 * 4 * param_numel));
  // Read back into f32: each weight is its bf16 rounding.
  Trainer u(training_graphs<nodrop_net, kOpt, false>(), options(4));
  u.load_weights(half);
  int checked = 0;
  for (const auto& [name, a] : t.params()) {
    if (GraphView(nodrop_net).find(name) < 0) continue;
    const Array want = a.to(DType::bf16).to(DType::f32);
    INFO(name);
    CHECK(std::memcmp(u.params().at(name).raw(), want.raw(), want.bytes()) == 0);
    ++checked;
  }
  CHECK(checked > 5);
  // The evaluation of the rounded weights is close to that of the f32 ones.
  const std::vector<Batch> b = {batch_of(d, {0, 1, 2, 3, 4, 5, 6, 7})};
  CHECK(u.evaluate(b).loss == Approx(t.evaluate(b).loss).epsilon(2e-2));
  // Not a checkpoint to resume from: the error says what it is.
  Trainer r(training_graphs<nodrop_net, kOpt, false>(), options(3));
  CHECK_THROWS_WITH(r.resume(half), Catch::Contains("holds only the weights (bf16") &&
                                        Catch::Contains("--init-from"));
}

TEST_CASE("a memory budget changes the training step's arena, not its losses or weights",
          "[trainer][remat]") {
  const data::EncodedTexts d = make_rows(128, 11);
  const DataSource src = source_of(d, 32, 2);  // activations outweigh the kept gradients
  for (int accumulation : {1, 2}) {
    INFO("accumulation " << accumulation);
    // The batches' shapes differ (the longest row decides), and so do their natural arenas.
    auto run = [&](std::int64_t budget, std::vector<std::int64_t>* arenas,
                   std::vector<std::int64_t>* natural) {
      TrainerOptions o = options(5);
      o.session.memory_budget = budget;
      Trainer t(training_graphs<drop_net, kOpt>(), o);
      std::vector<double> losses;
      for (std::size_t i = 0; i + accumulation <= src.num_batches(0); i += accumulation) {
        std::vector<Batch> micro;
        for (int k = 0; k < accumulation; ++k) micro.push_back(src.batch(0, i + k));
        losses.push_back(t.step(micro).loss);
        arenas->push_back(t.step_plan()->arena_bytes());
        natural->push_back(budget > 0 ? t.step_plan()->recompute.natural_peak : arenas->back());
      }
      return std::pair{losses, t.params()};
    };
    std::vector<std::int64_t> plain_arenas, unused, tight_arenas, natural;
    const auto [plain_losses, plain_params] = run(0, &plain_arenas, &unused);
    // One layer: the peak is in its FFN's backward, which needs most of what it saved, so
    // recomputation can take about a fifth off (a deep model, half: test_remat.cpp).
    const std::int64_t budget =
        *std::max_element(plain_arenas.begin(), plain_arenas.end()) * 85 / 100;
    const auto [tight_losses, tight_params] = run(budget, &tight_arenas, &natural);
    REQUIRE(tight_losses.size() == plain_losses.size());
    int recomputed = 0;
    for (std::size_t i = 0; i < plain_losses.size(); ++i) {
      INFO("step " << i + 1 << ": natural arena " << natural[i] << ", budget " << budget);
      CHECK(natural[i] == plain_arenas[i]);
      CHECK(tight_arenas[i] <= budget);
      recomputed += plain_arenas[i] > budget;
      CHECK(std::memcmp(&plain_losses[i], &tight_losses[i], sizeof(double)) == 0);
    }
    CHECK(recomputed > 0);
    for (const auto& [name, value] : plain_params) {
      INFO(name);
      const Array& other = tight_params.at(name);
      CHECK(std::memcmp(value.raw(), other.raw(), value.bytes()) == 0);
    }
  }
}

TEST_CASE("a trainer updating in the backward pass: the same losses, no gradients, no clipping",
          "[trainer][optim]") {
  static constexpr AdamW kNoClip{.weight_decay = 0.01, .hparams_as_inputs = true};
  static constexpr AdamW kIb{.weight_decay = 0.01, .hparams_as_inputs = true, .in_backward = true};
  const data::EncodedTexts d = make_rows(40, 7);
  const DataSource src = source_of(d, 8, 5);
  Trainer plain(training_graphs<drop_net, kNoClip, false>(), options(5));
  Trainer ib(training_graphs<drop_net, kIb, false>(), options(5));
  for (std::size_t i = 0; i < src.num_batches(0); ++i) {
    const StepStats a = plain.step(src.batch(0, i)), b = ib.step(src.batch(0, i));
    INFO("step " << i + 1);
    CHECK(std::memcmp(&a.loss, &b.loss, sizeof(double)) == 0);
    CHECK(a.grad_norm == b.grad_norm);
  }
  for (const auto& [name, value] : plain.params()) {
    INFO(name);
    CHECK(std::memcmp(value.raw(), ib.params().at(name).raw(), value.bytes()) == 0);
  }
  CHECK(plain.gradient("head.weight").numel() > 0);
  CHECK_THROWS_WITH(ib.gradient("head.weight"),
                    Catch::Matchers::Contains("updates each parameter in the backward pass"));
  // Clipping needs the global norm before any update: refused, not ignored.
  TrainerOptions clipped = options(5);
  clipped.optimizer = OptimizerSettings{.clip_norm = 1.0};
  CHECK_THROWS_WITH((Trainer(training_graphs<drop_net, kIb, false>(), clipped)),
                    Catch::Matchers::Contains("clip_norm = 1.0000, but the training step updates"));
}
