// stag-train-tiny-lm: a small training loop that makes a character-level language model
// checkpoint for stag-generate (the char-tiny config of models/lm_presets.hpp), on the English
// fortunes or any text file. A stopgap and an example of the checkpoint's metadata
// ({"model": config, "tokenizer": tokeniser JSON, "add_bos": true}); `stag-train lm` is the
// full trainer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include <stag/autodiff/optimizer.hpp>
#include <stag/models/data/char_tokenizer.hpp>
#include <stag/models/data/datasets.hpp>
#include <stag/models/data/text.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/ops/random.hpp>
#include <stag/runtime/session.hpp>
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/train/lr_schedule.hpp>

namespace {
using namespace stag;

constexpr auto lm = model([](Builder& g) { return language_model<kLmCharTiny>(g); });
constexpr auto lm_step = train_step<lm, AdamW{.weight_decay = 0.01, .clip_norm = 1.0}>();

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Random windows of seq + 1 tokens from [begin, end) of the stream: ids and next-token targets.
void fill_batch(const std::vector<std::int32_t>& stream, std::size_t begin, std::size_t end,
                int batch, int seq, std::uint64_t seed, std::uint64_t step, Array& ids,
                Array& targets) {
  const std::size_t span = end - begin - static_cast<std::size_t>(seq) - 1;
  for (int b = 0; b < batch; ++b) {
    const std::size_t at =
        begin + static_cast<std::size_t>(
                    random::bits(seed, step, 99, static_cast<std::uint64_t>(b)) % span);
    for (int t = 0; t < seq; ++t) {
      ids.data<std::int32_t>()[b * seq + t] = stream[at + static_cast<std::size_t>(t)];
      targets.data<std::int32_t>()[b * seq + t] = stream[at + static_cast<std::size_t>(t) + 1];
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"stag-train-tiny-lm: train the char-tiny language model for stag-generate"};
  std::string text_file, out = "tiny_lm.safetensors";
  double minutes = 3.0, lr = 3e-3;
  int steps = 0, batch = 16, seq = 128, threads = 0;
  std::uint64_t seed = 1;
  app.add_option("--text", text_file, "train on this text file (default: the English fortunes)");
  app.add_option("-o,--out", out, "checkpoint to write");
  app.add_option("--minutes", minutes, "stop after this much training time");
  app.add_option("--steps", steps, "stop after this many steps (0: only the time limit)");
  app.add_option("--batch", batch, "sequences per step")->check(CLI::PositiveNumber);
  app.add_option("--seq", seq, "tokens per sequence")->check(CLI::PositiveNumber);
  app.add_option("--lr", lr, "peak learning rate (AdamW, cosine decay)");
  app.add_option("--threads", threads, "threads (0: every core)");
  app.add_option("--seed", seed, "seed of initialisation and batches");
  CLI11_PARSE(app, argc, argv);
  try {
    std::vector<std::string> docs;
    if (text_file.empty())
      docs = data::load_fortunes_corpus().documents;
    else
      docs.push_back(data::read_file(text_file, "training text", ""));
    const data::CharTokenizer tok = data::CharTokenizer::build(docs, 1, kLmCharTiny.vocab);
    std::vector<std::int32_t> stream;
    for (const std::string& d : docs) {
      const std::vector<std::int32_t> ids = tok.encode(d, {.add_bos = true, .add_eos = true});
      stream.insert(stream.end(), ids.begin(), ids.end());
    }
    const std::size_t split = stream.size() * 95 / 100;  // the last 5% for validation
    if (split < static_cast<std::size_t>(seq) + 2 ||
        stream.size() - split < static_cast<std::size_t>(seq) + 2)
      throw Error("stag: the training text is too short for --seq " + std::to_string(seq));
    std::printf("corpus: %zu documents, %zu tokens, vocabulary %zu; model char-tiny (%s)\n",
                docs.size(), stream.size(), tok.vocab_size(), lm_config_text(kLmCharTiny).c_str());

    Session s(lm_step, {.threads = threads, .seed = seed});
    std::size_t n_params = 0;
    for (const auto& [name, a] : s.params())
      if (name.find(".adam_") == std::string::npos) n_params += static_cast<std::size_t>(a.numel());
    std::printf("parameters: %zu\n", n_params);
    std::fflush(stdout);
    Session eval(lm, {.threads = threads});
    const std::int64_t planned = steps > 0 ? steps : 100000;
    const std::int64_t warmup = std::min<std::int64_t>(50, planned / 2);
    const LrSchedule sched = LrSchedule::cosine(lr, warmup, planned, lr / 10);
    Array ids(DType::i32, {batch, seq}), targets(DType::i32, {batch, seq});
    const auto t0 = std::chrono::steady_clock::now();
    std::int64_t step = 0;
    double smooth = 0;
    while ((steps == 0 || step < steps) && seconds_since(t0) < 60 * minutes) {
      ++step;
      fill_batch(stream, 0, split, batch, seq, seed, static_cast<std::uint64_t>(step), ids,
                 targets);
      s.set_inputs({{"ids", ids},
                    {"targets", targets},
                    {"lr", Array::from<float>({}, {static_cast<float>(sched.at(step))})},
                    {"step", Array::from<float>({}, {static_cast<float>(step)})}});
      s.run({.training = true, .step = static_cast<std::uint64_t>(step)});
      smooth = step == 1 ? s.result() : 0.95 * smooth + 0.05 * s.result();
      if (step % 50 == 0 || step == 1)
        std::printf("step %lld  loss %.3f  %.0f tokens/s\n", static_cast<long long>(step), smooth,
                    static_cast<double>(step) * batch * seq / seconds_since(t0));
    }
    // Validation loss on 8 fixed windows of the held-out part.
    for (const auto& [name, a] : s.params())
      if (eval.params().count(name)) eval.set_param(name, a);
    double val = 0;
    for (int k = 0; k < 8; ++k) {
      fill_batch(stream, split, stream.size(), batch, seq, seed + 1, static_cast<std::uint64_t>(k),
                 ids, targets);
      eval.set_inputs({{"ids", ids}, {"targets", targets}});
      eval.run();
      val += eval.result() / 8;
    }
    std::printf("trained %lld steps in %.0f s; validation loss %.3f nats/char\n",
                static_cast<long long>(step), seconds_since(t0), val);
    const std::string config =
        "{\"preset\":\"char-tiny\",\"model\":" + lm_config_to_json(kLmCharTiny) +
        ",\"tokenizer\":" + tok.to_json() + ",\"add_bos\":true,\"seq_len\":" + std::to_string(seq) +
        "}";
    TrainState st;
    st.step = step;
    st.seed = seed;
    st.extra["validation_loss"] = std::to_string(val);
    save_checkpoint(out, s, st, config);
    std::printf("wrote %s\n", out.c_str());
  } catch (const Error& e) {
    std::fprintf(stderr, "stag-train-tiny-lm: %s\n", e.what());
    return 1;
  }
  return 0;
}
