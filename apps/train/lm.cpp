// `stag-train lm`: the minimind-style language model on English fortunes, the Python docs or a
// text file of the user's, character-level or BPE, in windows of --max-len tokens; or, with
// --init-hf, a Hugging Face model fine-tuned on that text with its own tokenizer (lm_hf.hpp).
// Reports bits per character on the validation and test splits next to a character unigram
// model's. Presets: kLmTrainPresets (models/presets.hpp) and the Hugging Face ones.
#include <algorithm>
#include <functional>
#include <memory>

#include <stag/models/data/split.hpp>
#include <stag/models/data/text.hpp>
#include <stag/models/hf.hpp>
#include <stag/models/presets.hpp>
#include <stag/ops/attention/tiled_bf16.hpp>

#include <stag/models/eval/seq_metrics.hpp>

#include "common.hpp"
#include "lm_hf.hpp"
#include "tasks.hpp"
#include "tokenizer.hpp"

namespace stag::train_app {
namespace {

namespace fs = std::filesystem;

// Characters (UTF-8 code points) the token with this id stands for.
using CharsOf = std::function<double(std::int32_t)>;

struct LmEval {
  std::vector<Batch> batches;
  double chars = 0;  // characters the evaluated targets stand for
};

Batch lm_batch(const std::vector<std::int32_t>& stream, std::span<const std::size_t> starts,
               std::size_t seq) {
  data::LmBatch b = data::make_lm_batch(stream, starts, seq);
  return Batch{{{"ids", b.ids}, {"targets", b.targets}}, 0, static_cast<double>(b.ids.numel())};
}

// Every whole window of the stream in order, `batch` per batch (at most `limit` windows).
LmEval eval_windows(const std::vector<std::int32_t>& stream, std::size_t seq, std::size_t batch,
                    std::int64_t limit, const CharsOf& chars_of) {
  LmEval e;
  std::size_t windows = stream.size() > seq ? (stream.size() - 1) / seq : 0;
  if (limit > 0) windows = std::min(windows, static_cast<std::size_t>(limit));
  for (std::size_t w = 0; w < windows; w += batch) {
    std::vector<std::size_t> starts;
    for (std::size_t k = w; k < std::min(windows, w + batch); ++k) starts.push_back(k * seq);
    e.batches.push_back(lm_batch(stream, starts, seq));
    const Array& t = e.batches.back().inputs.at("targets");
    for (std::int64_t i = 0; i < t.numel(); ++i) e.chars += chars_of(t.data<std::int32_t>()[i]);
  }
  return e;
}

// A user's text file as documents: its paragraphs (separated by blank lines), or its lines when
// it has fewer than 20 paragraphs (too few to hold out a tenth for validation and for test).
data::Corpus load_text_corpus(const std::string& path) {
  if (!fs::is_regular_file(path))
    throw Error("stag-train lm: --data '" + path +
                "' is neither a data set (fortunes, pydoc) nor a text file");
  const std::string text = data::read_file(path, "--data", "");
  data::Corpus by_paragraph{path, {}}, by_line{path, {}};
  std::string paragraph;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + at, end - at);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (data::trim(line).empty()) {
      if (!paragraph.empty()) by_paragraph.documents.push_back(std::move(paragraph));
      paragraph.clear();
    } else {
      by_line.documents.emplace_back(line);
      paragraph += (paragraph.empty() ? "" : "\n") + std::string(line);
    }
    at = end + 1;
  }
  if (!paragraph.empty()) by_paragraph.documents.push_back(std::move(paragraph));
  data::Corpus& c = by_paragraph.documents.size() >= 20 ? by_paragraph : by_line;
  if (c.documents.size() < 10)
    throw Error("stag-train lm: --data '" + path + "' has " + std::to_string(c.documents.size()) +
                " non-empty lines; give at least 10, so that validation and test text can be "
                "held out");
  std::fprintf(stderr, "stag-train lm: %s: %zu documents (%s)\n", path.c_str(), c.documents.size(),
               &c == &by_paragraph ? "paragraphs" : "lines");
  return std::move(c);
}

// The run's text, split into train / val / test documents (--limit keeps the first training
// documents).
data::CorpusSplits lm_splits(const RunOptions& o) {
  const data::Corpus corpus = o.data == "fortunes" ? data::load_fortunes_corpus()
                              : o.data == "pydoc"  ? data::load_python_doc_corpus()
                                                   : load_text_corpus(o.data);
  data::CorpusSplits split = data::split_dataset(corpus, {.seed = 0});
  if (o.limit > 0)
    split.train.documents.resize(
        std::min(split.train.documents.size(), static_cast<std::size_t>(o.limit)));
  return split;
}

// What a language-model run trains on and evaluates, however its tokens were made.
struct LmData {
  data::CorpusSplits split;
  std::shared_ptr<const std::vector<std::int32_t>> train = {};
  std::vector<std::int32_t> val = {}, test = {};
  CharsOf chars_of = {};
};

// What differs between a run from scratch and a fine-tuning run.
struct LmModel {
  GraphView net;
  TrainingGraphs graphs;
  int d_model = 0;
  std::size_t tokenizer_vocab = 0;
  // After the Trainer is made, before training: resume, or load the pretrained weights.
  std::function<void(Trainer&)> init;
  // Evaluate the validation split before training (pretrained_val_bpc).
  bool evaluate_first = false;
  // After the final evaluation: write the model elsewhere (--export-hf).
  std::function<void(const Trainer&)> finish;
};

int train_lm(RunContext& ctx, const LmData& d, const nlohmann::ordered_json& config, LmModel m) {
  const RunOptions& o = ctx.opt;
  const auto seq = static_cast<std::size_t>(o.max_len), bs = static_cast<std::size_t>(o.batch_size);
  const auto seed = o.seed;
  const auto train = d.train;
  const DataSource source{
      [=](std::int64_t e) {
        return data::lm_window_batches(train->size(), seq, bs, seed, static_cast<std::uint64_t>(e))
            .size();
      },
      [=](std::int64_t e, std::size_t i) {
        // NOTE: the plan is cheap (a shuffle of window starts) and is rebuilt
        // per batch.
        const auto plan =
            data::lm_window_batches(train->size(), seq, bs, seed, static_cast<std::uint64_t>(e));
        return lm_batch(*train, plan[i], seq);
      }};
  const std::int64_t total = planned_steps(o, source.num_batches(0));
  Trainer trainer(std::move(m.graphs), trainer_options(ctx, total, m.d_model, config.dump()));
  print_model(ctx, config, m.net, m.tokenizer_vocab);
  m.init(trainer);

  const LmEval quick = eval_windows(d.val, seq, bs, o.eval_limit, d.chars_of);
  const LmEval full_val = eval_windows(d.val, seq, bs, o.test_limit, d.chars_of),
               full_test = eval_windows(d.test, seq, bs, o.test_limit, d.chars_of);
  if (full_val.batches.empty() || full_test.batches.empty())
    throw Error("stag-train lm: the validation or test split holds fewer than " +
                std::to_string(seq + 1) + " tokens (one window of --max-len " +
                std::to_string(seq) + "): give more text or a smaller --max-len");
  if (m.evaluate_first) {
    const EvalStats s = trainer.evaluate(full_val.batches);
    print_result("pretrained_val_bpc", s.bits_per_char(full_val.chars));
    print_result("pretrained_val_loss", s.loss);
  }
  if (!o.eval_only) {
    FitOptions fit = fit_options(ctx, "bpc", false);
    fit.evaluate = [&](Trainer& t) {
      const EvalStats s = t.evaluate(quick.batches);
      MetricsRecord r{.split = "valid"};
      r.set("loss", s.loss).set("bpc", s.bits_per_char(quick.chars)).set("accuracy", s.accuracy);
      return r;
    };
    trainer.fit(source, fit);
    write_run_files(ctx, m.net, config);
    if (o.keep_best && trainer.best_step() > 0) {
      trainer.load_weights(best_path(ctx));
      print_result("best_step", static_cast<double>(trainer.best_step()));
    }
  }
  const EvalStats vs = trainer.evaluate(full_val.batches), ts = trainer.evaluate(full_test.batches);
  print_result("val_bpc", vs.bits_per_char(full_val.chars));
  print_result("test_bpc", ts.bits_per_char(full_test.chars));
  const double unigram_bpc =
      eval::unigram_bits_per_char(d.split.train.documents, d.split.test.documents);
  print_result("unigram_bpc", unigram_bpc);
  print_result("val_loss", vs.loss);
  print_result("val_token_perplexity", vs.perplexity());
  print_result("val_token_accuracy", vs.accuracy);
  print_result("chars_per_token", full_test.chars / ts.count);
  print_result("steps", static_cast<double>(trainer.steps_done()));
  print_throughput(trainer, {vs, ts});
  print_result("checkpoint", !o.init_hf.empty() && o.eval_only && o.resume.empty() ? o.init_hf
                             : o.eval_only                                         ? ctx.resume
                             : o.keep_best && trainer.best_step() > 0              ? best_path(ctx)
                                                                      : ctx.checkpoint);
  print_step_memory(trainer);
  export_weights(ctx, trainer);
  if (m.finish) m.finish(trainer);
  require_above_chance(ctx, "test_bpc", ts.bits_per_char(full_test.chars),
                       "the unigram model's (unigram_bpc)", unigram_bpc, false);
  return 0;
}

template <const LmConfig& C>
struct Lm {
  static constexpr auto net = model([](Builder& g) { return language_model<C>(g); });

  static int run(RunContext& ctx) {
    const RunOptions& o = ctx.opt;
    LmData d{.split = lm_splits(o)};
    nlohmann::ordered_json config = run_config(ctx, C);
    const nlohmann::json saved =
        ctx.resume.empty() ? nlohmann::json() : checkpoint_config(ctx.resume, "lm", o.model);
    if (!ctx.resume.empty() && !o.eval_only) check_resume_flags(ctx.resume, saved, o);
    const auto tok = std::make_shared<const TextTokenizer>(
        !ctx.resume.empty() ? from_checkpoint(ctx.resume, "tokenizer",
                                              [&] {
                                                return TextTokenizer::from_json(
                                                    config_field(saved, "tokenizer", ctx.resume));
                                              })
                            : TextTokenizer::learn(o.tokenizer, d.split.train.documents,
                                                   static_cast<std::size_t>(C.vocab),
                                                   static_cast<std::size_t>(o.bpe_vocab)));
    if (tok->vocab_size() > static_cast<std::size_t>(C.vocab))
      throw Error("stag-train lm: the tokenizer has " + std::to_string(tok->vocab_size()) +
                  " ids, preset '" + o.model + "' only " + std::to_string(C.vocab));
    config["tokenizer"] = tok->to_json();
    d.train =
        std::make_shared<const std::vector<std::int32_t>>(data::encode_corpus(*tok, d.split.train));
    d.val = data::encode_corpus(*tok, d.split.val);
    d.test = data::encode_corpus(*tok, d.split.test);
    d.chars_of = [tok](std::int32_t id) { return tok->chars_of(id); };
    return train_lm(ctx, d, config,
                    {.net = net,
                     .graphs = graphs_for<net, kLmOptimizer, &C == &kLmTrainSmall>(ctx),
                     .d_model = C.d_model,
                     .tokenizer_vocab = tok->vocab_size(),
                     .init =
                         [&](Trainer& t) {
                           if (o.eval_only)
                             t.load_weights(ctx.resume);
                           else if (!ctx.resume.empty())
                             t.resume(ctx.resume);
                         },
                     .evaluate_first = false,
                     .finish = {}});
  }
};

// The code points of a token's text (UTF-8 bytes that do not continue a character; a byte-level
// token may hold part of one); a special token counts one when it ends a document (<eos>), else
// none.
std::vector<double> hf_chars_per_id(const data::HfTokenizer& tok, std::optional<std::int32_t> eos,
                                    std::int32_t vocab) {
  std::vector<double> chars(static_cast<std::size_t>(vocab), 0.0);
  const auto code_points = [](std::string_view bytes) {
    return static_cast<double>(std::count_if(bytes.begin(), bytes.end(), [](char c) {
      return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    }));
  };
  std::vector<bool> added(static_cast<std::size_t>(vocab), false);
  for (const data::AddedToken& a : tok.added_tokens())
    if (a.id >= 0 && a.id < vocab) added[static_cast<std::size_t>(a.id)] = true;
  const auto n = std::min<std::size_t>(tok.vocab_size(), static_cast<std::size_t>(vocab));
  for (std::size_t i = 0; i < n; ++i) {
    const auto id = static_cast<std::int32_t>(i);
    if (added[i] || tok.token(id).empty()) continue;
    if (!tok.sentencepiece()) {
      chars[i] = code_points(tok.decode(std::span(&id, 1)));
      continue;
    }
    // SentencePiece: "▁" is a space, "<0xAB>" one byte (decode would strip a leading space and
    // turn a lone byte into U+FFFD).
    const std::string& t = tok.token(id);
    if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>') {
      const unsigned byte = static_cast<unsigned>(std::stoul(t.substr(3, 2), nullptr, 16));
      chars[i] = (byte & 0xC0) != 0x80 ? 1 : 0;
      continue;
    }
    std::string text;
    for (std::size_t at = 0; at < t.size();) {
      if (t.compare(at, 3, "\xE2\x96\x81") == 0) {
        text += ' ';
        at += 3;
      } else {
        text += t[at++];
      }
    }
    chars[i] = code_points(text);
  }
  if (eos && *eos >= 0 && *eos < vocab) chars[static_cast<std::size_t>(*eos)] = 1;
  return chars;
}

// --init-hf DIR --resume CKPT: the checkpoint must come from a fine-tuning run of the same folder
// (its tokenizer encodes the text; the weights and optimizer state are the checkpoint's) with the
// flags that decide the batches.
void check_hf_resume(const std::string& path, const fs::path& folder, const RunOptions& o) {
  const nlohmann::json j = nlohmann::json::parse(read_checkpoint_info(path).config_json, nullptr,
                                                 /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("init_hf") || !j["init_hf"].is_string())
    throw Error("stag-train lm: --resume " + path +
                " was not fine-tuned from a Hugging Face folder (its config has no \"init_hf\"): "
                "resume it without --init-hf");
  const fs::path was = j["init_hf"].get<std::string>();
  std::error_code ec1, ec2;
  if (fs::weakly_canonical(was, ec1) != fs::weakly_canonical(folder, ec2))
    throw Error("stag-train lm: --resume " + path + " fine-tuned " + was.string() +
                ", not --init-hf " + folder.string() + ": pass --init-hf " + was.string());
  const nlohmann::json saved = checkpoint_config(path, "lm", o.model);
  if (!o.eval_only) check_resume_flags(path, saved, o);
}

// --init-hf DIR: the folder's model (its config.json picks the preset), its tokenizer, its
// <bos> / <eos> around each document.
int run_hf(RunContext& ctx) {
  RunOptions& o = ctx.opt;
  const fs::path folder = o.init_hf;
  const std::vector<LmPreset> presets = hf_presets_for_training();
  hf::Model m = hf::load(folder, presets, {.allow_nonfinite = o.allow_nonfinite});
  const LmConfig& c = *m.preset->config;
  const HfTrainable* trainable = find_hf_trainable(c);
  if (trainable == nullptr)
    throw Error("stag-train lm: --init-hf " + folder.string() + " is preset '" +
                std::string(m.preset->name) +
                "', whose training graph this program does not compile (lm_hf.hpp lists those "
                "it does)");
  if (c.arch == LmArch::gpt2 && o.max_len > c.max_positions)
    throw Error("stag-train lm: --max-len " + std::to_string(o.max_len) + " is longer than the " +
                std::to_string(c.max_positions) + " learned positions of " + folder.string() +
                " (n_positions)");
  o.precision = resolve_precision(o.precision, o.device == "cpu" && attn::cpu_has_bf16_dot(),
                                  trainable->graphs_bf16 != nullptr);
  const bool bf16 = o.precision == "bf16";
  if (bf16 && trainable->graphs_bf16 == nullptr)
    throw Error("stag-train lm: --precision bf16: the bf16 training graphs of preset '" +
                std::string(m.preset->name) +
                "' are not compiled into this program (HfTrainable::graphs_bf16, lm_hf.hpp); "
                "use --precision f32");
  o.model = std::string(m.preset->name);
  o.tokenizer = "hf";  // what print_model shows, and what --resume compares
  if (!o.resume.empty()) check_hf_resume(o.resume, folder, o);
  hf::FolderText text = hf::folder_text(folder, c.vocab);
  if (!text.tokenizer)
    throw Error("stag-train lm: --init-hf " + folder.string() +
                " has no tokeniser (no tokenizer.json, and no vocab.json with merges.txt)");
  auto tok = std::make_shared<const data::HfTokenizer>(std::move(*text.tokenizer));
  // <bos> before each document only where the tokeniser's template puts one before every text.
  const std::optional<std::int32_t> bos =
      text.add_bos ? std::optional<std::int32_t>(text.bos_id) : std::nullopt;
  const std::optional<std::int32_t> eos = m.config.eos_id;

  LmData d{.split = lm_splits(o)};
  const auto encode = [&](const data::Corpus& corpus) {
    std::vector<std::int32_t> stream;
    for (const std::string& doc : corpus.documents) {
      if (bos) stream.push_back(*bos);
      const std::vector<std::int32_t> ids = tok->encode(doc);
      stream.insert(stream.end(), ids.begin(), ids.end());
      if (eos) stream.push_back(*eos);
    }
    for (const std::int32_t id : stream)
      if (id < 0 || id >= c.vocab)
        throw Error("stag-train lm: the tokenizer of " + folder.string() + " gives id " +
                    std::to_string(id) + ", outside the model's vocabulary of " +
                    std::to_string(c.vocab));
    return stream;
  };
  d.train = std::make_shared<const std::vector<std::int32_t>>(encode(d.split.train));
  d.val = encode(d.split.val);
  d.test = encode(d.split.test);
  auto chars = std::make_shared<const std::vector<double>>(hf_chars_per_id(*tok, eos, c.vocab));
  d.chars_of = [chars](std::int32_t id) { return (*chars)[static_cast<std::size_t>(id)]; };

  nlohmann::ordered_json config = run_config(ctx, c);
  config["init_hf"] = fs::absolute(folder).string();
  config["tokenizer"] = nlohmann::ordered_json::parse(hf::checkpoint_tokenizer_json(folder, text));
  const NamedArrays weights = std::move(m.weights);
  return train_lm(ctx, d, config,
                  {.net = trainable->net,
                   .graphs = bf16 ? trainable->graphs_bf16() : trainable->graphs(),
                   .d_model = c.d_model,
                   .tokenizer_vocab = tok->vocab_size(),
                   .init =
                       [&](Trainer& t) {
                         if (o.resume.empty())
                           t.init_from(weights);
                         else if (o.eval_only)
                           t.load_weights(o.resume);
                         else
                           t.resume(o.resume);
                       },
                   .evaluate_first = !o.eval_only && o.resume.empty(),
                   .finish =
                       [&](const Trainer& t) {
                         if (o.export_hf.empty()) return;
                         NamedArrays tuned;  // the parameters, without the optimizer's moments
                         for (const auto& [name, value] : t.params())
                           if (weights.count(name)) tuned.emplace(name, value);
                         const bool bf16_file = m.config.torch_dtype == "bfloat16";
                         hf::save(o.export_hf, c, tuned, tok.get(),
                                  {.bf16 = bf16_file,
                                   .bos_id = m.config.bos_id,
                                   .eos_id = m.config.eos_id,
                                   .max_positions = m.config.max_positions > 0
                                                        ? m.config.max_positions
                                                        : hf::SaveOptions{}.max_positions});
                         print_result("export_hf", o.export_hf);
                         print_result("export_hf_dtype", bf16_file ? "BF16" : "F32");
                       }});
}

}  // namespace

int run_lm(RunContext& ctx) {
  if (!ctx.opt.init_hf.empty()) return run_hf(ctx);
  if (ctx.opt.model == "small" && ctx.opt.tokenizer != "char" && ctx.opt.resume.empty())
    throw Error(
        "stag-train lm: preset 'small' has a 256-id vocabulary for characters; use --model "
        "small-bpe for --tokenizer bpe");
  return with_preset<kLmTrainPresets>(
      ctx.opt.model, [&]<const LmConfig & C>() { return Lm<C>::run(ctx); },
      [&](const std::string& names) -> int {
        throw Error("stag-train lm: no preset '" + ctx.opt.model + "' (" + names + ")");
      });
}

}  // namespace stag::train_app
