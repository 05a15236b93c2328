// `stag-train classify`: the articles' text classifier on a labelled data set (default: the UCI
// sentiment sentences), with a bag-of-words logistic-regression baseline on the same split.
// Reports val_accuracy, test_accuracy and baseline_accuracy. Presets: models/presets.hpp.
#include <fstream>
#include <memory>

#include <stag/models/data/split.hpp>
#include <stag/models/presets.hpp>
#include <stag/ops/random.hpp>

#include "bow.hpp"
#include "common.hpp"
#include "mlm.hpp"
#include "tasks.hpp"
#include "tokenizer.hpp"

namespace stag::train_app {
namespace {

constexpr AdamW kOptimizer{.hparams_as_inputs = true};  // every setting is a flag

data::TextDataset load_texts(const std::string& name, std::int64_t limit) {
  if (name == "sentiment") return data::load_sentiment();
  if (name == "spam") return data::load_spam_assassin();
  if (name == "zh") return data::load_chinese_sources();
  // Language ID: 95k entries in all; a cap per language keeps the classes balanced and an
  // epoch short (the default --limit 0 keeps 2,000 of each).
  return data::load_fortune_languages({}, limit > 0 ? static_cast<std::size_t>(limit) : 2000);
}

// " lower-cased ASCII": BPE's chunks keep one leading space, so a word at the start of a text
// becomes the same token as in the middle.
std::string normalize_text(const std::string& text) {
  std::string out = " " + text;
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::vector<std::string> texts_of(const data::TextDataset& d) {
  std::vector<std::string> t;
  for (const data::TextExample& e : d.examples) t.push_back(e.text);
  return t;
}

// Evaluation batches: rows in order of length (less padding), `size` per batch.
std::vector<Batch> eval_batches(const data::EncodedTexts& d, std::size_t size,
                                const data::PadOptions& pad, std::int64_t limit) {
  std::vector<std::size_t> rows(d.ids.size());
  for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  rows = first_n(rows, limit);
  std::stable_sort(rows.begin(), rows.end(),
                   [&](std::size_t a, std::size_t b) { return d.ids[a].size() < d.ids[b].size(); });
  std::vector<Batch> out;
  for (std::size_t k = 0; k < rows.size(); k += size) {
    const std::span<const std::size_t> part(rows.data() + k, std::min(size, rows.size() - k));
    data::ClassBatch b = data::make_class_batch(d, part, pad);
    double tokens = 0;
    for (std::int64_t i = 0; i < b.keep.numel(); ++i) tokens += b.keep.at(i);
    out.push_back({b.inputs(), 0, tokens});
  }
  return out;
}

// Word dropout: each token of the batch's texts is left out with probability p, drawn from
// (seed, epoch, row, position), so a resumed run drops the same ones; a text keeps at least one.
data::ClassBatch drop_tokens(const data::EncodedTexts& d, const std::vector<std::size_t>& rows,
                             const data::PadOptions& pad, double p, std::uint64_t seed,
                             std::int64_t epoch) {
  data::EncodedTexts part;
  std::vector<std::size_t> local;
  for (std::size_t r : rows) {
    std::vector<std::int32_t> kept;
    const std::vector<std::int32_t>& ids = d.ids[r];
    for (std::size_t k = 0; k < ids.size(); ++k)
      if (random::uniform(seed ^ 0x746f6b656e64726fULL, static_cast<std::uint64_t>(epoch), r, k) >=
          p)
        kept.push_back(ids[k]);
    if (kept.empty() && !ids.empty()) kept.push_back(ids[0]);
    local.push_back(part.ids.size());
    part.ids.push_back(std::move(kept));
    part.labels.push_back(d.labels[r]);
  }
  return data::make_class_batch(part, local, pad);
}

void export_split(nlohmann::json& j, const char* name, const data::EncodedTexts& d) {
  j[name] = {{"ids", d.ids}, {"labels", d.labels}};
}

// The logits of the first 16 validation texts (one batch, in order) with their inputs and the
// path of the checkpoint holding the weights that produced them.
void dump_logits(Trainer& t, const data::EncodedTexts& val, const data::PadOptions& pad,
                 const std::string& path, const std::string& checkpoint) {
  if (Communicator::world().rank() != 0) return;
  std::vector<std::size_t> rows;
  for (std::size_t i = 0; i < 16 && i < val.ids.size(); ++i) rows.push_back(i);
  const data::ClassBatch b = data::make_class_batch(val, rows, pad);
  Session& s = t.eval_session();
  s.set_inputs(b.inputs());
  s.run();
  const Array logits = s.get("logits");
  nlohmann::json j;
  const std::int64_t n = b.ids.dim(0), len = b.ids.dim(1), c = logits.dim(1);
  for (std::int64_t i = 0; i < n; ++i) {
    std::vector<std::int32_t> ids;
    std::vector<bool> keep;
    std::vector<float> z;
    for (std::int64_t k = 0; k < len; ++k) {
      ids.push_back(b.ids.data<std::int32_t>()[i * len + k]);
      keep.push_back(b.keep.data<bool>()[i * len + k]);
    }
    for (std::int64_t k = 0; k < c; ++k) z.push_back(logits.data<float>()[i * c + k]);
    j["ids"].push_back(ids);
    j["keep"].push_back(keep);
    j["logits"].push_back(z);
  }
  j["checkpoint"] = checkpoint;  // the weights these logits come from (tools/ loads them)
  std::ofstream(path) << j.dump() << "\n";
}

// --- Masked-LM pretraining (--pretrain-steps) ---------------------------------------------------

// The unlabelled text of the pretraining, packed into full rows of `max_len` ids (as BERT
// packs sentences): the English fortunes, then the training split's own texts (already
// normalised) without their labels. The last 2% of the fortunes (at most 1,000) are held out to
// report the pretraining's validation loss; the training texts are never held out.
struct PretrainRows {
  data::EncodedTexts train, held_out;
};
PretrainRows pretrain_rows(const RunOptions& o, const TextTokenizer& tok,
                           const std::vector<std::string>& train_texts, std::int64_t max_len) {
  const data::Corpus corpus = data::load_fortunes_corpus();
  const std::size_t held = std::min<std::size_t>(corpus.documents.size() / 50, 1000);
  std::vector<std::int32_t> train_ids, held_ids;
  for (std::size_t i = 0; i < corpus.documents.size(); ++i) {
    const std::string& d = corpus.documents[i];
    const std::vector<std::int32_t> ids = tok.encode(o.lowercase ? normalize_text(d) : d);
    std::vector<std::int32_t>& to = i + held < corpus.documents.size() ? train_ids : held_ids;
    to.insert(to.end(), ids.begin(), ids.end());
  }
  for (const std::string& t : train_texts) {
    const std::vector<std::int32_t> ids = tok.encode(t);
    train_ids.insert(train_ids.end(), ids.begin(), ids.end());
  }
  auto rows_of = [&](const std::vector<std::int32_t>& ids) {
    data::EncodedTexts d;
    const auto n = static_cast<std::ptrdiff_t>(ids.size());
    for (std::ptrdiff_t k = 0; k + max_len <= n; k += max_len) {
      d.ids.emplace_back(ids.begin() + k, ids.begin() + k + max_len);
      d.labels.push_back(0);
    }
    return d;
  };
  return {rows_of(train_ids), rows_of(held_ids)};
}

// Pretrains classifier_mlm<C> (the classifier's encoder, tied output) for --pretrain-steps and
// saves it to <out>/pretrain.safetensors with the tokenizer in its config; returns that path.
template <const ClassifierConfig& C>
std::string pretrain(const RunContext& ctx, const TextTokenizer& tok,
                     const std::vector<std::string>& train_texts, const data::PadOptions& pad,
                     nlohmann::ordered_json config) {
  static constexpr auto mlm = model([](Builder& g) { return classifier_mlm<C>(g); });
  const RunOptions& o = ctx.opt;
  const PretrainRows rows = pretrain_rows(o, tok, train_texts, pad.max_len);
  std::size_t tokens = 0;
  for (const auto& r : rows.train.ids) tokens += r.size();
  std::fprintf(stderr,
               "pretraining: masked LM on the fortunes and the training texts: %zu rows (%zu "
               "tokens) + %zu held out, %lld steps\n",
               rows.train.ids.size(), tokens, rows.held_out.ids.size(),
               static_cast<long long>(o.pretrain_steps));
  RunContext pctx = ctx;
  pctx.opt.lr = o.pretrain_lr;
  pctx.opt.max_steps = o.pretrain_steps;
  pctx.checkpoint = o.out + "/pretrain.safetensors";
  pctx.metrics = o.out + "/pretrain_metrics.jsonl";
  config["stage"] = "pretrain";
  Trainer t(training_graphs<mlm, kOptimizer>(),
            trainer_options(pctx, o.pretrain_steps, C.d_model, config.dump()));
  const std::vector<std::size_t> lengths = rows.train.lengths();
  const data::BatchingOptions plan{.batch_size = static_cast<std::size_t>(o.batch_size),
                                   .seed = o.seed ^ 0x707265747261696eULL};
  const EpochBatches plan_of(lengths, plan);
  const std::size_t vocab = tok.vocab_size();
  const DataSource source{[=](std::int64_t e) { return plan_of(e).size(); },
                          [=, &rows](std::int64_t e, std::size_t i) {
                            return mlm_batch(rows.train, plan_of(e)[i], pad, kMaskProb, vocab,
                                             o.seed, e);
                          }};
  // Held-out batches: fixed masks (epoch 0, the run's seed), so evaluations compare.
  std::vector<Batch> held;
  for (std::size_t k = 0; k < rows.held_out.ids.size(); k += 128) {
    std::vector<std::size_t> part;
    for (std::size_t j = k; j < std::min(k + 128, rows.held_out.ids.size()); ++j) part.push_back(j);
    held.push_back(mlm_batch(rows.held_out, part, pad, kMaskProb, vocab, o.seed, 0));
  }
  FitOptions fit{.epochs = std::int64_t{1} << 40,
                 .max_steps = o.pretrain_steps,
                 .eval_every = std::max<std::int64_t>(o.pretrain_steps / 4, 1),
                 .checkpoint_path = pctx.checkpoint};
  fit.force = o.force;
  if (!held.empty())
    fit.evaluate = [&](Trainer& tr) {
      const EvalStats s = tr.evaluate(held);
      MetricsRecord r{.split = "valid"};
      r.set("mlm_loss", s.loss).set("mlm_accuracy", s.accuracy);
      return r;
    };
  t.fit(source, fit);
  if (!held.empty()) {
    const EvalStats s = t.evaluate(held);
    print_result("pretrain_mlm_loss", s.loss);
    print_result("pretrain_mlm_accuracy", s.accuracy);
  }
  print_result("pretrain_seconds", t.totals().seconds);
  return pctx.checkpoint;
}

template <const ClassifierConfig& C>
struct Classify {
  static constexpr auto net = model([](Builder& g) { return classifier<C>(g); });

  static int run(RunContext& ctx) {
    const RunOptions& o = ctx.opt;
    const data::TextDataset all = load_texts(o.data, o.data == "langid" ? o.limit : 0);
    if (all.num_classes() > static_cast<std::size_t>(C.classes))
      throw Error("stag-train classify: --data " + o.data + " has " +
                  std::to_string(all.num_classes()) + " classes, preset '" + o.model + "' has " +
                  std::to_string(C.classes) + "; use --model small (8)");
    // The split never depends on --seed: seeds vary initialisation, dropout and batch order.
    data::TextSplits split = data::split_dataset(all, {.seed = 0});
    if (o.limit > 0 && o.data != "langid")
      split.train.examples.resize(
          std::min(split.train.examples.size(), static_cast<std::size_t>(o.limit)));
    if (o.lowercase)
      for (data::TextDataset* part : {&split.train, &split.val, &split.test})
        for (data::TextExample& e : part->examples) e.text = normalize_text(e.text);

    nlohmann::ordered_json config = run_config(ctx, C);
    std::optional<TextTokenizer> tok;
    // Resuming, or starting from a pretrained encoder: the ids must mean what they meant then.
    const std::string& tok_from = !ctx.resume.empty() ? ctx.resume : o.init_from;
    if (!tok_from.empty()) {
      const nlohmann::json saved = checkpoint_config(tok_from, "classify", o.model);
      if (!ctx.resume.empty() && !o.eval_only) check_resume_flags(ctx.resume, saved, o);
      tok = from_checkpoint(tok_from, "tokenizer", [&] {
        return TextTokenizer::from_json(config_field(saved, "tokenizer", tok_from));
      });
    } else {
      const std::vector<std::string> texts = texts_of(split.train);
      tok = TextTokenizer::learn(o.tokenizer, texts, static_cast<std::size_t>(C.vocab),
                                 static_cast<std::size_t>(o.bpe_vocab));
    }
    config["tokenizer"] = tok->to_json();
    config["labels"] = all.label_names;
    const data::EncodedTexts train = data::encode_texts(*tok, split.train),
                             val = data::encode_texts(*tok, split.val),
                             test = data::encode_texts(*tok, split.test);
    if (o.max_len > C.max_len)
      throw Error("stag-train classify: --max-len " + std::to_string(o.max_len) + " is above the " +
                  std::to_string(C.max_len) + " positions of preset '" + o.model +
                  "' (its learned position table); give at most " + std::to_string(C.max_len));
    const data::PadOptions pad{.max_len = o.max_len};

    if (!o.export_data.empty() && Communicator::world().rank() == 0) {
      nlohmann::json j = {{"vocab", C.vocab}, {"max_len", pad.max_len}, {"classes", C.classes}};
      export_split(j, "train", train);
      export_split(j, "val", val);
      export_split(j, "test", test);
      std::ofstream(o.export_data) << j.dump() << "\n";
    }

    // Training batches: a seeded plan per epoch (bucketed by length), built once per epoch.
    const std::vector<std::size_t> lengths = train.lengths();
    const data::BatchingOptions plan{
        .batch_size = static_cast<std::size_t>(o.batch_size), .bucket = o.bucket, .seed = o.seed};
    const EpochBatches plan_of(lengths, plan);
    const DataSource source{[=](std::int64_t e) { return plan_of(e).size(); },
                            [=, &train](std::int64_t e, std::size_t i) {
                              const std::vector<std::size_t>& rows = plan_of(e)[i];
                              data::ClassBatch b =
                                  o.token_dropout > 0
                                      ? drop_tokens(train, rows, pad, o.token_dropout, o.seed, e)
                                      : data::make_class_batch(train, rows, pad);
                              double tokens = 0;
                              for (std::int64_t k = 0; k < b.keep.numel(); ++k)
                                tokens += b.keep.at(k);
                              return Batch{b.inputs(), 0, tokens};
                            }};
    const std::int64_t total = planned_steps(o, plan_of(0).size());
    const bool fresh = ctx.resume.empty() && !o.eval_only;
    const std::string init = fresh && o.pretrain_steps > 0
                                 ? pretrain<C>(ctx, *tok, texts_of(split.train), pad, config)
                             : fresh ? o.init_from
                                     : std::string();
    Trainer trainer(graphs_for<net, kOptimizer, &C == &kClassifyPre>(ctx),
                    trainer_options(ctx, total, C.d_model, config.dump()));
    print_model(ctx, config, net, tok->vocab_size());
    if (!init.empty())
      std::fprintf(stderr, "initialised %zu parameters from %s\n", trainer.init_from(init).size(),
                   init.c_str());

    const std::vector<Batch> val_b = eval_batches(val, 128, pad, o.test_limit),
                             test_b = eval_batches(test, 128, pad, o.test_limit);
    const std::vector<Batch> val_quick = eval_batches(val, 128, pad, o.eval_limit);
    if (o.eval_only) {
      trainer.load_weights(ctx.resume);
    } else {
      if (!ctx.resume.empty()) trainer.resume(ctx.resume);
      FitOptions fit = fit_options(ctx, "accuracy", true);
      fit.evaluate = [&](Trainer& t) {
        const EvalStats s = t.evaluate(val_quick);
        MetricsRecord r{.split = "valid"};
        r.set("loss", s.loss).set("accuracy", s.accuracy);
        return r;
      };
      trainer.fit(source, fit);
      write_run_files(ctx, net, config);
      if (o.keep_best && trainer.best_step() > 0) {
        trainer.load_weights(best_path(ctx));
        print_result("best_step", static_cast<double>(trainer.best_step()));
      }
    }
    const EvalStats vs = trainer.evaluate(val_b), ts = trainer.evaluate(test_b);
    // The weights evaluated: the checkpoint read by --eval-only, the best one kept, or the last.
    const std::string used = o.eval_only                              ? ctx.resume
                             : o.keep_best && trainer.best_step() > 0 ? best_path(ctx)
                                                                      : ctx.checkpoint;
    if (!o.dump_logits.empty()) dump_logits(trainer, val, pad, o.dump_logits, used);
    const BowResult bow = bow_baseline(texts_of(split.train), train.labels, texts_of(split.val),
                                       val.labels, texts_of(split.test), test.labels,
                                       static_cast<int>(all.num_classes()), {.verbose = true});
    print_result("val_accuracy", vs.accuracy);
    print_result("test_accuracy", ts.accuracy);
    print_result("baseline_accuracy", bow.val_accuracy);
    print_result("baseline_test_accuracy", bow.test_accuracy);
    print_result("val_loss", vs.loss);
    print_result("test_loss", ts.loss);
    print_result("majority_accuracy", majority_accuracy(train.labels, val.labels));
    print_result("steps", static_cast<double>(trainer.steps_done()));
    print_throughput(trainer, {vs, ts});
    print_result("checkpoint", used);
    print_step_memory(trainer);
    export_weights(ctx, trainer);
    require_above_chance(ctx, "test_accuracy", ts.accuracy, "the majority class's test accuracy",
                         majority_accuracy(train.labels, test.labels), true, 0.02);
    return 0;
  }
};

}  // namespace

int run_classify(RunContext& ctx) {
  return with_preset<kClassifierPresets>(
      ctx.opt.model, [&]<const ClassifierConfig & C>() { return Classify<C>::run(ctx); },
      [&](const std::string& names) -> int {
        throw Error("stag-train classify: no preset '" + ctx.opt.model + "' (" + names + ")");
      });
}

}  // namespace stag::train_app
