// Training checkpoints: parameters and AdamW state saved from a session and loaded into
// another resume bit for bit; run state and config round-trip; mismatched stores are refused
// with every difference named; a crash while saving leaves the previous checkpoint intact.
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "harness.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 3>>(g);
  auto w = param<Shape<3, 4>>(g / "enc" / 0 / "attn" / "w_q", "weight");
  auto b = param<Shape<4>>(g / "enc" / 0 / "attn" / "w_q", "bias", kZeros);
  auto y = tanh(matmul(x, w) + b);
  return mean<0, 1>(y * y);
});
constexpr auto step_graph = train_step<net, AdamW{.weight_decay = 0.1}>();

NamedArrays step_inputs(int t) {
  return {{"x", th::random_array(DType::f32, {2, 3}, 100 + static_cast<std::uint64_t>(t))},
          {"lr", Array::from<float>({}, {0.05f})},
          {"step", Array::from<float>({}, {static_cast<float>(t)})}};
}

bool same_bytes(const Array& a, const Array& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() &&
         std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

TEST_CASE("a checkpoint resumes training bit for bit, optimizer state included", "[checkpoint]") {
  th::TempDir tmp("ckpt_resume");
  const std::string path = tmp / "run.safetensors";
  Session a(step_graph, {.threads = 1, .seed = 1});
  for (int t = 1; t <= 3; ++t) {
    a.set_inputs(step_inputs(t));
    a.run();
  }
  TrainState st{
      .step = 3, .epoch = 1, .seed = 1, .rng_counter = 96, .extra = {{"best_loss", "0.25"}}};
  save_checkpoint(path, a, st, R"({"d_model": 4, "layers": 1})");

  // A session with other initial values that has already planned and run a step: loading
  // copies into its arrays, so its plan keeps working.
  Session b(step_graph, {.threads = 1, .seed = 2});
  b.set_inputs(step_inputs(1));
  b.run();
  const CheckpointInfo info = load_checkpoint(path, b);
  CHECK(info.format_version == kCheckpointVersion);
  CHECK(info.state.step == 3);
  CHECK(info.state.epoch == 1);
  CHECK(info.state.seed == 1);
  CHECK(info.state.rng_counter == 96);
  CHECK(info.state.extra == Metadata{{"best_loss", "0.25"}});
  CHECK(info.config_json == R"({"d_model": 4, "layers": 1})");
  CHECK(info.tensors ==
        std::vector<std::string>{"enc.0.attn.w_q.bias", "enc.0.attn.w_q.bias.adam_m",
                                 "enc.0.attn.w_q.bias.adam_v", "enc.0.attn.w_q.weight",
                                 "enc.0.attn.w_q.weight.adam_m", "enc.0.attn.w_q.weight.adam_v"});
  REQUIRE(b.params().size() == 6);
  for (const auto& [name, v] : a.params()) {
    INFO(name);
    CHECK(same_bytes(b.params().at(name), v));
  }
  for (Session* s : {&a, &b}) {
    s->set_inputs(step_inputs(4));
    s->run();
  }
  for (const auto& [name, v] : a.params()) {
    INFO(name);
    CHECK(same_bytes(b.params().at(name), v));
  }
  CHECK(read_checkpoint_info(path).state.step == 3);
}

TEST_CASE("loading into a plain store copies into its arrays; floats convert", "[checkpoint]") {
  th::TempDir tmp("ckpt_store");
  const std::string path = tmp / "c.safetensors";
  save_checkpoint(path,
                  NamedArrays{{"w", Array::from<float>({2}, {0.5f, -1.5f})},
                              {"n", Array::from<std::int64_t>({}, {12})}},
                  {.step = 7});
  NamedArrays store{{"w", Array(DType::f64, {2})}, {"n", Array(DType::i64, {})}};
  const void* before = store.at("w").raw();
  CHECK(load_checkpoint(path, store).state.step == 7);
  CHECK(store.at("w").raw() == before);
  CHECK(store.at("w").to_doubles() == std::vector<double>{0.5, -1.5});
  CHECK(store.at("n").at(0) == 12);
  NamedArrays ints{{"w", Array(DType::i32, {2})}, {"n", Array(DType::i64, {})}};
  CHECK(th::error_of([&] { load_checkpoint(path, ints); }) ==
        "stag: checkpoint " + path + ": tensor 'w' has dtype f32, the model expects i32");
}

TEST_CASE("a shape mismatch names the tensor and both shapes, and copies nothing", "[checkpoint]") {
  th::TempDir tmp("ckpt_shape");
  const std::string path = tmp / "run.safetensors";
  save_checkpoint(path,
                  NamedArrays{{"enc.0.attn.w_q.weight", Array(DType::f32, {64, 64})},
                              {"enc.0.attn.w_q.bias", Array(DType::f32, {64})}},
                  {});
  NamedArrays store{
      {"enc.0.attn.w_q.weight", Array(DType::f32, {128, 128})},
      {"enc.0.attn.w_q.bias", Array::from_vector<float>({64}, std::vector<float>(64, 3.f))}};
  CHECK(th::error_of([&] { load_checkpoint(path, store); }) ==
        "stag: checkpoint " + path +
            ": likely cause: a model of another size wrote it: a dim that is 64 in the file is "
            "128 in the model (in 1 tensor); tensor 'enc.0.attn.w_q.weight' has shape [64, 64], "
            "the model expects [128, 128]");
  CHECK(store.at("enc.0.attn.w_q.bias").at(0) == 3.0);  // not overwritten
}

TEST_CASE("missing and unexpected tensors are listed; options allow either", "[checkpoint]") {
  th::TempDir tmp("ckpt_sets");
  const std::string path = tmp / "run.safetensors";
  NamedArrays saved;
  for (std::string n : {"a", "b", "old1", "old2"}) saved.emplace(n, Array::from<float>({1}, {1.f}));
  save_checkpoint(path, saved, {});
  NamedArrays store;
  for (std::string n : {"a", "b", "new"}) store.emplace(n, Array::from<float>({1}, {0.f}));
  CHECK(th::error_of([&] { load_checkpoint(path, store); }) ==
        "stag: checkpoint " + path +
            ": 1 model tensor missing from the checkpoint: 'new'; 2 checkpoint tensors the model "
            "does not have: 'old1', 'old2'");
  CHECK(th::error_of([&] {
          load_checkpoint(path, store, {.allow_missing = true});
        }).find("2 checkpoint tensors the model does not have") != std::string::npos);
  load_checkpoint(path, store, {.allow_missing = true, .allow_unexpected = true});
  CHECK(store.at("a").at(0) == 1.0);
  CHECK(store.at("new").at(0) == 0.0);  // kept its value
  // Long lists are cut after ten names.
  NamedArrays many;
  for (int i = 0; i < 13; ++i) many.emplace("p" + std::to_string(i + 10), Array(DType::f32, {1}));
  CHECK(
      th::error_of([&] { load_checkpoint(path, many, {.allow_unexpected = true}); })
          .find("13 model tensors missing from the checkpoint: 'p10', 'p11', 'p12', 'p13', 'p14', "
                "'p15', 'p16', 'p17', 'p18', 'p19' and 3 more") != std::string::npos);
}

TEST_CASE("checkpoint metadata is checked: version, plain files, config JSON", "[checkpoint]") {
  th::TempDir tmp("ckpt_meta");
  const NamedArrays t{{"w", Array(DType::f32, {2})}};
  NamedArrays store{{"w", Array(DType::f32, {2})}};
  save_safetensors(tmp / "plain.safetensors", t, {{"format", "pt"}});
  CHECK(th::error_of([&] {
          load_checkpoint(tmp / "plain.safetensors", store);
        }).find("not a stag checkpoint") != std::string::npos);
  save_safetensors(tmp / "v2.safetensors", t,
                   {{"stag.format_version", "2"},
                    {"stag.step", "1"},
                    {"stag.epoch", "0"},
                    {"stag.seed", "0"},
                    {"stag.rng_counter", "0"}});
  CHECK(th::error_of([&] { load_checkpoint(tmp / "v2.safetensors", store); }) ==
        "stag: checkpoint " + (tmp / "v2.safetensors") +
            ": format version 2, but this build of stag reads versions 1 to 1");
  save_safetensors(tmp / "bad_step.safetensors", t,
                   {{"stag.format_version", "1"}, {"stag.step", "12x"}});
  CHECK(th::error_of([&] {
          read_checkpoint_info(tmp / "bad_step.safetensors");
        }).find("metadata stag.step is '12x', not an integer") != std::string::npos);
  CHECK(th::error_of([&] {
          save_checkpoint(tmp / "c.safetensors", t, {}, "{d_model: 4}");
        }).find("the model config to save is not valid JSON") != std::string::npos);
  CHECK(!std::filesystem::exists(tmp / "c.safetensors"));
}

TEST_CASE("a checkpoint with NaN or Inf values is refused unless allowed",
          "[checkpoint][reliability]") {
  th::TempDir tmp("ckpt_nonfinite");
  const std::string path = tmp / "run.safetensors";
  save_checkpoint(path,
                  NamedArrays{{"a", Array::from<float>({3}, {1.f, 2.f, 3.f})},
                              {"b", Array::from<float>({2}, {0.f, std::nanf("")})},
                              {"n", Array::from<std::int32_t>({1}, {7})}},
                  {});
  NamedArrays store{
      {"a", Array(DType::f32, {3})}, {"b", Array(DType::f32, {2})}, {"n", Array(DType::i32, {1})}};
  CHECK(th::error_of([&] { load_checkpoint(path, store); }) ==
        "stag: checkpoint " + path +
            ": 1 non-finite value, the first in tensor 'b' (nan at element 1): the run that wrote "
            "it diverged. Load an earlier checkpoint, or pass allow_nonfinite (--allow-nonfinite) "
            "to load it anyway");
  CHECK(store.at("a").at(0) == 0.0);  // nothing copied
  load_checkpoint(path, store, {.allow_nonfinite = true});
  CHECK(store.at("a").at(0) == 1.0);
  CHECK(std::isnan(store.at("b").at(1)));
  // Only selected tensors are checked.
  load_checkpoint(path, store, {.select = [](const std::string& n) { return n == "a"; }});
  const FiniteReport r = check_finite(store);
  CHECK(r.nonfinite == 1);
  CHECK(r.max_abs == 3.0);
  CHECK(r.max_abs_name == "a");
}

TEST_CASE("checkpoint metadata that cannot be right is refused: negative counts, broken config",
          "[checkpoint][reliability]") {
  th::TempDir tmp("ckpt_meta_bad");
  const NamedArrays t{{"w", Array(DType::f32, {2})}};
  save_checkpoint(tmp / "neg.safetensors", t, {.step = -5}, "{}");
  CHECK(th::error_of([&] { read_checkpoint_info(tmp / "neg.safetensors"); }) ==
        "stag: checkpoint " + (tmp / "neg.safetensors") +
            ": metadata stag.step is -5, but it counts and cannot be negative (is the file edited "
            "or damaged?)");
  save_safetensors(tmp / "config.safetensors", t,
                   {{"stag.format_version", "1"},
                    {"stag.step", "1"},
                    {"stag.epoch", "0"},
                    {"stag.seed", "0"},
                    {"stag.rng_counter", "0"},
                    {"stag.config", "{\"model\": {\"d_model\": 12"}});
  CHECK_THAT(th::error_of([&] { read_checkpoint_info(tmp / "config.safetensors"); }),
             Catch::StartsWith("stag: checkpoint " + (tmp / "config.safetensors") +
                               ": metadata stag.config is not valid JSON"));
}

TEST_CASE("a checkpoint of another model size gives a short error that leads with the cause",
          "[checkpoint][reliability]") {
  th::TempDir tmp("ckpt_other_size");
  const std::string path = tmp / "run.safetensors";
  // 24 weights of [d, d] with their Adam moments: d = 128 in the file, 192 in the model.
  auto store_of = [](std::int64_t d) {
    NamedArrays s;
    for (int l = 0; l < 24; ++l)
      for (const char* suffix : {"", ".adam_m", ".adam_v"})
        s.emplace("layers." + std::to_string(l) + ".w.weight" + suffix, Array(DType::f32, {d, d}));
    return s;
  };
  save_checkpoint(path, store_of(128), {}, R"({"model": {"d_model": 128, "layers": 24}})");
  NamedArrays model = store_of(192);
  const std::string plain = th::error_of([&] { load_checkpoint(path, model); });
  INFO(plain);
  CHECK(plain.size() < 1500);  // it was about 25 KB for a real model
  CHECK_THAT(plain, Catch::StartsWith(
                        "stag: checkpoint " + path +
                        ": likely cause: a model of another size wrote it: a dim that is "
                        "128 in the file is 192 in the model (in 24 tensors); 24 tensors of "
                        "another shape (and 48 optimizer state tensors of these, not "
                        "listed): tensor 'layers.0.w.weight' has shape [128, 128], the model "
                        "expects [192, 192]; ") &&
                        Catch::EndsWith("; and 14 more"));
  const std::string named = th::error_of([&] {
    load_checkpoint(path, model,
                    {.expected_config = R"({"model": {"d_model": 192, "layers": 24}})"});
  });
  CHECK_THAT(named, Catch::Contains(": likely cause: the checkpoint was written by a model of "
                                    "another config: d_model 128 in the file, 192 in the model; "
                                    "24 tensors"));
}

constexpr auto vocab = sym<"vocab">;
constexpr auto sym_net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, vocab>>(g);
  return mean<0, 1>(matmul(x, param<Shape<vocab, 2>>(g / "proj", "weight")));
});

TEST_CASE("a session whose parameters wait for a symbolic dim cannot save or load yet",
          "[checkpoint]") {
  th::TempDir tmp("ckpt_sym");
  const std::string path = tmp / "s.safetensors";
  Session s(sym_net, {.threads = 1});
  CHECK(th::error_of([&] {
          save_checkpoint(path, s, {});
        }).find("has not created its parameters yet") != std::string::npos);
  CHECK(!std::filesystem::exists(path));
  save_checkpoint(path, NamedArrays{{"proj.weight", Array(DType::f32, {3, 2})}}, {});
  CHECK(th::error_of([&] { load_checkpoint(path, s); }).find("run a step before loading") !=
        std::string::npos);
  s.set_input("x", th::random_array(DType::f32, {2, 3}, 1));
  s.run();
  load_checkpoint(path, s);
  CHECK(s.params().at("proj.weight").to_doubles() == std::vector<double>(6, 0.0));
}

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST_CASE("a crash while saving leaves the previous checkpoint loadable", "[checkpoint]") {
  th::TempDir tmp("ckpt_crash");
  const std::string path = tmp / "run.safetensors";
  auto store_of = [](float v) {
    return NamedArrays{{"w", Array::from_vector<float>({1 << 20}, std::vector<float>(1 << 20, v))}};
  };
  save_checkpoint(path, store_of(1.f), {.step = 1});
  // A crash mid-write as a file would leave it: a stale, half-written temporary.
  std::vector<std::uint8_t> half = th::read_bytes(path);
  half.resize(half.size() / 2);
  th::write_bytes(path + ".tmp.99999", half);
  NamedArrays store = store_of(0.f);
  CHECK(load_checkpoint(path, store).state.step == 1);
  CHECK(store.at("w").at(12345) == 1.0);
  save_checkpoint(path, store_of(2.f), {.step = 2});
  CHECK(files_in(tmp.dir) ==
        std::vector<std::string>{"run.safetensors", "run.safetensors.tmp.99999"});

  // Real kills: a child process saves in a loop and is killed at arbitrary moments; the file at
  // `path` is always a whole checkpoint, the last one or the one before.
  for (int round = 0; round < 8; ++round) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      try {
        for (int k = 3;; ++k) save_checkpoint(path, store_of(static_cast<float>(k)), {.step = k});
      } catch (...) {
        ::_exit(1);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(15 + 23 * round));
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    const CheckpointInfo info = load_checkpoint(path, store);
    INFO("round " << round << ", step " << info.state.step);
    CHECK(store.at("w").at(0) == static_cast<double>(info.state.step));
    CHECK(store.at("w").at((1 << 20) - 1) == static_cast<double>(info.state.step));
  }
}

}  // namespace
