// A checkpoint fine-tuned from a Hugging Face folder (`stag-train lm --init-hf`) generates as the
// folder does: Generator(checkpoint) reads the folder's tokeniser and the <bos> / <eos> ids the
// run recorded (hf::checkpoint_tokenizer_json), for the tiny GPT-2 and Llama folders of
// tests/hf/, whose greedy continuations come from the float64 PyTorch reference
// (tools/make_hf_fixtures.py). Also: a moved folder, an older checkpoint without the ids, a
// tokeniser given instead, and TextTokenizer::load of Hugging Face files.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "harness.hpp"
#include "hf_presets.hpp"
#include "test_files.hpp"

#include <stag/models/generator.hpp>
#include <stag/models/hf.hpp>
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/train/safetensors.hpp>

namespace {

using namespace stag;
namespace fs = std::filesystem;
using th::kTinyPresets;

std::vector<std::int32_t> ints(const Array& a) {
  std::vector<std::int32_t> out;
  for (double v : a.to_doubles()) out.push_back(static_cast<std::int32_t>(v));
  return out;
}

// A checkpoint of `folder`'s weights as stag-train lm --init-hf saves one: {"model": config,
// "tokenizer": the folder's reference, edited by `edit`}.
fs::path write_checkpoint(const fs::path& path, const fs::path& folder,
                          const std::function<void(nlohmann::json&)>& edit = {}) {
  const hf::Model m = hf::load(folder, kTinyPresets);
  nlohmann::json tokenizer = nlohmann::json::parse(
      hf::checkpoint_tokenizer_json(folder, hf::folder_text(folder, m.preset->config->vocab)));
  if (edit) edit(tokenizer);
  const nlohmann::json config = {
      {"format", "stag-train/1"},
      {"task", "lm"},
      {"model", nlohmann::json::parse(lm_config_to_json(*m.preset->config))},
      {"tokenizer", tokenizer}};
  save_checkpoint(path.string(), m.weights, {}, config.dump());
  return path;
}

// The reference's greedy continuation of its prompt, up to and with config.json's <eos>.
std::vector<std::int32_t> reference_greedy(const fs::path& folder) {
  const SafetensorsFile ref = load_safetensors((folder / "reference.safetensors").string());
  const std::vector<std::int32_t> all = ints(ref.tensors.at("greedy/new"));
  const hf::HfConfig c = hf::read_config(folder);
  const auto stop = c.eos_id ? std::find(all.begin(), all.end(), *c.eos_id) : all.end();
  return {all.begin(), stop == all.end() ? stop : stop + 1};
}

GenerateResult greedy(Generator& g, const fs::path& folder) {
  const SafetensorsFile ref = load_safetensors((folder / "reference.safetensors").string());
  const std::vector<std::int32_t> prompt = ints(ref.tensors.at("greedy/prompt"));
  return g.generate_ids(
      prompt, {.max_new_tokens = static_cast<int>(ref.tensors.at("greedy/new").dims().back()),
               .sample = {.temperature = 0}});
}

}  // namespace

TEST_CASE("a checkpoint fine-tuned from a Hugging Face folder generates with its tokeniser and ids",
          "[hf]") {
  th::TempDir tmp("hf_checkpoint");
  for (const char* name : {"gpt2", "llama"}) {
    INFO(name);
    const fs::path folder = th::hf_fixture(name);
    const fs::path ckpt = write_checkpoint(tmp.dir / (std::string(name) + ".safetensors"), folder);
    Generator gen(ckpt.string(), {.threads = 1, .presets = kTinyPresets});
    const std::unique_ptr<Generator> direct = hf::generator(folder, {.threads = 1}, kTinyPresets);
    REQUIRE(gen.tokenizer() != nullptr);
    CHECK(gen.tokenizer()->kind() == "hugging-face");
    CHECK(gen.bos_id() == direct->bos_id());
    CHECK(gen.eos_id() == direct->eos_id());
    CHECK(gen.eos_id() == *hf::read_config(folder).eos_id);
    CHECK(gen.add_bos() == direct->add_bos());
    // The PyTorch reference's greedy tokens, stopping at config.json's <eos> (not stag's).
    CHECK(greedy(gen, folder).new_ids == reference_greedy(folder));
    // Text through the folder's own tokeniser, and any id may be produced by beam search.
    const std::string prompt = "Once upon a time there was";
    const GenerateResult r =
        gen.generate(prompt, {.max_new_tokens = 3, .sample = {.temperature = 0}});
    CHECK(r.prompt_ids == data::HfTokenizer::load(folder).encode(prompt));
    CHECK(r.new_ids ==
          direct->generate(prompt, {.max_new_tokens = 3, .sample = {.temperature = 0}}).new_ids);
  }
}

TEST_CASE("a fine-tuned checkpoint whose Hugging Face folder moved, or an older one without ids",
          "[hf]") {
  th::TempDir tmp("hf_checkpoint_moved");
  const fs::path folder = tmp.dir / "llama";
  fs::copy(th::hf_fixture("llama"), folder, fs::copy_options::recursive);
  const fs::path ckpt = write_checkpoint(tmp.dir / "tuned.safetensors", folder);
  const fs::path old = write_checkpoint(tmp.dir / "old.safetensors", folder, [](nlohmann::json& j) {
    j.erase("bos_id");
    j.erase("eos_id");
    j.erase("add_bos");
  });
  const std::int32_t eos = *hf::read_config(folder).eos_id;
  {
    Generator g(old.string(), {.threads = 1, .presets = kTinyPresets});  // ids from config.json
    CHECK(g.eos_id() == eos);
    CHECK(greedy(g, folder).new_ids == reference_greedy(folder));
  }
  fs::remove_all(folder);
  CHECK_THAT(th::error_of([&] { Generator(ckpt.string(), {.presets = kTinyPresets}); }),
             Catch::Contains("was fine-tuned from the Hugging Face folder " + folder.string() +
                             ", which is not there any more: its tokeniser comes from it (give "
                             "the folder, or its tokenizer.json, as the tokeniser"));
  CHECK_THAT(th::error_of([&] { Generator(old.string(), {.presets = kTinyPresets}); }),
             Catch::Contains("its tokeniser and <bos> / <eos> ids come from it"));
  // The tokeniser given instead (its tokenizer.json, or a folder): the recorded ids are used.
  for (const fs::path& given :
       {th::hf_fixture("llama") / "tokenizer.json", th::hf_fixture("llama")}) {
    INFO(given);
    Generator g(ckpt.string(),
                {.threads = 1, .tokenizer_path = given.string(), .presets = kTinyPresets});
    CHECK(g.tokenizer()->kind() == "hugging-face");
    CHECK(g.eos_id() == eos);
    CHECK(greedy(g, th::hf_fixture("llama")).new_ids == reference_greedy(th::hf_fixture("llama")));
  }
}

TEST_CASE("a fine-tuned checkpoint's recorded ids are checked", "[hf]") {
  th::TempDir tmp("hf_checkpoint_ids");
  const fs::path folder = th::hf_fixture("gpt2");
  const fs::path bad = write_checkpoint(tmp.dir / "bad.safetensors", folder,
                                        [](nlohmann::json& j) { j["eos_id"] = 300; });
  CHECK_THAT(th::error_of([&] { Generator(bad.string(), {.presets = kTinyPresets}); }),
             Catch::Contains("its config's tokenizer.eos_id 300 is not an id of the model's "
                             "vocabulary [0, 300)"));
  const fs::path none = write_checkpoint(tmp.dir / "none.safetensors", folder,
                                         [](nlohmann::json& j) { j.erase("folder"); });
  CHECK_THAT(th::error_of([&] { Generator(none.string(), {.presets = kTinyPresets}); }),
             Catch::Contains("names no \"folder\""));
  // A config.json without bos_token_id: null in the checkpoint, -1 (none) in the Generator.
  const fs::path copy = tmp.dir / "gpt2";
  fs::copy(folder, copy, fs::copy_options::recursive);
  nlohmann::json c = nlohmann::json::parse(std::ifstream(copy / "config.json"));
  REQUIRE(c.contains("bos_token_id"));
  c.erase("bos_token_id");
  std::ofstream(copy / "config.json", std::ios::trunc) << c.dump(2);
  const nlohmann::json j =
      nlohmann::json::parse(hf::checkpoint_tokenizer_json(copy, hf::folder_text(copy, 300)));
  CHECK(j["bos_id"].is_null());
  CHECK(j["eos_id"] == 299);
  CHECK(j["add_bos"] == false);
  CHECK(j["folder"] == fs::absolute(copy).lexically_normal().string());
  const fs::path ok = write_checkpoint(tmp.dir / "ok.safetensors", copy);
  Generator g(ok.string(), {.threads = 1, .presets = kTinyPresets});
  CHECK(g.bos_id() == -1);
  CHECK(g.eos_id() == 299);
  // Without a compiled-in config or one of GeneratorOptions::presets, the error lists both.
  CHECK_THAT(th::error_of([&] { Generator(ok.string()); }),
             Catch::Contains("no compiled-in language model has the config"));
}

TEST_CASE("TextTokenizer::load reads a Hugging Face tokenizer.json or a model folder", "[hf]") {
  const TextTokenizer json =
      TextTokenizer::load((th::hf_fixture("llama") / "tokenizer.json").string());
  const TextTokenizer dir = TextTokenizer::load(th::hf_fixture("gpt2").string());
  CHECK(json.kind() == "hugging-face");
  CHECK(dir.kind() == "hugging-face");
  const std::string text = "Once upon a time";
  CHECK(json.encode(text) == data::HfTokenizer::load(th::hf_fixture("llama")).encode(text));
  CHECK(dir.encode(text) == data::HfTokenizer::load(th::hf_fixture("gpt2")).encode(text));
  CHECK_THAT(th::error_of([&] { TextTokenizer::load(th::hf_fixture("qwen2").string()); }),
             Catch::Contains("no tokenizer.json"));
}
