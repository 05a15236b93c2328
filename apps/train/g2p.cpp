// The sequence-to-sequence tasks of stag-train, one encoder-decoder Transformer (transformer<C>)
// trained the same way for both:
// - `g2p`: letters to phonemes on CMUdict (stress marks stripped: 39 phonemes, as in the usual
//   CMUdict G2P benchmark), split by word so that no test word is seen in training; reports
//   phoneme and word error rates.
// - `seq2seq --data FILE.tsv`: a user's own source<TAB>target pairs, characters to characters,
//   split by source (90/5/5); reports exact match, CER and chrF next to copying the source.
//   `--data` may also name compiled gettext catalogues (a .mo file or a folder of them, e.g.
//   /usr/share/locale/de/LC_MESSAGES): English messages and their translations.
// The validation and test splits are decoded with beam search (--beam, 1: greedy) over cached
// decode steps (stag::Seq2SeqGenerator); the periodic validation also decodes (greedily) up to
// 1,000 validation examples, so metrics.jsonl holds the error rate against training time.
// Presets: kSeq2SeqPresets and kTextSeq2SeqPresets (models/presets.hpp).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include <stag/models/data/pairs.hpp>
#include <stag/models/data/split.hpp>
#include <stag/models/data/text.hpp>
#include <stag/models/eval/seq_metrics.hpp>
#include <stag/models/presets.hpp>
#include <stag/models/seq2seq_generator.hpp>

#include "common.hpp"
#include "tasks.hpp"

namespace stag::train_app {
namespace {

constexpr AdamW kOptimizer{.hparams_as_inputs = true};
constexpr std::int64_t kCurveRows = 1000;  // validation examples decoded at each evaluation

// A batch for the Transformer (labels are -100 at padding, so padding does not count). Both
// sides are padded to a multiple of 8 positions: each shape is a plan (kernels and buffers),
// and sentences of 1-64 characters would otherwise make up to 64 x 65 of them.
Batch pair_batch(const data::EncodedPairs& d, std::span<const std::size_t> rows,
                 std::int64_t max_len) {
  const data::Seq2SeqBatch b = data::make_seq2seq_batch(
      d, rows, {.max_len = max_len, .multiple_of = 8}, {.max_len = max_len + 1, .multiple_of = 8});
  double tokens = 0;
  for (std::int64_t i = 0; i < b.tgt_keep.numel(); ++i) tokens += b.tgt_keep.data<bool>()[i];
  for (std::int64_t i = 0; i < b.src_keep.numel(); ++i) tokens += b.src_keep.data<bool>()[i];
  return Batch{b.inputs(), 0, tokens};
}

std::vector<std::size_t> all_rows(std::size_t n, std::int64_t limit) {
  std::vector<std::size_t> r(n);
  for (std::size_t i = 0; i < n; ++i) r[i] = i;
  return first_n(std::move(r), limit);
}

std::vector<Batch> eval_batches(const data::EncodedPairs& d, std::int64_t limit,
                                std::int64_t max_len) {
  const std::vector<std::size_t> rows = all_rows(d.src.size(), limit);
  std::vector<Batch> out;
  for (std::size_t k = 0; k < rows.size(); k += 256)
    out.push_back(pair_batch(
        d, std::span(rows).subspan(k, std::min<std::size_t>(256, rows.size() - k)), max_len));
  return out;
}

// What a task adds to the shared training: its data, encoded, and how it scores outputs.
struct Seq2SeqData {
  std::shared_ptr<const data::EncodedPairs> train;
  data::EncodedPairs val, test;
  std::int32_t vocab_limit = 0;  // target ids decoded: <eos> and up to here
  std::size_t src_vocab = 0;     // the tokenizer's ids, for the printed model size
  // Adds the task's error rates of `predicted` against the references of `rows` of `d` to `r`
  // under `prefix` ("val_", "test_", or "" in the metrics log).
  std::function<void(const data::EncodedPairs& d, std::span<const std::size_t> rows,
                     const std::vector<std::vector<std::int32_t>>& predicted,
                     const std::string& prefix, MetricsRecord& r)>
      score;
};

template <const TransformerConfig& C>
struct Seq2SeqTask {
  static constexpr auto net = model([](Builder& g) { return transformer<C>(g); });

  static std::vector<std::vector<std::int32_t>> decode(Trainer& trainer, const RunOptions& o,
                                                       const data::EncodedPairs& d,
                                                       std::span<const std::size_t> rows,
                                                       std::int32_t vocab_limit, int beam) {
    // The trainer's parameters, shared (not copied): the generator sees the current weights.
    Seq2SeqGenerator gen(seq2seq_graphs<C>(), trainer.params(),
                         {.threads = o.threads, .batch_rows = 128, .device = run_device(o)});
    // The preset's output layer may have more ids than the task uses: decode over <eos> and
    // the task's ids only (an untrained model would otherwise emit unused ids).
    return gen.generate_ids(d.src, rows,
                            {.search = {.beam_size = beam,
                                        .length_penalty = o.length_penalty,
                                        .vocab_limit = vocab_limit},
                             .max_src_len = o.max_len});
  }

  // Trains (or, with --eval-only, loads), then decodes the validation and test splits with the
  // beam and prints the results; `print_examples` shows a few test outputs.
  static int run(
      RunContext& ctx, nlohmann::ordered_json& config, const Seq2SeqData& data,
      const std::function<void(const std::vector<std::vector<std::int32_t>>&)>& print_examples) {
    const RunOptions& o = ctx.opt;
    const std::vector<std::size_t> lengths = data.train->lengths();
    const data::BatchingOptions plan{
        .batch_size = static_cast<std::size_t>(o.batch_size), .bucket = o.bucket, .seed = o.seed};
    const EpochBatches plan_of(lengths, plan);
    const std::int64_t max_len = o.max_len;
    const auto train = data.train;
    const DataSource source{
        [=](std::int64_t e) { return plan_of(e).size(); },
        [=](std::int64_t e, std::size_t i) { return pair_batch(*train, plan_of(e)[i], max_len); }};
    const std::int64_t total = planned_steps(o, plan_of(0).size());
    Trainer trainer(graphs_for<net, kOptimizer, /*Bf16=*/true>(ctx),
                    trainer_options(ctx, total, C.d_model, config.dump()));
    print_model(ctx, config, net, data.src_vocab);

    const std::vector<Batch> quick = eval_batches(data.val, o.eval_limit, max_len);
    const std::vector<std::size_t> curve_rows =
        all_rows(data.val.src.size(),
                 std::min<std::int64_t>(o.eval_limit > 0 ? o.eval_limit : kCurveRows, kCurveRows));
    const auto started = std::chrono::steady_clock::now();
    if (o.eval_only) {
      trainer.load_weights(ctx.resume);
    } else {
      if (!ctx.resume.empty()) trainer.resume(ctx.resume);
      FitOptions fit = fit_options(ctx, "token_accuracy", true);
      fit.evaluate = [&](Trainer& t) {
        const EvalStats s = t.evaluate(quick);
        MetricsRecord r{.split = "valid"};
        r.set("loss", s.loss).set("token_accuracy", s.accuracy);
        // The error rate over training time: greedy decoding of the first validation examples.
        const auto pred = decode(t, o, data.val, curve_rows, data.vocab_limit, 1);
        data.score(data.val, curve_rows, pred, "", r);
        r.set("train_seconds", t.totals().seconds);
        r.set("wall_seconds",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        return r;
      };
      trainer.fit(source, fit);
      write_run_files(ctx, net, config);
      if (o.keep_best && trainer.best_step() > 0) {
        trainer.load_weights(best_path(ctx));
        print_result("best_step", static_cast<double>(trainer.best_step()));
      }
    }
    const EvalStats vs = trainer.evaluate(eval_batches(data.val, o.test_limit, max_len));
    MetricsRecord results;
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<std::size_t> val_rows =
        all_rows(data.val.src.size(), o.test_limit > 0 ? o.test_limit : o.eval_limit);
    const std::vector<std::size_t> test_rows = all_rows(data.test.src.size(), o.test_limit);
    data.score(data.val, val_rows,
               decode(trainer, o, data.val, val_rows, data.vocab_limit, static_cast<int>(o.beam)),
               "val_", results);
    const auto t1 = std::chrono::steady_clock::now();
    const auto test_pred =
        decode(trainer, o, data.test, test_rows, data.vocab_limit, static_cast<int>(o.beam));
    const double test_secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    data.score(data.test, test_rows, test_pred, "test_", results);
    print_examples(test_pred);
    // Test metrics first (what scripts read), then validation.
    std::stable_partition(results.values.begin(), results.values.end(),
                          [](const auto& kv) { return kv.first.starts_with("test_"); });
    for (const auto& [name, value] : results.values) print_result(name, value);
    print_result("val_loss", vs.loss);
    print_result("val_token_accuracy", vs.accuracy);
    print_result("test_examples", static_cast<double>(test_rows.size()));
    print_result("beam", static_cast<double>(o.beam));
    print_result("decode_examples_per_s", static_cast<double>(test_rows.size()) / test_secs);
    print_result("decode_seconds",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    print_result("steps", static_cast<double>(trainer.steps_done()));
    print_throughput(trainer, {vs});
    print_result("checkpoint", o.eval_only                              ? ctx.resume
                               : o.keep_best && trainer.best_step() > 0 ? best_path(ctx)
                                                                        : ctx.checkpoint);
    print_step_memory(trainer);
    export_weights(ctx, trainer);
    // An empty output has error rate 1: g2p's phoneme error rate, seq2seq's character one.
    for (const char* rate : {"test_per", "test_cer"})
      if (const std::optional<double> v = results.get(rate))
        require_above_chance(ctx, rate, *v, "an empty output's", 1.0, false);
    return 0;
  }
};

template <const TransformerConfig& C>
int g2p_task(RunContext& ctx) {
  const RunOptions& o = ctx.opt;
  // Every pronunciation is loaded: the validation and test words are scored against all of a
  // word's (and its first alone); training sees the first, or all with --alternates. The words
  // of each split are the same either way (split_dataset keeps a word's alternates together).
  const data::G2pDataset ds =
      data::load_cmudict({}, {.strip_stress = true, .keep_alternates = true});
  data::G2pSplits split = data::split_dataset(ds, {.seed = 0});
  if (!o.alternates) split.train = data::group_pronunciations(split.train).first;
  if (o.limit > 0)
    split.train.examples.resize(
        std::min(split.train.examples.size(), static_cast<std::size_t>(o.limit)));
  const data::G2pWords val_words = data::group_pronunciations(split.val);
  const data::G2pWords test_words = data::group_pronunciations(split.test);

  nlohmann::ordered_json config = run_config(ctx, C);
  data::CharTokenizer letters;
  const data::SymbolVocab phonemes(ds.phoneme_set);
  if (!ctx.resume.empty()) {
    const nlohmann::json saved = checkpoint_config(ctx.resume, "g2p", o.model);
    if (!o.eval_only) check_resume_flags(ctx.resume, saved, o);
    letters = from_checkpoint(ctx.resume, "letters", [&] {
      return data::CharTokenizer::from_json(config_field(saved, "letters", ctx.resume).dump());
    });
    // The phoneme ids are the data's sorted phoneme set: a checkpoint trained on another set
    // would read every id as another phoneme.
    const nlohmann::json saved_phonemes = config_field(saved, "phonemes", ctx.resume);
    if (saved_phonemes != nlohmann::json(phonemes.symbols()))
      throw Error("stag-train g2p: --resume " + ctx.resume + ": its phonemes " +
                  saved_phonemes.dump() + " are not this data's " +
                  nlohmann::json(phonemes.symbols()).dump());
  } else {
    std::vector<std::string> words;
    for (const data::G2pExample& e : split.train.examples) words.push_back(e.word);
    letters = data::CharTokenizer::build(words);
  }
  if (letters.vocab_size() > static_cast<std::size_t>(C.src_vocab) ||
      phonemes.size() > static_cast<std::size_t>(C.tgt_vocab))
    throw Error("stag-train g2p: " + std::to_string(letters.vocab_size()) + " letters and " +
                std::to_string(phonemes.size()) + " phoneme ids do not fit preset '" + o.model +
                "'");
  config["letters"] = nlohmann::json::parse(letters.to_json());
  config["phonemes"] = phonemes.symbols();
  const auto several = [](const data::G2pWords& w) {
    return static_cast<std::size_t>(
        std::count_if(w.all.begin(), w.all.end(), [](const auto& p) { return p.size() > 1; }));
  };
  std::fprintf(stderr,
               "g2p: %zu training examples (%s), %zu validation and %zu test words (%zu and %zu "
               "with more than one pronunciation)\n",
               split.train.examples.size(),
               o.alternates ? "every pronunciation" : "first pronunciations", val_words.all.size(),
               test_words.all.size(), several(val_words), several(test_words));
  if (!o.export_data.empty()) {
    // The split as text, for tools/torch_g2p.py: the same words in PyTorch. Training examples
    // are [word, pronunciation], held-out words [word, [every pronunciation]].
    const auto joined = [](const std::vector<std::string>& phs) {
      std::string t;
      for (const std::string& p : phs) t += (t.empty() ? "" : " ") + p;
      return t;
    };
    nlohmann::json j = {{"phonemes", phonemes.symbols()}, {"train", nlohmann::json::array()}};
    for (const data::G2pExample& e : split.train.examples)
      j["train"].push_back({e.word, joined(e.phonemes)});
    for (const auto& [name, w] : {std::pair{"val", &val_words}, std::pair{"test", &test_words}}) {
      nlohmann::json rows = nlohmann::json::array();
      for (std::size_t i = 0; i < w->all.size(); ++i) {
        nlohmann::json prons = nlohmann::json::array();
        for (const auto& p : w->all[i]) prons.push_back(joined(p));
        rows.push_back({w->first.examples[i].word, prons});
      }
      j[name] = std::move(rows);
    }
    data::write_text_atomic(o.export_data, j.dump() + "\n", "stag-train g2p: --export-data: ");
  }
  Seq2SeqData d;
  d.train =
      std::make_shared<const data::EncodedPairs>(data::encode_g2p(letters, phonemes, split.train));
  d.val = data::encode_g2p(letters, phonemes, val_words.first);
  d.test = data::encode_g2p(letters, phonemes, test_words.first);
  d.vocab_limit = static_cast<std::int32_t>(phonemes.size());
  d.src_vocab = letters.vocab_size();
  using Refs = std::vector<std::vector<std::vector<std::int32_t>>>;
  const auto encode_all = [&](const data::G2pWords& w) {
    Refs refs;
    for (const auto& prons : w.all) {
      refs.emplace_back();
      for (const auto& p : prons) refs.back().push_back(phonemes.encode(p));
    }
    return refs;
  };
  const Refs val_refs = encode_all(val_words), test_refs = encode_all(test_words);
  // NOTE: `e` is d.val or d.test itself (Seq2SeqTask passes them by reference).
  d.score = [&](const data::EncodedPairs& e, std::span<const std::size_t> rows,
                const std::vector<std::vector<std::int32_t>>& pred, const std::string& prefix,
                MetricsRecord& r) {
    const eval::ErrorRates first = eval::error_rates(pred, data::gather(e.tgt, rows));
    const eval::ErrorRates any =
        eval::error_rates_any(pred, data::gather(&e == &d.val ? val_refs : test_refs, rows));
    r.set(prefix + "per", first.per)
        .set(prefix + "wer", first.wer)
        .set(prefix + "per_any", any.per)
        .set(prefix + "wer_any", any.wer);
  };
  return Seq2SeqTask<C>::run(ctx, config, d, [&](const std::vector<std::vector<std::int32_t>>& p) {
    for (std::size_t i = 0; i < 5 && i < p.size(); ++i) {
      std::string want, got;
      for (const auto& pron : test_words.all[i]) {
        want += want.empty() ? "" : " |";
        for (const std::string& ph : pron) want += " " + ph;
      }
      for (const std::string& ph : phonemes.decode(p[i])) got += " " + ph;
      std::fprintf(stderr, "  %-16s ->%s   (CMUdict:%s)\n",
                   test_words.first.examples[i].word.c_str(), got.c_str(), want.c_str());
    }
  });
}

template <const TransformerConfig& C>
int text_seq2seq_task(RunContext& ctx) {
  const RunOptions& o = ctx.opt;
  // A tab-separated file, or compiled gettext catalogues (a .mo file or a folder of them, such
  // as /usr/share/locale/de/LC_MESSAGES): messages longer than --max-len are left out there,
  // not cut, since half a message is not a translation of half of it.
  data::TextPairs pairs;
  const std::filesystem::path data_path(o.data);
  std::error_code ec;
  if (data_path.extension() == ".mo" || std::filesystem::is_directory(data_path, ec)) {
    const data::GettextPairs g =
        data::load_gettext_pairs(data_path, {.max_chars = static_cast<std::size_t>(o.max_len)});
    std::fprintf(stderr,
                 "seq2seq: %zu messages from %zu gettext catalogue(s) (%zu skipped: other "
                 "charsets), %zu entries left out (header, untranslated, several lines or over "
                 "--max-len %lld characters)\n",
                 g.src.size(), g.catalogues, g.catalogues_skipped, g.skipped,
                 static_cast<long long>(o.max_len));
    pairs = g;
  } else {
    pairs = data::load_tsv_pairs(data_path);
  }
  const data::SplitIndices split =
      data::split_by_key(pairs.src, {.train = 0.9, .val = 0.05, .test = 0.05, .seed = 0});
  std::vector<std::size_t> train_rows = first_n(split.train, o.limit);
  if (train_rows.empty() || split.val.empty() || split.test.empty())
    throw Error("stag-train seq2seq: " + o.data + " has " + std::to_string(pairs.src.size()) +
                " pairs, too few to split into training, validation and test (90/5/5 by source); "
                "give at least 40");
  const auto subset = [&](std::span<const std::size_t> rows) {
    data::TextPairs p;
    p.src = data::gather(pairs.src, rows);
    p.tgt = data::gather(pairs.tgt, rows);
    return p;
  };
  const data::TextPairs train = subset(train_rows), val = subset(split.val),
                        test = subset(split.test);

  nlohmann::ordered_json config = run_config(ctx, C);
  data::CharTokenizer src_tok, tgt_tok;
  if (!ctx.resume.empty()) {
    const nlohmann::json saved = checkpoint_config(ctx.resume, "seq2seq", o.model);
    if (!o.eval_only) check_resume_flags(ctx.resume, saved, o);
    src_tok = from_checkpoint(ctx.resume, "source_tokenizer", [&] {
      return data::CharTokenizer::from_json(
          config_field(saved, "source_tokenizer", ctx.resume).dump());
    });
    tgt_tok = from_checkpoint(ctx.resume, "target_tokenizer", [&] {
      return data::CharTokenizer::from_json(
          config_field(saved, "target_tokenizer", ctx.resume).dump());
    });
  } else {
    // The most frequent characters that fit the preset; the rest become <unk>.
    src_tok = data::CharTokenizer::build(train.src, 1, static_cast<std::size_t>(C.src_vocab));
    tgt_tok = data::CharTokenizer::build(train.tgt, 1, static_cast<std::size_t>(C.tgt_vocab));
  }
  if (src_tok.vocab_size() > static_cast<std::size_t>(C.src_vocab) ||
      tgt_tok.vocab_size() > static_cast<std::size_t>(C.tgt_vocab))
    throw Error("stag-train seq2seq: the tokenizers' " + std::to_string(src_tok.vocab_size()) +
                " and " + std::to_string(tgt_tok.vocab_size()) + " ids do not fit preset '" +
                o.model + "'");
  config["source_tokenizer"] = nlohmann::json::parse(src_tok.to_json());
  config["target_tokenizer"] = nlohmann::json::parse(tgt_tok.to_json());
  std::fprintf(stderr, "seq2seq: %zu pairs from %s (%zu train, %zu val, %zu test)\n",
               pairs.src.size(), o.data.c_str(), train.src.size(), val.src.size(), test.src.size());

  Seq2SeqData d;
  d.train = std::make_shared<const data::EncodedPairs>(data::encode_pairs(src_tok, tgt_tok, train));
  d.val = data::encode_pairs(src_tok, tgt_tok, val);
  d.test = data::encode_pairs(src_tok, tgt_tok, test);
  d.vocab_limit = static_cast<std::int32_t>(tgt_tok.vocab_size());
  d.src_vocab = src_tok.vocab_size();
  // Scores on text: the references as written in the file (not their tokenised form), and the
  // baseline of copying the source.
  // NOTE: `e` is d.val or d.test itself (Seq2SeqTask passes them by reference).
  const auto texts_of = [&](const data::EncodedPairs& e, std::span<const std::size_t> rows,
                            bool target) {
    const data::TextPairs& p = &e == &d.val ? val : test;
    return data::gather(target ? p.tgt : p.src, rows);
  };
  d.score = [&](const data::EncodedPairs& e, std::span<const std::size_t> rows,
                const std::vector<std::vector<std::int32_t>>& pred, const std::string& prefix,
                MetricsRecord& r) {
    std::vector<std::string> got;
    for (const auto& ids : pred) got.push_back(tgt_tok.decode(ids));
    const std::vector<std::string> want = texts_of(e, rows, true);
    std::size_t exact = 0;
    for (std::size_t i = 0; i < got.size(); ++i) exact += got[i] == want[i];
    r.set(prefix + "cer", eval::char_error_rate(got, want))
        .set(prefix + "exact_match", static_cast<double>(exact) / static_cast<double>(got.size()))
        .set(prefix + "chrf", eval::chrf(got, want));
    if (prefix.empty()) return;  // the periodic evaluation: no baseline
    const std::vector<std::string> copy = texts_of(e, rows, false);
    std::size_t copy_exact = 0;
    for (std::size_t i = 0; i < copy.size(); ++i) copy_exact += copy[i] == want[i];
    r.set(prefix + "copy_cer", eval::char_error_rate(copy, want))
        .set(prefix + "copy_exact_match",
             static_cast<double>(copy_exact) / static_cast<double>(copy.size()))
        .set(prefix + "copy_chrf", eval::chrf(copy, want));
  };
  return Seq2SeqTask<C>::run(ctx, config, d, [&](const std::vector<std::vector<std::int32_t>>& p) {
    for (std::size_t i = 0; i < 5 && i < p.size(); ++i)
      std::fprintf(stderr, "  %s\n    -> %s\n    (reference: %s)\n", test.src[i].c_str(),
                   tgt_tok.decode(p[i]).c_str(), test.tgt[i].c_str());
  });
}

}  // namespace

int run_g2p(RunContext& ctx) {
  return with_preset<kSeq2SeqPresets>(
      ctx.opt.model, [&]<const TransformerConfig & C>() { return g2p_task<C>(ctx); },
      [&](const std::string& names) -> int {
        throw Error("stag-train g2p: no preset '" + ctx.opt.model + "' (" + names + ")");
      });
}

int run_seq2seq(RunContext& ctx) {
  return with_preset<kTextSeq2SeqPresets>(
      ctx.opt.model, [&]<const TransformerConfig & C>() { return text_seq2seq_task<C>(ctx); },
      [&](const std::string& names) -> int {
        throw Error("stag-train seq2seq: no preset '" + ctx.opt.model + "' (" + names + ")");
      });
}

}  // namespace stag::train_app
