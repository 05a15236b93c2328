// Hugging Face model folders (models/hf.hpp), checked against tests/hf/: tiny LlamaForCausalLM
// (tied, BF16, one file) and Qwen2ForCausalLM (untied, q/k/v biases, F16, two shards with an
// index) folders in the exact Hugging Face layout, with logits and a greedy continuation from a
// float64 PyTorch reference written to Hugging Face's modelling code (tools/make_hf_fixtures.py).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "hf_presets.hpp"
#include "test_files.hpp"

#include <stag/models/generate.hpp>
#include <stag/models/generator.hpp>
#include <stag/models/hf.hpp>
#include <stag/runtime/train/safetensors.hpp>

namespace {

using namespace stag;
namespace fs = std::filesystem;

using th::kTinyPresets;

fs::path fixture(const std::string& name) {
  return th::hf_fixture(name);
}

// A copy of a fixture folder to change.
fs::path copy_fixture(const th::TempDir& tmp, const std::string& name) {
  const fs::path to = tmp.dir / name;
  fs::copy(fixture(name), to, fs::copy_options::recursive);
  return to;
}

void edit_config(const fs::path& folder, const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json j = nlohmann::json::parse(std::ifstream(folder / "config.json"));
  edit(j);
  std::ofstream(folder / "config.json", std::ios::trunc) << j.dump(2);
}

std::vector<std::int32_t> ints(const Array& a) {
  std::vector<std::int32_t> out;
  for (double v : a.to_doubles()) out.push_back(static_cast<std::int32_t>(v));
  return out;
}

// Row `row` of the reference's ids.
std::vector<std::int32_t> reference_row(const SafetensorsFile& ref, std::int64_t row) {
  const Array& ids = ref.tensors.at("ids");
  const std::vector<std::int32_t> all = ints(ids);
  const std::int64_t s = ids.dims()[1];
  return {all.begin() + row * s, all.begin() + (row + 1) * s};
}

// |got - want| <= 1e-4 * max(1, |want|) for logits [1, n, V] against the reference's row `row`
// at positions from .. from + n - 1; returns the largest scaled error.
double compare_logits(const Array& got, const SafetensorsFile& ref, std::int64_t row,
                      std::int64_t from) {
  const Array& want = ref.tensors.at("logits");  // [B, S, V]
  const std::int64_t s = want.dims()[1], v = want.dims()[2];
  REQUIRE(got.dims().size() == 3);
  REQUIRE(got.dims()[2] == v);
  const std::int64_t n = got.dims()[1];
  const std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  double worst = 0;
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t k = 0; k < v; ++k) {
      const double ref_value = w[static_cast<std::size_t>((row * s + from + t) * v + k)];
      const double err = std::abs(g[static_cast<std::size_t>(t * v + k)] - ref_value) /
                         std::max(1.0, std::abs(ref_value));
      worst = std::max(worst, err);
    }
  return worst;
}

// Greedy generation from the reference's prompt gives its continuation, token for token.
void check_greedy(Generator& gen, const SafetensorsFile& ref) {
  const std::vector<std::int32_t> prompt = ints(ref.tensors.at("greedy/prompt"));
  const std::vector<std::int32_t> want = ints(ref.tensors.at("greedy/new"));
  const GenerateResult r =
      gen.generate_ids(prompt, {.max_new_tokens = static_cast<int>(want.size()),
                                .sample = {.temperature = 0.0},
                                .add_bos = false,
                                .stop_at_eos = false});
  CHECK(r.new_ids == want);
}

void check_against_reference(const std::string& name, const std::string& preset) {
  const hf::Model m = hf::load(fixture(name), kTinyPresets);
  REQUIRE(m.preset->name == preset);
  const SafetensorsFile ref = load_safetensors((fixture(name) / "reference.safetensors").string());
  const std::int64_t rows = ref.tensors.at("ids").dims()[0];

  SECTION("every position of a whole sequence in one pass") {
    Generator gen(*m.preset, m.weights, std::nullopt, {.threads = 1});
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::vector<std::int32_t> ids = reference_row(ref, r);
      const double err = compare_logits(gen.step(ids, 0), ref, r, 0);
      INFO(name << " row " << r);
      CHECK(err <= 1e-4);
    }
  }
  SECTION("cached decoding, one token at a time, equals the reference's full forward") {
    Generator gen(*m.preset, m.weights, std::nullopt, {.threads = 1});
    const std::vector<std::int32_t> ids = reference_row(ref, 1);
    double worst = 0;
    for (std::size_t t = 0; t < ids.size(); ++t)
      worst = std::max(
          worst, compare_logits(gen.step(std::span(&ids[t], 1), static_cast<std::int64_t>(t)), ref,
                                1, static_cast<std::int64_t>(t)));
    CHECK(worst <= 1e-4);
  }
  SECTION("greedy generation gives the reference's tokens") {
    Generator gen(*m.preset, m.weights, std::nullopt, {.threads = 1});
    check_greedy(gen, ref);
  }
}

}  // namespace

TEST_CASE("a Llama folder (tied, BF16) gives the PyTorch reference's logits", "[hf]") {
  check_against_reference("llama", "tiny-llama");
}

TEST_CASE("a Qwen2 folder (q/k/v biases, untied, F16, two shards) gives the reference's logits",
          "[hf]") {
  check_against_reference("qwen2", "tiny-qwen2");
}

TEST_CASE("a GPT-2 folder (Conv1D weights, learned positions, F32) gives the reference's logits",
          "[hf]") {
  check_against_reference("gpt2", "tiny-gpt2");
}

// Weights stored in bf16 (GeneratorOptions::weights, the presets' bf16_weights graphs).
// Every matmul then reads bf16 operands (the activations rounded to 8 bits) and sums in f32,
// so the logits move from the f64 reference by a few bf16 steps; the ids stay the reference's.
void check_bf16_weights(const std::string& name) {
  const hf::Model m = hf::load(fixture(name), kTinyPresets, {.weights = DType::bf16});
  const SafetensorsFile ref = load_safetensors((fixture(name) / "reference.safetensors").string());
  const GraphView& g = m.preset->decode_bf16;
  for (const auto& [w, a] : m.weights) {
    INFO(w);
    CHECK(a.dtype() == g.node(g.find(w)).dtype);
    // Matrices in bf16 (the embeddings, the projections), gains and biases in f32.
    CHECK((a.dtype() == DType::bf16) == (a.dims().size() == 2));
  }
  Generator gen(*m.preset, m.weights, std::nullopt, {.threads = 1, .weights = DType::bf16});
  double worst = 0;
  for (std::int64_t r = 0; r < ref.tensors.at("ids").dims()[0]; ++r)
    worst = std::max(worst, compare_logits(gen.step(reference_row(ref, r), 0), ref, r, 0));
  INFO(name << ": largest error " << worst);
  CHECK(worst > 1e-4);  // the f32 path's bound: this one ran in bf16
  // A few bf16 roundings of the activations (2^-8 relative each), compounded over the layers;
  // measured 0.014 (GPT-2), 0.015 (Llama), 0.029 (Qwen2).
  CHECK(worst <= std::ldexp(1.0, -5));
  check_greedy(gen, ref);
  CHECK(gen.session()
            .params()
            .at(m.preset->config->arch == LmArch::gpt2 ? "wte.weight" : "embed_tokens.weight")
            .dtype() == DType::bf16);
}

TEST_CASE("weights kept in bf16: the reference's tokens, its logits to a few bf16 steps", "[hf]") {
  check_bf16_weights("llama");
  check_bf16_weights("qwen2");
  check_bf16_weights("gpt2");
}

// The tiny Llama's decode step under autocast: f32 weights, rounded at every step.
constexpr auto kTinyLlamaAutocast = autocast<lm_decode_graph<th::kTinyLlama>>();

TEST_CASE("bf16 weights compute what autocast computes from the same BF16 file", "[hf]") {
  // The Llama folder is BF16: the f32 weights hold bf16 values, which autocast's casts keep, so
  // storing them in bf16 changes the storage and nothing else.
  const hf::Model m32 = hf::load(fixture("llama"), kTinyPresets);
  const hf::Model m16 = hf::load(fixture("llama"), kTinyPresets, {.weights = DType::bf16});
  const LmPreset autocast_preset{"tiny-llama-autocast", &th::kTinyLlama, kTinyLlamaAutocast, ""};
  Generator a(autocast_preset, m32.weights, std::nullopt, {.threads = 1});
  Generator b(*m16.preset, m16.weights, std::nullopt, {.threads = 1, .weights = DType::bf16});
  const std::vector<std::int32_t> ids = {5, 120, 7, 299, 0, 64};
  CHECK(a.step(ids, 0).to_doubles() == b.step(ids, 0).to_doubles());
  CHECK(a.step(std::vector<std::int32_t>{17}, 6).to_doubles() ==
        b.step(std::vector<std::int32_t>{17}, 6).to_doubles());  // and through the cache
  // Half the bytes: every weight but the two norms' gains is a matrix.
  std::size_t bytes32 = 0, bytes16 = 0;
  for (const auto& [name, w] : m32.weights) bytes32 += w.bytes();
  for (const auto& [name, w] : m16.weights) bytes16 += w.bytes();
  CHECK(bytes16 < 0.51 * bytes32);
}

TEST_CASE("bf16 weights for a preset without a bf16 graph are refused by name", "[hf]") {
  const LmPreset f32_only{"tiny-llama-f32-only", &th::kTinyLlama, kTinyPresets[0].decode, ""};
  const hf::Model m = hf::load(fixture("llama"), kTinyPresets);
  CHECK_THROWS_WITH(
      Generator(f32_only, m.weights, std::nullopt, {.threads = 1, .weights = DType::bf16}),
      Catch::Contains("preset tiny-llama-f32-only has no decode graph for bf16 weights"));
}

TEST_CASE("GPT-2: config.json, tensor names with or without transformer., the mask buffers",
          "[hf]") {
  const hf::HfConfig c = hf::read_config(fixture("gpt2"));
  CHECK(c.model_type == "gpt2");
  CHECK(c.lm.arch == LmArch::gpt2);
  CHECK(c.lm.d_ff == 40);  // n_inner
  CHECK(c.lm.kv_heads == 4);
  CHECK(c.lm.max_positions == 24);
  CHECK(c.lm.tie_embeddings);  // GPT2Config's default
  CHECK(c.bos_id == 299);

  CHECK(hf::to_stag_name("transformer.h.1.attn.c_attn.weight") == "h.1.attn.c_attn.weight");
  CHECK(hf::to_stag_name("h.1.mlp.c_proj.bias") == "h.1.mlp.c_proj.bias");
  CHECK(hf::to_stag_name("transformer.wpe.weight") == "wpe.weight");
  CHECK(hf::to_hf_name("ln_f.bias") == "transformer.ln_f.bias");
  CHECK(hf::to_hf_name("lm_head.weight") == "lm_head.weight");

  th::TempDir tmp("hf_gpt2");
  // GPT2LMHeadModel's names (transformers' save_pretrained) load as GPT2Model's do.
  const fs::path f = copy_fixture(tmp, "gpt2");
  {
    const std::string file = (f / "model.safetensors").string();
    SafetensorsFile st = load_safetensors(file);
    REQUIRE(st.tensors.contains("h.0.attn.bias"));  // the causal-mask buffer, ignored
    NamedArrays renamed;
    for (auto& [n, a] : st.tensors)
      if (!n.ends_with(".attn.bias")) renamed.emplace("transformer." + n, a);
    save_safetensors(file, renamed, st.metadata);
  }
  const hf::Model a = hf::load(fixture("gpt2"), kTinyPresets);
  const hf::Model b = hf::load(f, kTinyPresets);
  REQUIRE(a.weights.size() == b.weights.size());
  for (const auto& [n, w] : a.weights) CHECK(b.weights.at(n).to_doubles() == w.to_doubles());

  // The nearest preset is named with GPT-2's own field names; what the graph lacks is refused.
  edit_config(f, [](nlohmann::json& j) {
    j["n_positions"] = 1024;
    j["n_inner"] = nullptr;
  });
  const std::string e = th::error_of([&] { hf::load(f, kTinyPresets); });
  CHECK_THAT(e, Catch::Contains("no compiled-in preset has this gpt2 config; the nearest is "
                                "tiny-gpt2"));
  CHECK_THAT(e, Catch::Contains("n_positions is 1024 in config.json, 24 in preset tiny-gpt2"));
  CHECK_THAT(e, Catch::Contains("n_inner is 128 in config.json, 40 in preset tiny-gpt2"));
  const std::pair<std::function<void(nlohmann::json&)>, std::string> refused[] = {
      {[](nlohmann::json& j) { j["activation_function"] = "relu"; },
       "\"activation_function\" is \"relu\": an activation other than GELU's tanh"},
      {[](nlohmann::json& j) { j["scale_attn_by_inverse_layer_idx"] = true; },
       "\"scale_attn_by_inverse_layer_idx\" is true: scores scaled by 1/(layer + 1)"},
      {[](nlohmann::json& j) { j["add_cross_attention"] = true; },
       "\"add_cross_attention\" is true: cross-attention to an encoder"},
      {[](nlohmann::json& j) { j["n_head"] = 5; },
       "\"n_embd\" 32 is not a multiple of \"n_head\" 5"},
  };
  for (const auto& [edit, message] : refused) {
    const fs::path g = tmp.dir / "refused";
    fs::remove_all(g);
    fs::copy(fixture("gpt2"), g, fs::copy_options::recursive);
    edit_config(g, edit);
    const std::string got = th::error_of([&] { hf::read_config(g); });
    INFO(got);
    CHECK_THAT(got, Catch::Contains(message));
  }

  // The official gpt2 preset is compiled in.
  const LmPreset* p = find_lm_preset("gpt2");
  REQUIRE(p != nullptr);
  CHECK(p->config->arch == LmArch::gpt2);
  CHECK(p->config->max_positions == 1024);
}

TEST_CASE("config.json is read with its Hugging Face names and checked against the presets",
          "[hf]") {
  const hf::HfConfig c = hf::read_config(fixture("qwen2"));
  CHECK(c.model_type == "qwen2");
  CHECK(c.lm.qkv_bias);
  CHECK(c.lm.norm_eps == 1e-6);
  CHECK(c.lm.rope_theta == 1e6);
  CHECK(!c.lm.tie_embeddings);
  CHECK(c.bos_id == 0);
  CHECK(c.eos_id == 3);
  CHECK(c.max_positions == 128);
  CHECK(c.torch_dtype == "float16");

  th::TempDir tmp("hf_config");
  const fs::path f = copy_fixture(tmp, "llama");
  edit_config(f, [](nlohmann::json& j) {
    j["hidden_size"] = 40;
    j["rope_theta"] = 10000.0;
  });
  const std::string e = th::error_of([&] { hf::load(f, kTinyPresets); });
  CHECK_THAT(e, Catch::Contains("no compiled-in preset has this llama config; the nearest is "
                                "tiny-llama"));
  CHECK_THAT(e, Catch::Contains("hidden_size is 40 in config.json, 32 in preset tiny-llama"));
  CHECK_THAT(e,
             Catch::Contains("rope_theta is 10000.0 in config.json, 500.0 in preset tiny-llama"));
  CHECK_THAT(e, Catch::Contains("add a line for this config to models/lm_presets.hpp"));

  // What the graph does not have is refused by name, not run wrongly.
  const std::pair<std::function<void(nlohmann::json&)>, std::string> refused[] = {
      {[](nlohmann::json& j) {
         j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}};
       },
       "\"rope_scaling\" is {\"factor\":8.0,\"rope_type\":\"llama3\"}: scaled rotary positions"},
      {[](nlohmann::json& j) { j["hidden_act"] = "gelu"; },
       "\"hidden_act\" is \"gelu\": an MLP activation other than silu"},
      {[](nlohmann::json& j) { j["attention_bias"] = true; },
       "\"attention_bias\" is true: biases in the Llama attention projections"},
      {[](nlohmann::json& j) { j["head_dim"] = 16; },
       "\"head_dim\" is 16: a head dim other than hidden_size / num_attention_heads = 8"},
      {[](nlohmann::json& j) { j["model_type"] = "mistral"; },
       "\"model_type\" is \"mistral\"; stag loads \"llama\""},
      {[](nlohmann::json& j) { j["vocab_size"] = "300"; },
       "\"vocab_size\" is \"300\", expected an integer"},
      {[](nlohmann::json& j) { j.erase("num_hidden_layers"); }, "has no \"num_hidden_layers\""},
  };
  for (const auto& [edit, message] : refused) {
    const fs::path g = tmp.dir / "refused";
    fs::remove_all(g);
    fs::copy(fixture("llama"), g, fs::copy_options::recursive);
    edit_config(g, edit);
    const std::string got = th::error_of([&] { hf::read_config(g); });
    INFO(got);
    CHECK_THAT(got, Catch::Contains((g / "config.json").string()));
    CHECK_THAT(got, Catch::Contains(message));
  }
}

TEST_CASE("every tensor name is mapped and every problem with the weights is reported", "[hf]") {
  th::TempDir tmp("hf_weights");
  const fs::path f = copy_fixture(tmp, "llama");
  const std::string file = (f / "model.safetensors").string();
  SafetensorsFile st = load_safetensors(file);
  CHECK(st.tensors.at("model.embed_tokens.weight").dtype() == DType::bf16);
  st.tensors.erase("model.layers.1.mlp.up_proj.weight");
  st.tensors.insert_or_assign("model.layers.0.self_attn.o_proj.weight",
                              Array(DType::bf16, {32, 31}));
  st.tensors.emplace("model.layers.0.self_attn.q_norm.weight", Array(DType::bf16, {8}));
  st.tensors.emplace("model.layers.0.self_attn.rotary_emb.inv_freq", Array(DType::f32, {4}));
  save_safetensors(file, st.tensors, st.metadata);
  const std::string e = th::error_of([&] { hf::load(f, kTinyPresets); });
  CHECK_THAT(e, Catch::Contains("the weights do not fit preset tiny-llama"));
  CHECK_THAT(e, Catch::Contains("parameter 'layers.1.mlp.up_proj.weight' "
                                "(model.layers.1.mlp.up_proj.weight) is in no file"));
  CHECK_THAT(e, Catch::Contains("'model.layers.0.self_attn.o_proj.weight' is [32, 31] in the "
                                "file, [32, 32] in preset tiny-llama"));
  CHECK_THAT(e, Catch::Contains("'model.layers.0.self_attn.q_norm.weight' (model.safetensors) "
                                "is not a parameter of preset tiny-llama"));
  CHECK_THAT(e, !Catch::Contains("inv_freq"));  // an old checkpoint's buffer: ignored

  // No weights at all; a pickle is named as such.
  fs::remove(file);
  std::ofstream(f / "pytorch_model.bin") << "x";
  CHECK_THAT(th::error_of([&] { hf::load(f, kTinyPresets); }),
             Catch::Contains("has neither model.safetensors nor model.safetensors.index.json "
                             "(pytorch_model.bin is a pickle"));
}

TEST_CASE("a sharded set is checked against its index", "[hf]") {
  CHECK(hf::load(fixture("qwen2"), kTinyPresets).files ==
        std::vector<fs::path>{fixture("qwen2") / "model-00001-of-00002.safetensors",
                              fixture("qwen2") / "model-00002-of-00002.safetensors"});
  CHECK(hf::load(fixture("llama"), kTinyPresets).files ==
        std::vector<fs::path>{fixture("llama") / "model.safetensors"});
  th::TempDir tmp("hf_index");
  const fs::path f = copy_fixture(tmp, "qwen2");
  const fs::path index = f / "model.safetensors.index.json";
  nlohmann::json j = nlohmann::json::parse(std::ifstream(index));
  auto& map = j["weight_map"];
  const std::string moved = "model.norm.weight";
  const std::string was = map[moved];
  map[moved] = was == "model-00001-of-00002.safetensors" ? "model-00002-of-00002.safetensors"
                                                         : "model-00001-of-00002.safetensors";
  std::ofstream(index, std::ios::trunc) << j.dump();
  CHECK_THAT(
      th::error_of([&] { hf::load(f, kTinyPresets); }),
      Catch::Contains("'model.norm.weight' is in " + was +
                      ", but model.safetensors.index.json says " + map[moved].get<std::string>()));

  map[moved] = "../elsewhere.safetensors";
  std::ofstream(index, std::ios::trunc) << j.dump();
  CHECK_THAT(th::error_of([&] { hf::load(f, kTinyPresets); }),
             Catch::Contains("is not a file in the folder: ../elsewhere.safetensors"));

  std::ofstream(index, std::ios::trunc) << "{\"weight_map\": ";
  CHECK_THAT(th::error_of([&] { hf::load(f, kTinyPresets); }),
             Catch::Contains("model.safetensors.index.json: invalid JSON"));
}

TEST_CASE("a truncated shard or a NaN weight is an error, not a model", "[hf]") {
  th::TempDir tmp("hf_bad");
  const fs::path f = copy_fixture(tmp, "qwen2");
  const fs::path shard = f / "model-00002-of-00002.safetensors";
  std::vector<std::uint8_t> bytes = th::read_bytes(shard.string());
  th::write_bytes(shard.string(), {bytes.begin(), bytes.end() - 10});
  CHECK_THAT(th::error_of([&] { hf::load(f, kTinyPresets); }), Catch::Contains(shard.string()));
  th::write_bytes(shard.string(), bytes);

  // A NaN in the first tensor of the shard, written as F16 bits into the file's bytes.
  const SafetensorsHeader h = read_safetensors_header(shard.string());
  REQUIRE(!h.entries.empty());
  const auto e = std::min_element(h.entries.begin(), h.entries.end(),
                                  [](const auto& x, const auto& y) { return x.begin < y.begin; });
  const std::string nan_name = e->name;
  REQUIRE(e->f16);
  const std::size_t at = static_cast<std::size_t>(h.data_start + e->begin);
  bytes[at] = 0x00;
  bytes[at + 1] = 0x7e;  // a quiet NaN
  th::write_bytes(shard.string(), bytes);
  const std::string err = th::error_of([&] { hf::load(f, kTinyPresets); });
  CHECK_THAT(err, Catch::Contains("allow_nonfinite"));
  const hf::Model m = hf::load(f, kTinyPresets, {.allow_nonfinite = true});
  CHECK(std::isnan(m.weights.at(*hf::to_stag_name(nan_name)).to_doubles()[0]));
}

TEST_CASE("hf::save writes a folder that loads back with the same weights and logits", "[hf]") {
  th::TempDir tmp("hf_save");
  for (const char* name : {"llama", "qwen2", "gpt2"}) {
    const hf::Model m = hf::load(fixture(name), kTinyPresets);
    const fs::path out = tmp.dir / name;
    // The fixtures' values are BF16 / F16, so F32 keeps them exactly; BF16 keeps the Llama's.
    hf::save(out, *m.preset->config, m.weights, nullptr,
             {.bf16 = std::string(name) == "llama",
              .bos_id = m.config.bos_id,
              .eos_id = m.config.eos_id,
              .max_positions = m.config.max_positions});
    const hf::Model back = hf::load(out, kTinyPresets);
    CHECK(back.preset == m.preset);
    CHECK(back.config.bos_id == m.config.bos_id);
    CHECK(back.config.eos_id == m.config.eos_id);
    REQUIRE(back.weights.size() == m.weights.size());
    for (const auto& [n, a] : m.weights) {
      INFO(n);
      CHECK(back.weights.at(n).to_doubles() == a.to_doubles());
    }
    const SafetensorsHeader h = read_safetensors_header((out / "model.safetensors").string());
    const bool has_head = std::any_of(h.entries.begin(), h.entries.end(),
                                      [](const auto& e) { return e.name == "lm_head.weight"; });
    CHECK(has_head == !m.preset->config->tie_embeddings);  // as save_pretrained writes it
    const bool gpt2 = m.preset->config->arch == LmArch::gpt2;
    for (const SafetensorsEntry& e : h.entries)
      CHECK(e.name.starts_with(e.name == "lm_head.weight" ? "lm_head"
                               : gpt2                     ? "transformer."
                                                          : "model."));
    CHECK(hf::read_config(out).model_type == hf::read_config(fixture(name)).model_type);
  }
}

TEST_CASE("hf::generator runs a folder with its tokeniser and config.json's <bos> and <eos>",
          "[hf]") {
  const SafetensorsFile ref =
      load_safetensors((fixture("llama") / "reference.safetensors").string());
  const hf::HfConfig c = hf::read_config(fixture("llama"));
  REQUIRE(c.eos_id);
  const std::unique_ptr<Generator> g =
      hf::generator(fixture("llama"), {.threads = 1}, kTinyPresets);
  REQUIRE(g->tokenizer() != nullptr);
  CHECK(g->tokenizer()->kind() == "hugging-face");
  CHECK(g->bos_id() == 298);
  CHECK(g->eos_id() == *c.eos_id);
  CHECK(!g->add_bos());  // a ByteLevel post-processor adds nothing

  // Greedy generation stops right after config.json's <eos> (the fixture's eos is a token the
  // reference's greedy continuation reaches after a few steps).
  const std::vector<std::int32_t> all = ints(ref.tensors.at("greedy/new"));
  const auto stop = std::find(all.begin(), all.end(), *c.eos_id);
  REQUIRE(stop != all.end());
  const std::vector<std::int32_t> want(all.begin(), stop + 1);
  CHECK(want.size() >= 3);
  CHECK(want.size() < all.size());
  const GenerateResult r = g->generate_ids(
      ints(ref.tensors.at("greedy/prompt")),
      {.max_new_tokens = static_cast<int>(all.size()), .sample = {.temperature = 0}});
  CHECK(r.new_ids == want);

  // Text in, text out, through the folder's tokenizer.json.
  const data::HfTokenizer tok = data::HfTokenizer::load(fixture("llama"));
  const std::string prompt = "Once upon a time there was";
  const GenerateResult t = g->generate(prompt, {.max_new_tokens = 5, .sample = {.temperature = 0}});
  CHECK(t.prompt_ids == tok.encode(prompt));
  CHECK(t.prompt_ids.size() < prompt.size());  // merges were applied
  CHECK(t.text == tok.decode(t.new_ids, /*skip_special=*/true));

  // A folder without a tokeniser runs on ids; config.json's ids are kept.
  const std::unique_ptr<Generator> q =
      hf::generator(fixture("qwen2"), {.threads = 1}, kTinyPresets);
  CHECK(q->tokenizer() == nullptr);
  CHECK(q->bos_id() == 0);
  CHECK(q->eos_id() == 3);
  CHECK_THAT(th::error_of([&] { q->generate("text"); }), Catch::Contains("no tokeniser"));
}

TEST_CASE("hf::generator runs a GPT-2 folder with its vocab.json and merges.txt", "[hf]") {
  const std::unique_ptr<Generator> g = hf::generator(fixture("gpt2"), {.threads = 1}, kTinyPresets);
  REQUIRE(g->tokenizer() != nullptr);
  CHECK(g->tokenizer()->kind() == "hugging-face");
  CHECK(g->eos_id() == 299);  // <|endoftext|>
  CHECK(!g->add_bos());
  const data::HfTokenizer tok = data::HfTokenizer::load(fixture("gpt2"));
  CHECK(tok.find("<|endoftext|>") == 299);
  const std::string prompt = "Once upon a time there was";
  const GenerateResult t = g->generate(
      prompt, {.max_new_tokens = 5, .sample = {.temperature = 0}, .stop_at_eos = false});
  CHECK(t.prompt_ids == tok.encode(prompt));
  CHECK(t.prompt_ids.size() < prompt.size());  // merges were applied
  CHECK(t.new_ids.size() == 5);

  // 24 learned positions: 20 prompt tokens and 5 new ones fit (the last is never fed back);
  // one more is a clear error, not a wrong answer or an op's message.
  const std::vector<std::int32_t> ids(20, 7);
  CHECK(g->generate_ids(ids, {.max_new_tokens = 5, .stop_at_eos = false}).new_ids.size() == 5);
  CHECK_THAT(th::error_of([&] { g->generate_ids(ids, {.max_new_tokens = 6}); }),
             Catch::Contains("25 positions (prompt and new tokens) do not fit the model's table "
                             "of 24 learned positions"));
  Generator gen(g->preset(), hf::load(fixture("gpt2"), kTinyPresets).weights, std::nullopt,
                {.threads = 1});
  gen.step(std::vector<std::int32_t>{1, 2}, 0);
  CHECK_THAT(th::error_of([&] {
               gen.step(std::vector<std::int32_t>{3, 4}, 23);
             }),
             Catch::Contains("25 positions"));
}

TEST_CASE("beam search over a Hugging Face vocabulary: any id, the config's <eos>", "[hf]") {
  for (const char* name : {"gpt2", "llama"}) {
    INFO(name);
    const SafetensorsFile ref =
        load_safetensors((fixture(name) / "reference.safetensors").string());
    const hf::HfConfig c = hf::read_config(fixture(name));
    const std::unique_ptr<Generator> g = hf::generator(fixture(name), {.threads = 1}, kTinyPresets);
    const std::vector<std::int32_t> prompt = ints(ref.tensors.at("greedy/prompt"));
    const std::vector<std::int32_t> greedy = ints(ref.tensors.at("greedy/new"));
    // GPT-2's <eos> is its last id: beam search must draw from every id, not from <eos> up.
    const auto stop = std::find(greedy.begin(), greedy.end(), *c.eos_id);
    const std::vector<std::int32_t> want(greedy.begin(), stop);
    // Beam 1 is greedy decoding: the PyTorch reference's tokens, up to config.json's <eos>.
    const std::vector<Hypothesis> one =
        g->beam_search(prompt, {.beam_size = 1, .max_new = static_cast<int>(greedy.size())});
    REQUIRE(one.size() == 1);
    CHECK(one[0].ids == want);
    CHECK(one[0].finished == (stop != greedy.end()));
    CHECK(std::any_of(want.begin(), want.end(), [&](std::int32_t id) { return id < *c.eos_id; }));
    const std::vector<Hypothesis> three =
        g->beam_search(prompt, {.beam_size = 3, .n_best = 3, .max_new = 6});
    REQUIRE(three.size() == 3);
    CHECK(three[0].score >= three[1].score);
    CHECK(three[1].score >= three[2].score);
  }
  // A folder whose config.json names no <eos>: nothing to finish with, said so.
  th::TempDir tmp("hf_beam");
  const fs::path f = copy_fixture(tmp, "qwen2");
  edit_config(f, [](nlohmann::json& j) { j.erase("eos_token_id"); });
  const std::unique_ptr<Generator> q = hf::generator(f, {.threads = 1}, kTinyPresets);
  CHECK_THAT(th::error_of([&] {
               q->beam_search({1, 2}, {.beam_size = 2});
             }),
             Catch::Contains("the model has no end-of-sequence id"));
}

TEST_CASE("a tokenizer.json template that starts with a special token puts it before prompts",
          "[hf]") {
  th::TempDir tmp("hf_template");
  const fs::path f = copy_fixture(tmp, "llama");
  nlohmann::json j = nlohmann::json::parse(std::ifstream(f / "tokenizer.json"));
  // Llama 3's layout: a Sequence of ByteLevel and a TemplateProcessing.
  j["post_processor"] = {{"type", "Sequence"},
                         {"processors",
                          {j["post_processor"],
                           {{"type", "TemplateProcessing"},
                            {"single",
                             {{{"SpecialToken", {{"id", "<|im_start|>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}}}}};
  std::ofstream(f / "tokenizer.json", std::ios::trunc) << j.dump();
  const std::unique_ptr<Generator> g = hf::generator(f, {.threads = 1}, kTinyPresets);
  CHECK(g->add_bos());
  CHECK(g->bos_id() == 299);
  const GenerateResult r = g->generate("Once", {.max_new_tokens = 1});
  REQUIRE(!r.prompt_ids.empty());
  CHECK(r.prompt_ids.front() == 299);

  j["post_processor"]["processors"][1]["single"][0]["SpecialToken"]["id"] = "<s>";
  std::ofstream(f / "tokenizer.json", std::ios::trunc) << j.dump();
  CHECK_THAT(th::error_of([&] { hf::generator(f, {}, kTinyPresets); }),
             Catch::Contains("the template starts with \"<s>\", which is not in the vocabulary"));

  const fs::path k = copy_fixture(tmp, "qwen2");
  edit_config(k, [](nlohmann::json& c) { c["eos_token_id"] = 67; });
  CHECK_THAT(th::error_of([&] { hf::generator(k, {}, kTinyPresets); }),
             Catch::Contains("eos_token_id 67 is outside the vocabulary [0, 67)"));
}

TEST_CASE("the Generator's sessions use the loaded weights' storage, not a copy", "[hf]") {
  const hf::Model m = hf::load(fixture("qwen2"), kTinyPresets);
  Generator gen(*m.preset, m.weights, std::nullopt, {.threads = 1});  // Array copies share
  gen.step(std::vector<std::int32_t>{1, 2, 3}, 0);
  for (const auto& [name, a] : m.weights) {
    INFO(name);
    CHECK(gen.session().params().at(name).raw() == a.raw());
  }
  gen.reserve(500);  // a new session for a larger cache: the same storage again
  gen.step(std::vector<std::int32_t>{4}, 3);
  CHECK(gen.session().params().at("embed_tokens.weight").raw() ==
        m.weights.at("embed_tokens.weight").raw());
  // A weight in another dtype is converted to the graph's, once, for every session.
  NamedArrays bf16 = m.weights;
  bf16.insert_or_assign("norm.weight", m.weights.at("norm.weight").to(DType::bf16));
  Generator conv(*m.preset, bf16, std::nullopt, {.threads = 1});
  const Array logits = conv.step(std::vector<std::int32_t>{1, 2, 3}, 0);
  CHECK(conv.session().params().at("norm.weight").to_doubles() ==
        bf16.at("norm.weight").to_doubles());  // bf16 values, exact in f32
  CHECK(conv.session().params().at("norm.weight").dtype() == DType::f32);
  CHECK(logits.dims() == std::vector<std::int64_t>{1, 3, 67});
}
