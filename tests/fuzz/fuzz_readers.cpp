// The fuzz targets' bodies (see fuzz_targets.hpp): each feeds the bytes to one reader, the way a
// program reads a file, and uses what comes back so that a reader's garbage would show.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/char_tokenizer.hpp>
#include <stag/models/data/datasets.hpp>
#include <stag/models/data/pairs.hpp>
#include <stag/models/generator.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/train/metrics.hpp>

#include "fuzz_targets.hpp"
#include "train/tokenizer.hpp"

namespace stag::fuzz {
namespace {

namespace fs = std::filesystem;

std::string_view text_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

const fs::path& scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("stag_fuzz_" + std::to_string(::getpid()));
    fs::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(fs::temp_directory_path() / ("stag_fuzz_" + std::to_string(::getpid())), ec);
    });
    return d;
  }();
  return dir;
}

// Runs `f`; a stag::Error is a refused input, which is fine.
template <class F>
int refusing(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
  return 0;
}

// What a tokeniser must do once it loaded: encode and decode without failing.
template <class Tok>
void exercise(const Tok& tok) {
  const std::string sample = "The cat 猫 \xff!";
  const std::vector<std::int32_t> ids = tok.encode(sample);
  for (std::int32_t id : ids)
    if (id < 0 || static_cast<std::size_t>(id) >= tok.vocab_size()) std::abort();
  (void)tok.decode(ids);
  (void)tok.to_json();
}

}  // namespace

std::string scratch_file(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const fs::path p = scratch_dir() / name;
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return p.string();
}

int safetensors(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_file("model.safetensors", data, size);
  refusing([&] {
    const SafetensorsFile f = load_safetensors(path);
    for (const auto& [name, a] : f.tensors) (void)check_finite({{name, a}});
  });
  refusing([&] { (void)read_checkpoint_info(path); });
  // The store of a small model (a weight, a bias and their Adam moments), as a trainer loads.
  NamedArrays store;
  for (const char* suffix : {"", ".adam_m", ".adam_v"}) {
    store.emplace(std::string("lin.weight") + suffix, Array(DType::f32, {2, 3}));
    store.emplace(std::string("lin.bias") + suffix, Array(DType::f32, {3}));
  }
  store.emplace("step_count", Array(DType::i32, {1}));
  refusing([&] { (void)load_checkpoint(path, store); });
  refusing([&] {
    (void)load_checkpoint(path, store,
                          {.allow_missing = true,
                           .allow_unexpected = true,
                           .allow_nonfinite = true,
                           .expected_config = R"({"model": {"d": 3}})"});
  });
  return 0;
}

int char_tokenizer(const std::uint8_t* data, std::size_t size) {
  return refusing([&] { exercise(data::CharTokenizer::from_json(text_of(data, size))); });
}

int bpe_tokenizer(const std::uint8_t* data, std::size_t size) {
  return refusing([&] { exercise(data::BpeTokenizer::from_json(text_of(data, size))); });
}

int text_tokenizer(const std::uint8_t* data, std::size_t size) {
  // stag-generate's reader (a tokeniser file, or stag-train's wrapped form)...
  refusing([&] {
    const TextTokenizer t = TextTokenizer::from_json(text_of(data, size));
    const std::vector<std::int32_t> ids = t.encode("abc 猫");
    (void)t.decode(ids);
  });
  // ...and stag-train's, of the "tokenizer" in a checkpoint's config.
  const nlohmann::json j = nlohmann::json::parse(text_of(data, size), nullptr, false);
  if (!j.is_discarded())
    refusing([&] {
      const train_app::TextTokenizer t = train_app::TextTokenizer::from_json(j);
      (void)t.decode(t.encode("abc 猫"));
      (void)t.to_json();
    });
  return 0;
}

int metrics(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = text_of(data, size);
  for (std::size_t at = 0; at <= text.size();) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    refusing([&] { (void)metrics_json(parse_metrics_json(text.substr(at, end - at))); });
    at = end + 1;
  }
  const std::string path = scratch_file("metrics.jsonl", data, size);
  refusing([&] { (void)read_metrics(path); });
  refusing([&] {
    truncate_metrics(path, 3);
    (void)read_metrics(path);  // what truncate_metrics keeps must read back
  });
  refusing([&] {
    MetricsLog log(path);  // a torn last line is removed before appending
    log.write(MetricsRecord{.step = 4}.set("loss", 1.5));
  });
  return 0;
}

int sentiment(const std::uint8_t* data, std::size_t size) {
  for (const char* source : {"amazon", "imdb", "yelp"})
    scratch_file(std::string("sentiment/test/fixtures/") + source + ".json", data, size);
  return refusing([&] {
    const data::TextDataset d = data::load_sentiment(scratch_dir() / "sentiment");
    (void)d.label_counts();
  });
}

int spam(const std::uint8_t* data, std::size_t size) {
  const std::string_view raw = text_of(data, size);
  refusing([&] { (void)data::mail_subject_and_body(raw); });
  refusing(
      [&] { (void)data::mail_subject_and_body(raw, {.decode_mime = false, .strip_html = false}); });
  // The whole loader: the bytes as one mail in each of the package's five groups.
  for (const char* group : {"easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"})
    scratch_file(std::string("spam/data/") + group + "/00001.txt", data, size);
  refusing([&] { (void)data::load_spam_assassin(scratch_dir() / "spam").label_counts(); });
  return 0;
}

int fortunes(const std::uint8_t* data, std::size_t size) {
  // The bytes as every file the loaders read: an English file, one per language folder, and
  // fortunes-zh's two (see load_fortune_languages and load_chinese_sources).
  const std::string path = scratch_file("fortunes/en", data, size);
  for (const char* name : {"chinese", "tang300", "de/a", "es/a", "it/a", "ru/a", "pl/a", "cs/a"})
    scratch_file(std::string("fortunes/") + name, data, size);
  refusing([&] { (void)data::read_fortune_entries(path); });
  const fs::path dir = scratch_dir() / "fortunes";
  refusing([&] { (void)data::load_fortune_languages(dir).label_counts(); });
  refusing([&] { (void)data::load_fortune_languages(dir, 2).label_counts(); });
  refusing([&] { (void)data::load_chinese_sources(dir).label_counts(); });
  refusing([&] { (void)data::load_fortunes_corpus(dir).joined(); });
  return 0;
}

int python_doc(const std::uint8_t* data, std::size_t size) {
  scratch_file("python-doc/library/a.rst.txt", data, size);
  return refusing(
      [&] { (void)data::load_python_doc_corpus(scratch_dir() / "python-doc").bytes(); });
}

int tsv_pairs(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_file("pairs.tsv", data, size);
  refusing([&] { (void)data::load_tsv_pairs(path); });
  refusing([&] {
    (void)data::load_tsv_pairs(path, {.source_column = 2,
                                      .target_column = 0,
                                      .skip_comments = false,
                                      .allow_empty = true,
                                      .limit = 3});
  });
  return 0;
}

int gettext_mo(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_file("de.mo", data, size);
  refusing([&] { (void)data::load_gettext_pairs(path); });
  refusing([&] {
    (void)data::load_gettext_pairs(path, {.max_chars = 8, .single_line = false, .limit = 3});
  });
  return 0;
}

int cmudict(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_file("dict.txt", data, size);
  refusing([&] { (void)data::load_cmudict(path); });
  refusing([&] {
    (void)data::load_cmudict(
        path, {.strip_stress = true, .keep_alternates = true, .letters_only = false});
  });
  return 0;
}

int lm_config(const std::uint8_t* data, std::size_t size) {
  return refusing([&] {
    const LmConfig c = lm_config_from_json(text_of(data, size));
    (void)lm_config_text(c);
  });
}

}  // namespace stag::fuzz
