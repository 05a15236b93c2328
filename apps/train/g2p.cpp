// `stag-train g2p`: the encoder-decoder Transformer from letters to phonemes on CMUdict (stress
// marks stripped: 39 phonemes, as in the usual CMUdict G2P benchmark), split by word so that no
// test word is seen in training. Greedy decoding recomputes the decoder on the prefix at each
// step (words are short; stag::greedy_decode_seq2seq); reports phoneme and word error rates.
// Presets: kSeq2SeqPresets (models/presets.hpp).
#include <algorithm>
#include <chrono>
#include <memory>

#include <stag/models/data/split.hpp>
#include <stag/models/presets.hpp>

#include <stag/models/eval/seq_metrics.hpp>
#include <stag/models/seq2seq_decode.hpp>

#include "common.hpp"
#include "tasks.hpp"

namespace stag::train_app {
namespace {

constexpr AdamW kOptimizer{.hparams_as_inputs = true};

// A batch for the Transformer (labels are -100 at padding, so padding does not count).
Batch g2p_batch(const data::EncodedPairs& d, std::span<const std::size_t> rows,
                std::int64_t max_len) {
  const data::Seq2SeqBatch b =
      data::make_seq2seq_batch(d, rows, {.max_len = max_len}, {.max_len = max_len + 1});
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
    out.push_back(g2p_batch(
        d, std::span(rows).subspan(k, std::min<std::size_t>(256, rows.size() - k)), max_len));
  return out;
}

template <const TransformerConfig& C>
struct G2p {
  static constexpr auto net = model([](Builder& g) { return transformer<C>(g); });

  static int run(RunContext& ctx) {
    const RunOptions& o = ctx.opt;
    const data::G2pDataset ds = data::load_cmudict({}, {.strip_stress = true});
    data::G2pSplits split = data::split_dataset(ds, {.seed = 0});
    if (o.limit > 0)
      split.train.examples.resize(
          std::min(split.train.examples.size(), static_cast<std::size_t>(o.limit)));

    nlohmann::ordered_json config = run_config(ctx, C);
    data::CharTokenizer letters;
    if (!ctx.resume.empty()) {
      const nlohmann::json saved = checkpoint_config(ctx.resume, "g2p", o.model);
      if (!o.eval_only) check_resume_flags(ctx.resume, saved, o);
      letters = from_checkpoint(ctx.resume, "letters", [&] {
        return data::CharTokenizer::from_json(config_field(saved, "letters", ctx.resume).dump());
      });
    } else {
      std::vector<std::string> words;
      for (const data::G2pExample& e : split.train.examples) words.push_back(e.word);
      letters = data::CharTokenizer::build(words);
    }
    const data::SymbolVocab phonemes(ds.phoneme_set);
    if (letters.vocab_size() > static_cast<std::size_t>(C.src_vocab) ||
        phonemes.size() > static_cast<std::size_t>(C.tgt_vocab))
      throw Error("stag-train g2p: " + std::to_string(letters.vocab_size()) + " letters and " +
                  std::to_string(phonemes.size()) + " phoneme ids do not fit preset '" + o.model +
                  "'");
    config["letters"] = nlohmann::json::parse(letters.to_json());
    config["phonemes"] = phonemes.symbols();
    const auto train = std::make_shared<const data::EncodedPairs>(
        data::encode_g2p(letters, phonemes, split.train));
    const data::EncodedPairs val = data::encode_g2p(letters, phonemes, split.val),
                             test = data::encode_g2p(letters, phonemes, split.test);

    const std::vector<std::size_t> lengths = train->lengths();
    const data::BatchingOptions plan{
        .batch_size = static_cast<std::size_t>(o.batch_size), .bucket = o.bucket, .seed = o.seed};
    const EpochBatches plan_of(lengths, plan);
    const std::int64_t max_len = o.max_len;
    const DataSource source{
        [=](std::int64_t e) { return plan_of(e).size(); },
        [=](std::int64_t e, std::size_t i) { return g2p_batch(*train, plan_of(e)[i], max_len); }};
    const std::int64_t total = planned_steps(o, plan_of(0).size());
    Trainer trainer(training_graphs<net, kOptimizer>(),
                    trainer_options(ctx, total, C.d_model, config.dump()));
    print_model(ctx, config, net, letters.vocab_size());

    const std::vector<Batch> quick = eval_batches(val, o.eval_limit, max_len);
    if (o.eval_only) {
      trainer.load_weights(ctx.resume);
    } else {
      if (!ctx.resume.empty()) trainer.resume(ctx.resume);
      FitOptions fit{.epochs = o.max_steps > 0 ? std::int64_t{1} << 40 : o.epochs,
                     .max_steps = o.max_steps,
                     .accumulation = static_cast<int>(o.accumulation),
                     .eval_every = o.eval_every,
                     .checkpoint_path = ctx.checkpoint,
                     .checkpoint_every = o.checkpoint_every,
                     .best_path = o.keep_best ? best_path(ctx) : std::string(),
                     .best_metric = "token_accuracy",
                     .higher_is_better = true};
      fit.max_seconds = o.max_seconds;
      fit.force = o.force;
      fit.evaluate = [&](Trainer& t) {
        const EvalStats s = t.evaluate(quick);
        MetricsRecord r{.split = "valid"};
        r.set("loss", s.loss).set("token_accuracy", s.accuracy);
        return r;
      };
      trainer.fit(source, fit);
      write_run_files(ctx, net, config);
      if (o.keep_best && trainer.best_step() > 0) {
        trainer.load_weights(best_path(ctx));
        print_result("best_step", static_cast<double>(trainer.best_step()));
      }
    }
    const EvalStats vs = trainer.evaluate(eval_batches(val, o.test_limit, max_len));
    const auto decode = [&](const data::EncodedPairs& d, std::int64_t limit) {
      const std::vector<std::size_t> rows = all_rows(d.src.size(), limit);
      const auto t0 = std::chrono::steady_clock::now();
      // The preset's output layer has more ids than there are phonemes: decode over <eos> and
      // the phonemes only (an untrained model would otherwise emit unused ids).
      const auto pred = greedy_decode_seq2seq(
          trainer.eval_session(), d.src, rows,
          {.max_src_len = max_len, .vocab_limit = static_cast<std::int32_t>(phonemes.size())});
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return std::pair{eval::error_rates(pred, data::gather(d.tgt, rows)), std::pair{pred, secs}};
    };
    const auto [val_rates, val_pred] = decode(val, o.test_limit > 0 ? o.test_limit : o.eval_limit);
    const auto [test_rates, test_pred] = decode(test, o.test_limit);
    for (std::size_t i = 0; i < 5 && i < test_pred.first.size(); ++i) {
      const auto& e = split.test.examples[i];
      std::string want, got;
      for (const std::string& p : e.phonemes) want += " " + p;
      for (const std::string& p : phonemes.decode(test_pred.first[i])) got += " " + p;
      std::fprintf(stderr, "  %-16s ->%s   (CMUdict:%s)\n", e.word.c_str(), got.c_str(),
                   want.c_str());
    }
    print_result("test_per", test_rates.per);
    print_result("test_wer", test_rates.wer);
    print_result("val_per", val_rates.per);
    print_result("val_wer", val_rates.wer);
    print_result("val_loss", vs.loss);
    print_result("val_token_accuracy", vs.accuracy);
    print_result("test_words", static_cast<double>(test_rates.words));
    print_result("decode_words_per_s", static_cast<double>(test_rates.words) / test_pred.second);
    print_result("steps", static_cast<double>(trainer.steps_done()));
    print_throughput(trainer, {vs});
    print_result("checkpoint", o.eval_only                              ? ctx.resume
                               : o.keep_best && trainer.best_step() > 0 ? best_path(ctx)
                                                                        : ctx.checkpoint);
    return 0;
  }
};

}  // namespace

int run_g2p(RunContext& ctx) {
  return with_preset<kSeq2SeqPresets>(
      ctx.opt.model, [&]<const TransformerConfig & C>() { return G2p<C>::run(ctx); },
      [&](const std::string& names) -> int {
        throw Error("stag-train g2p: no preset '" + ctx.opt.model + "' (" + names + ")");
      });
}

}  // namespace stag::train_app
