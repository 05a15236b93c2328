// Translator (see translator.hpp): the checkpoint's config names the task and the preset; the
// preset's inference graphs are compiled in (models/presets.hpp), the tokenizers come from the
// config, the weights from the file.
#include <algorithm>
#include <optional>

#include <nlohmann/json.hpp>

#include <stag/models/data/batch.hpp>
#include <stag/models/presets.hpp>
#include <stag/models/translator.hpp>
#include <stag/runtime/train/checkpoint.hpp>

namespace stag {
namespace {

nlohmann::json config_json_of(const TransformerConfig& c) {
  return {
      {"src_vocab", c.src_vocab},   {"tgt_vocab", c.tgt_vocab},   {"shared_vocab", c.shared_vocab},
      {"d_model", c.d_model},       {"heads", c.heads},           {"d_ff", c.d_ff},
      {"enc_layers", c.enc_layers}, {"dec_layers", c.dec_layers}, {"pre_norm", c.pre_norm}};
}

struct Found {
  Seq2SeqGraphs graphs;
  nlohmann::json model;  // the preset's dims, as the checkpoint's "model" writes them
};

template <const auto& Table>
std::optional<Found> find_preset(const std::string& name) {
  return with_preset<Table>(
      name,
      [&]<const TransformerConfig & C>() -> std::optional<Found> {
        return Found{seq2seq_graphs<C>(), config_json_of(C)};
      },
      [](const std::string&) -> std::optional<Found> { return std::nullopt; });
}

}  // namespace

struct Translator::Impl {
  std::unique_ptr<Seq2SeqGenerator> gen;
  data::CharTokenizer source;
  std::optional<data::CharTokenizer> target_chars;
  std::optional<data::SymbolVocab> target_symbols;
  bool lowercase = false;
  std::int32_t vocab_limit = 0;
};

Translator::Translator(const std::string& checkpoint, TranslatorOptions options)
    : impl_(std::make_unique<Impl>()) {
  const CheckpointInfo info = read_checkpoint_info(checkpoint);
  const auto fail = [&](const std::string& what) {
    throw Error("stag::Translator: checkpoint " + checkpoint + ": " + what);
  };
  const nlohmann::json config = nlohmann::json::parse(info.config_json, nullptr, false);
  if (!config.is_object() || !config.contains("task") || !config["task"].is_string())
    fail("its stag.config names no task (not a checkpoint of stag-train g2p or seq2seq)");
  task_ = config["task"].get<std::string>();
  if (task_ != "g2p" && task_ != "seq2seq")
    fail("it is a '" + task_ + "' checkpoint, not an encoder-decoder one (g2p, seq2seq)" +
         (task_ == "lm" ? "; stag-generate samples from it without translation mode" : ""));
  if (!config.contains("preset") || !config["preset"].is_string())
    fail("its stag.config names no preset");
  preset_ = config["preset"].get<std::string>();
  const std::optional<Found> found = task_ == "g2p" ? find_preset<kSeq2SeqPresets>(preset_)
                                                    : find_preset<kTextSeq2SeqPresets>(preset_);
  if (!found) fail("preset '" + preset_ + "' of task " + task_ + " is not compiled into stag");
  if (config.contains("model") && config["model"].is_object())
    for (const auto& [key, value] : found->model.items())
      if (config["model"].contains(key) && config["model"][key] != value)
        fail("its model has " + key + " " + config["model"][key].dump() + ", preset '" + preset_ +
             "' has " + value.dump() + " (trained with another build of stag?)");

  // The parameters of both graphs, filled from the file (optimizer state in it is ignored).
  NamedArrays weights = seq2seq_weights(found->graphs);
  load_checkpoint(checkpoint, weights,
                  {.allow_unexpected = true,
                   .allow_nonfinite = options.allow_nonfinite,
                   .expected_config = nlohmann::json{{"model", found->model}}.dump()});

  const auto field = [&](const char* key) -> const nlohmann::json& {
    if (!config.contains(key)) fail(std::string("its stag.config has no \"") + key + "\"");
    return config[key];
  };
  const auto tokenizer = [&](const char* key) {
    try {
      return data::CharTokenizer::from_json(field(key).dump());
    } catch (const Error& e) {
      fail(std::string("stag.config field \"") + key + "\": " + e.what());
    }
    return data::CharTokenizer{};
  };
  Impl& m = *impl_;
  if (task_ == "g2p") {
    m.source = tokenizer("letters");
    const nlohmann::json& ph = field("phonemes");
    std::vector<std::string> symbols;
    if (ph.is_array())
      for (const nlohmann::json& s : ph)
        if (s.is_string()) symbols.push_back(s.get<std::string>());
    if (!ph.is_array() || symbols.size() != ph.size() || symbols.empty())
      fail("stag.config field \"phonemes\" is not a list of phoneme names");
    m.target_symbols.emplace(std::move(symbols));
    m.vocab_limit = static_cast<std::int32_t>(m.target_symbols->size());
    m.lowercase = true;
  } else {
    m.source = tokenizer("source_tokenizer");
    m.target_chars = tokenizer("target_tokenizer");
    m.vocab_limit = static_cast<std::int32_t>(m.target_chars->vocab_size());
  }
  if (m.source.vocab_size() > static_cast<std::size_t>(found->graphs.src_vocab) ||
      m.vocab_limit > found->graphs.tgt_vocab)
    fail("its tokenizers have more ids than the model");
  m.gen = std::make_unique<Seq2SeqGenerator>(
      found->graphs, std::move(weights),
      Seq2SeqGeneratorOptions{
          .threads = options.threads, .batch_rows = options.batch_rows, .device = options.device});
}

Translator::~Translator() = default;

std::string Translator::task_of(const std::string& checkpoint) {
  const nlohmann::json config =
      nlohmann::json::parse(read_checkpoint_info(checkpoint).config_json, nullptr, false);
  if (config.is_object() && config.contains("task") && config["task"].is_string())
    return config["task"].get<std::string>();
  return "";
}

std::vector<std::vector<Translation>> Translator::translate(const std::vector<std::string>& lines,
                                                            const Seq2SeqGenerateOptions& options) {
  Impl& m = *impl_;
  std::vector<std::vector<std::int32_t>> sources(lines.size());
  std::vector<std::size_t> rows;
  std::size_t longest = 0;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string text = lines[i];
    if (m.lowercase)
      std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) {
        return static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
      });
    sources[i] = m.source.encode(text);
    if (sources[i].empty()) continue;
    rows.push_back(i);
    longest = std::max(longest, sources[i].size());
  }
  std::vector<std::vector<Translation>> out(lines.size());
  if (rows.empty()) return out;
  Seq2SeqGenerateOptions o = options;
  if (o.search.vocab_limit <= 0 || o.search.vocab_limit > m.vocab_limit)
    o.search.vocab_limit = m.vocab_limit;
  if (o.max_new == 0) o.max_new = static_cast<std::int64_t>(2 * longest + 10);
  const std::vector<std::vector<Hypothesis>> found = m.gen->generate(sources, rows, o);
  for (std::size_t k = 0; k < rows.size(); ++k)
    for (const Hypothesis& h : found[k]) {
      Translation t{.text = {},
                    .ids = h.ids,
                    .log_prob = h.log_prob,
                    .score = h.score,
                    .finished = h.finished};
      if (m.target_symbols) {
        for (const std::string& s : m.target_symbols->decode(h.ids))
          t.text += (t.text.empty() ? "" : " ") + s;
      } else {
        t.text = m.target_chars->decode(h.ids);
      }
      out[rows[k]].push_back(std::move(t));
    }
  return out;
}

}  // namespace stag
