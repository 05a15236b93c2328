// Text generation from a trained language model: loads a checkpoint of language_model<C> (its
// "stag.config" metadata names the config, which must be compiled in: models/lm_presets.hpp),
// tokenises the prompt, runs the prompt through the cached decode-step graph (models/
// generate.hpp) in one pass or in chunks, then one token per step, sampling each next token
// (models/sampling.hpp), and times prefill and decoding separately.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/char_tokenizer.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/models/sampling.hpp>
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/session.hpp>

namespace stag {

// A character or byte-BPE tokeniser, chosen by the "type" of its JSON ("char", "byte-bpe").
class TextTokenizer {
 public:
  explicit TextTokenizer(data::CharTokenizer t) : t_(std::move(t)) {}
  explicit TextTokenizer(data::BpeTokenizer t) : t_(std::move(t)) {}
  static TextTokenizer from_json(std::string_view json);  // stag::Error on bad input
  static TextTokenizer load(const std::string& path);
  std::vector<std::int32_t> encode(std::string_view text) const;
  std::string decode(std::span<const std::int32_t> ids) const;  // special ids are skipped
  std::size_t vocab_size() const;
  std::string_view kind() const;  // "char" or "byte-bpe"

 private:
  std::variant<data::CharTokenizer, data::BpeTokenizer> t_;
};

// Where a checkpoint's tokeniser is, in order: GeneratorOptions::tokenizer_path; the model
// config's "tokenizer" member (a JSON object: the tokeniser itself; a string: a path, relative
// to the checkpoint's folder); the metadata key "extra.tokenizer" (the same two forms);
// "tokenizer.json" next to the checkpoint. None of them: a stag::Error that says so.
TextTokenizer checkpoint_tokenizer(const std::string& checkpoint, const std::string& config_json,
                                   const Metadata& extra, const std::string& override_path = {});

struct GeneratorOptions {
  int threads = 0;                           // 0: every core
  Schedule schedule = Schedule::sequential;  // measured faster for one token at a time
  std::int64_t max_len =
      0;  // cache positions; 0: sized per call (prompt + new tokens, rounded up to 64)
  std::string tokenizer_path = {};  // overrides the checkpoint's tokeniser
  bool allow_nonfinite = false;     // load a checkpoint with NaN/Inf weights anyway
};

struct GenerateOptions {
  int max_new_tokens = 64;
  SampleOptions sample = {};
  int prefill_chunk = 0;  // prompt tokens per step: 0 = the whole prompt in one pass
  // Start the prompt with <bos>: unset = as the checkpoint's config says ("add_bos", false when
  // absent). An empty prompt starts with <bos> then, else with <eos> (the end of a previous
  // document, as stag's corpora separate documents).
  std::optional<bool> add_bos = std::nullopt;
  bool stop_at_eos = true;  // stop after generating <eos>
};

struct GenerateResult {
  std::vector<std::int32_t> prompt_ids;
  std::vector<std::int32_t> new_ids;  // generated, <eos> included when it stopped there
  std::string text;                   // the decoded new tokens
  // Prefill: the prompt's tokens in prefill_seconds (including sampling the first new token).
  // Decode: each step feeds one token and samples the next. Plans (kernels, memory) are made
  // before the clock starts and reported apart, in setup_seconds.
  std::int64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0, setup_seconds = 0;
  double prefill_tokens_per_s() const {
    return prefill_seconds > 0 ? prefill_tokens / prefill_seconds : 0;
  }
  double decode_tokens_per_s() const {
    return decode_seconds > 0 ? decode_tokens / decode_seconds : 0;
  }
};

class Generator {
 public:
  // From a checkpoint of language_model<C>. Optimizer state in it is ignored; a missing
  // parameter or a wrong shape is a stag::Error naming the tensor.
  Generator(const std::string& checkpoint, GeneratorOptions opts = {});
  // From parameters in memory (tests, programs that trained a model a moment ago).
  Generator(const LmPreset& preset, NamedArrays weights, std::optional<TextTokenizer> tokenizer,
            GeneratorOptions opts = {});
  ~Generator();

  GenerateResult generate(std::string_view prompt, const GenerateOptions& o = {});
  // The same on token ids (no tokeniser needed); text stays empty.
  GenerateResult generate_ids(std::vector<std::int32_t> prompt, const GenerateOptions& o = {});

  // The logits [batch = 1, chunk, vocab] after feeding `ids` at positions pos .. pos+chunk-1
  // (the cache must hold positions < pos from earlier calls). For tests and custom loops.
  Array step(std::span<const std::int32_t> ids, std::int64_t pos);
  // Makes sure the cache holds at least `positions` positions (a new session when it grows).
  void reserve(std::int64_t positions);

  const LmPreset& preset() const { return *preset_; }
  const TextTokenizer* tokenizer() const { return tokenizer_ ? &*tokenizer_ : nullptr; }
  std::int64_t max_len() const { return max_len_; }
  const Session& session() const;
  const CheckpointInfo& checkpoint_info() const { return info_; }
  // Whether prompts start with <bos> unless GenerateOptions::add_bos says otherwise.
  bool add_bos() const { return add_bos_; }

 private:
  const LmPreset* preset_ = nullptr;
  NamedArrays weights_;
  std::optional<TextTokenizer> tokenizer_;
  GeneratorOptions opts_;
  CheckpointInfo info_;
  std::unique_ptr<Session> session_;
  std::int64_t max_len_ = 0;
  bool add_bos_ = false;
};

}  // namespace stag
