// Text generation from a trained language model: loads a checkpoint of language_model<C> (its
// "stag.config" metadata names the config, which must be compiled in: models/lm_presets.hpp),
// tokenises the prompts, runs them through the cached decode-step graph (models/generate.hpp)
// in one pass or in chunks, then one token per step, sampling each next token (models/
// sampling.hpp), and times prefill and decoding separately. Several prompts of different
// lengths run as one batch (each row at its own cache position); a callback sees every token
// as it is sampled.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <stag/models/beam_search.hpp>
#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/char_tokenizer.hpp>
#include <stag/models/data/hf_tokenizer.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/models/sampling.hpp>
#include <stag/runtime/session.hpp>
#include <stag/runtime/train/checkpoint.hpp>

namespace stag {

// A character or byte-BPE tokeniser of stag's own, chosen by the "type" of its JSON ("char",
// "byte-bpe"), or a pretrained model's Hugging Face tokeniser (models/data/hf_tokenizer.hpp).
class TextTokenizer {
 public:
  explicit TextTokenizer(data::CharTokenizer t) : t_(std::move(t)) {}
  explicit TextTokenizer(data::BpeTokenizer t) : t_(std::move(t)) {}
  explicit TextTokenizer(data::HfTokenizer t) : t_(std::move(t)) {}
  static TextTokenizer from_json(std::string_view json);  // stag::Error on bad input
  static TextTokenizer load(const std::string& path);
  std::vector<std::int32_t> encode(std::string_view text) const;
  std::string decode(std::span<const std::int32_t> ids) const;  // special ids are skipped
  std::size_t vocab_size() const;
  std::string_view kind() const;  // "char", "byte-bpe" or "hugging-face"

 private:
  std::variant<data::CharTokenizer, data::BpeTokenizer, data::HfTokenizer> t_;
};

// Where a checkpoint's tokeniser is, in order: GeneratorOptions::tokenizer_path; the model
// config's "tokenizer" member (a JSON object: the tokeniser itself; a string: a path, relative
// to the checkpoint's folder); the metadata key "extra.tokenizer" (the same two forms);
// "tokenizer.json" next to the checkpoint. None of them: a stag::Error that says so. (A
// checkpoint fine-tuned from a Hugging Face folder names the folder instead, {"kind": "hf",
// "folder": ...}: models/hf.hpp's checkpoint_tokenizer_json; Generator reads it.) A path is a
// stag tokeniser's JSON, a Hugging Face tokenizer.json, or a model folder (its tokenizer.json,
// or vocab.json and merges.txt).
TextTokenizer checkpoint_tokenizer(const std::string& checkpoint, const std::string& config_json,
                                   const Metadata& extra, const std::string& override_path = {});

struct GeneratorOptions {
  int threads = 0;  // 0: every core
  // Where the decode steps run (Device::cuda: weights and caches on the GPU; the sampler and
  // beam search read each step's logits on the host).
  Device device = Device::cpu;
  Schedule schedule = Schedule::sequential;  // measured faster for one token at a time
  std::int64_t max_len =
      0;  // cache positions; 0: sized per call (prompt + new tokens, rounded up to 64)
  std::string tokenizer_path = {};  // overrides the checkpoint's tokeniser
  bool allow_nonfinite = false;     // load a checkpoint with NaN/Inf weights anyway
  // The ids that start and end a document: stag's tokenisers' <bos> and <eos> unless given (a
  // Hugging Face model's come from its config.json). -1: the model has none (an empty prompt
  // is then an error; without <eos>, generation stops only at max_new_tokens).
  std::int32_t bos_id = data::kBosId, eos_id = data::kEosId;
  // The lowest id beam search may produce (BeamSearchOptions::first_id): -1, eos_id, as stag's
  // tokenisers put padding, unknown and <bos> below <eos>; 0 for a Hugging Face vocabulary.
  std::int32_t first_token_id = -1;
  // Whether prompts start with <bos> when GenerateOptions::add_bos is unset; unset: as the
  // checkpoint's config says ("add_bos", false when absent).
  std::optional<bool> add_bos = std::nullopt;
  // Configs a checkpoint may have beyond lm_presets() (a program's own sizes, searched first;
  // they must outlive the Generator).
  std::span<const LmPreset> presets = {};
  // How the matmuls' weights are stored: f32, or bf16 (the preset's decode_bf16 graph: half
  // the memory and half the bytes read per token; every matmul then takes bf16 operands and
  // sums in f32, as under autocast). A weight given in f32 is rounded to bf16 once.
  DType weights = DType::f32;
};

struct GenerateOptions {
  int max_new_tokens = 64;
  SampleOptions sample = {};
  int prefill_chunk = 0;  // prompt tokens per step: 0 = the whole prompt in one pass
  // Start the prompt with <bos>: unset = as GeneratorOptions::add_bos or the checkpoint's config
  // says ("add_bos", false when absent). An empty prompt starts with <bos> then, else with
  // <eos> (the end of a previous document, as stag's corpora separate documents).
  std::optional<bool> add_bos = std::nullopt;
  bool stop_at_eos = true;  // stop after generating <eos>
  // Called for every new token, in order per row, before the next step runs. Returning false
  // stops that row (its last token is kept).
  std::function<bool(const TokenEvent&)> on_token = nullptr;
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

// The `select` input of a decode step (models/generate.hpp): one-hot rows picking position
// at[b] (0 .. chunk-1) of each row, [batch, 1, chunk]; or every position, [batch, chunk, chunk]
// (identities).
Array select_positions(std::span<const std::int32_t> at, std::int64_t chunk);
Array select_all_positions(std::int64_t batch, std::int64_t chunk);

class Generator {
 public:
  // From a checkpoint of language_model<C>. Optimizer state in it is ignored; a missing
  // parameter or a wrong shape is a stag::Error naming the tensor. A checkpoint fine-tuned
  // from a Hugging Face folder (stag-train lm --init-hf) encodes with the folder's tokeniser
  // and takes the folder's <bos> / <eos> ids as the run recorded them (opts' are replaced, as
  // hf::generator does, and first_token_id becomes 0; opts.add_bos, when set, still wins).
  Generator(const std::string& checkpoint, GeneratorOptions opts = {});
  // From parameters in memory (tests, programs that trained a model a moment ago).
  Generator(const LmPreset& preset, NamedArrays weights, std::optional<TextTokenizer> tokenizer,
            GeneratorOptions opts = {});
  ~Generator();

  GenerateResult generate(std::string_view prompt, const GenerateOptions& o = {});
  // The same on token ids (no tokeniser needed); text stays empty.
  GenerateResult generate_ids(std::vector<std::int32_t> prompt, const GenerateOptions& o = {});

  // Several prompts in one batch, each row at its own position: the same tokens per row as
  // generate() of each prompt alone (same options and seed). A row stops at <eos>, at its
  // max_new_tokens (`max_new_tokens[row]` when given, else o.max_new_tokens) or when the
  // callback says so; a stopped row is inactive in the steps that follow (its attention and
  // cache writes are skipped; its share of the batch's matmuls is not, until the batch
  // shrinks: with half the rows or fewer left, the live rows move to a smaller batch).
  // Prefill runs the prompts side by side in chunks of o.prefill_chunk (0: the longest
  // prompt); a row whose prompt is done decodes in the next step while longer prompts are
  // still prefilling. Times: prefill_seconds is each row's time to its first token.
  std::vector<GenerateResult> generate_batch(const std::vector<std::string>& prompts,
                                             const GenerateOptions& o = {},
                                             const std::vector<int>& max_new_tokens = {});
  std::vector<GenerateResult> generate_ids_batch(std::vector<std::vector<std::int32_t>> prompts,
                                                 const GenerateOptions& o = {},
                                                 const std::vector<int>& max_new_tokens = {});

  // Beam search from one prompt (models/beam_search.hpp): the prompt prefilled in each of the
  // beam_size rows, then one step per new token, each row's cache following its hypothesis'
  // parent row. The n-best continuations, best first (ids without <eos>); vocab_limit 0 means
  // the tokeniser's size; eos_id and bos_id are the generator's (eos_id(), bos_id()), first_id
  // unless given GeneratorOptions::first_token_id. The text of a hypothesis:
  // tokenizer()->decode(h.ids).
  std::vector<Hypothesis> beam_search(std::vector<std::int32_t> prompt, BeamSearchOptions o);

  // The logits [batch = 1, chunk, vocab] after feeding `ids` at positions pos .. pos+chunk-1
  // (the cache must hold positions < pos from earlier calls). For tests and custom loops.
  Array step(std::span<const std::int32_t> ids, std::int64_t pos);
  // The same for a batch: ids [batch, chunk] i32 and one position per row (-1: the row is
  // inactive this step). The session is made for this batch size on first use; a call with
  // another batch size starts a new one (and drops the cache).
  Array step(const Array& ids, std::span<const std::int32_t> pos);
  // The same, with the logits of one position per row only: [batch, 1, vocab], row b's those
  // of its token at[b] (0 .. chunk-1) of this step. The vocabulary head then runs on one
  // position per row instead of chunk (what a prefill needs: its last token's).
  Array step(const Array& ids, std::span<const std::int32_t> pos, std::span<const std::int32_t> at);
  // Makes sure the cache holds at least `positions` positions for `batch` rows (a new session
  // when it grows or the batch size changes).
  void reserve(std::int64_t positions, std::int64_t batch = 1);

  const LmPreset& preset() const { return *preset_; }
  const TextTokenizer* tokenizer() const { return tokenizer_ ? &*tokenizer_ : nullptr; }
  std::int64_t max_len() const { return max_len_; }
  std::int64_t batch() const { return batch_; }
  const Session& session() const;
  const CheckpointInfo& checkpoint_info() const { return info_; }
  // Whether prompts start with <bos> unless GenerateOptions::add_bos says otherwise.
  bool add_bos() const { return add_bos_; }
  // The <bos> and <eos> ids (GeneratorOptions; -1: none).
  std::int32_t bos_id() const { return opts_.bos_id; }
  std::int32_t eos_id() const { return opts_.eos_id; }

 private:
  const LmPreset* preset_ = nullptr;
  NamedArrays weights_;
  std::optional<TextTokenizer> tokenizer_;
  GeneratorOptions opts_;
  CheckpointInfo info_;
  std::unique_ptr<Session> session_;
  std::int64_t max_len_ = 0, batch_ = 0;
  bool add_bos_ = false;
  // Checks ids against the model's (or tokeniser's) vocabulary; `what` names the prompt.
  void check_ids(std::span<const std::int32_t> ids, const std::string& what) const;
  // Keeps only the given batch rows of the cache, in a new session of that many rows.
  void shrink_batch(const std::vector<std::size_t>& rows);
};

}  // namespace stag
