// `stag-train lm`: the minimind-style language model on English fortunes (or the Python docs),
// character-level or BPE, in windows of --max-len tokens. Reports bits per character on the
// validation and test splits next to a character unigram model's. Presets: kLmTrainPresets
// (models/presets.hpp).
#include <memory>

#include <stag/models/data/split.hpp>
#include <stag/models/presets.hpp>

#include <stag/models/eval/seq_metrics.hpp>

#include "common.hpp"
#include "tasks.hpp"
#include "tokenizer.hpp"

namespace stag::train_app {
namespace {

constexpr AdamW kOptimizer{.hparams_as_inputs = true};

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
                    std::int64_t limit, const TextTokenizer& tok) {
  LmEval e;
  std::size_t windows = stream.size() > seq ? (stream.size() - 1) / seq : 0;
  if (limit > 0) windows = std::min(windows, static_cast<std::size_t>(limit));
  for (std::size_t w = 0; w < windows; w += batch) {
    std::vector<std::size_t> starts;
    for (std::size_t k = w; k < std::min(windows, w + batch); ++k) starts.push_back(k * seq);
    e.batches.push_back(lm_batch(stream, starts, seq));
    const Array& t = e.batches.back().inputs.at("targets");
    for (std::int64_t i = 0; i < t.numel(); ++i) e.chars += tok.chars_of(t.data<std::int32_t>()[i]);
  }
  return e;
}

template <const LmConfig& C>
struct Lm {
  static constexpr auto net = model([](Builder& g) { return language_model<C>(g); });

  static int run(RunContext& ctx) {
    const RunOptions& o = ctx.opt;
    const data::Corpus corpus =
        o.data == "fortunes" ? data::load_fortunes_corpus() : data::load_python_doc_corpus();
    data::CorpusSplits split = data::split_dataset(corpus, {.seed = 0});
    if (o.limit > 0)
      split.train.documents.resize(
          std::min(split.train.documents.size(), static_cast<std::size_t>(o.limit)));

    nlohmann::ordered_json config = run_config(ctx, C);
    const nlohmann::json saved =
        ctx.resume.empty() ? nlohmann::json() : checkpoint_config(ctx.resume, "lm", o.model);
    if (!ctx.resume.empty() && !o.eval_only) check_resume_flags(ctx.resume, saved, o);
    const TextTokenizer tok = !ctx.resume.empty()
                                  ? from_checkpoint(ctx.resume, "tokenizer",
                                                    [&] {
                                                      return TextTokenizer::from_json(config_field(
                                                          saved, "tokenizer", ctx.resume));
                                                    })
                                  : TextTokenizer::learn(o.tokenizer, split.train.documents,
                                                         static_cast<std::size_t>(C.vocab),
                                                         static_cast<std::size_t>(o.bpe_vocab));
    if (tok.vocab_size() > static_cast<std::size_t>(C.vocab))
      throw Error("stag-train lm: the tokenizer has " + std::to_string(tok.vocab_size()) +
                  " ids, preset '" + o.model + "' only " + std::to_string(C.vocab));
    config["tokenizer"] = tok.to_json();
    const auto train =
        std::make_shared<const std::vector<std::int32_t>>(data::encode_corpus(tok, split.train));
    const std::vector<std::int32_t> val = data::encode_corpus(tok, split.val),
                                    test = data::encode_corpus(tok, split.test);
    const auto seq = static_cast<std::size_t>(o.max_len),
               bs = static_cast<std::size_t>(o.batch_size);

    const auto seed = o.seed;
    const DataSource source{[=](std::int64_t e) {
                              return data::lm_window_batches(train->size(), seq, bs, seed,
                                                             static_cast<std::uint64_t>(e))
                                  .size();
                            },
                            [=](std::int64_t e, std::size_t i) {
                              // NOTE: the plan is cheap (a shuffle of window starts) and is rebuilt
                              // per batch.
                              const auto plan = data::lm_window_batches(
                                  train->size(), seq, bs, seed, static_cast<std::uint64_t>(e));
                              return lm_batch(*train, plan[i], seq);
                            }};
    const std::int64_t total = planned_steps(o, source.num_batches(0));
    Trainer trainer(graphs_for<net, kOptimizer, &C == &kLmTrainSmall>(ctx),
                    trainer_options(ctx, total, C.d_model, config.dump()));
    print_model(ctx, config, net, tok.vocab_size());

    const LmEval quick = eval_windows(val, seq, bs, o.eval_limit, tok);
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
                     .best_metric = "bpc",
                     .higher_is_better = false};
      fit.max_seconds = o.max_seconds;
      fit.force = o.force;
      fit.evaluate = [&](Trainer& t) {
        const EvalStats s = t.evaluate(quick.batches);
        MetricsRecord r{.split = "valid"};
        r.set("loss", s.loss).set("bpc", s.bits_per_char(quick.chars)).set("accuracy", s.accuracy);
        return r;
      };
      trainer.fit(source, fit);
      write_run_files(ctx, net, config);
      if (o.keep_best && trainer.best_step() > 0) {
        trainer.load_weights(best_path(ctx));
        print_result("best_step", static_cast<double>(trainer.best_step()));
      }
    }
    const LmEval full_val = eval_windows(val, seq, bs, o.test_limit, tok),
                 full_test = eval_windows(test, seq, bs, o.test_limit, tok);
    const EvalStats vs = trainer.evaluate(full_val.batches),
                    ts = trainer.evaluate(full_test.batches);
    print_result("val_bpc", vs.bits_per_char(full_val.chars));
    print_result("test_bpc", ts.bits_per_char(full_test.chars));
    const double unigram_bpc =
        eval::unigram_bits_per_char(split.train.documents, split.test.documents);
    print_result("unigram_bpc", unigram_bpc);
    print_result("val_loss", vs.loss);
    print_result("val_token_perplexity", vs.perplexity());
    print_result("val_token_accuracy", vs.accuracy);
    print_result("chars_per_token", full_test.chars / ts.count);
    print_result("steps", static_cast<double>(trainer.steps_done()));
    print_throughput(trainer, {vs, ts});
    print_result("checkpoint", o.eval_only                              ? ctx.resume
                               : o.keep_best && trainer.best_step() > 0 ? best_path(ctx)
                                                                        : ctx.checkpoint);
    print_step_memory(trainer);
    export_weights(ctx, trainer);
    require_above_chance(ctx, "test_bpc", ts.bits_per_char(full_test.chars),
                         "the unigram model's (unigram_bpc)", unigram_bpc, false);
    return 0;
  }
};

}  // namespace

int run_lm(RunContext& ctx) {
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
