// stag-bench-generate: the generation benchmark of issue 16 §6 on a compiled-in LM preset with
// random weights (default `small`, the model `stag-train lm` writes): prefill tokens/s at the
// given prompt lengths next to one forward pass of language_model<C> over the same tokens,
// time to first token, plan and cache memory, and decode tokens/s at the given batch sizes; then
// the encoder-decoder of `stag-train seq2seq` (kTextSeq2SeqSmall, random weights): encode time
// and decode-step tokens/s at the same batch sizes, and a beam-4 search per source.
// Prints `bench.generate.<case>.<metric>: value unit`; never fails on a number.
//   stag-bench-generate [--threads N] [--lengths 128,1024,4096] [--batches 1,16]
//                       [--decode-tokens N] [--decode-prompt N] [--repeats N] [--chunk N]
//                       [--profile 1]   (the encoder-decoder's slowest decode-step nodes)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include <sys/resource.h>

#include <stag/models/generator.hpp>
#include <stag/models/presets.hpp>
#include <stag/models/seq2seq_generator.hpp>
#include <stag/ops/random.hpp>
#include <stag/stag.hpp>

namespace {
using namespace stag;
using Clock = std::chrono::steady_clock;

struct FullSmall {
  constexpr auto operator()(Builder& g) const { return language_model<kLmTrainSmall>(g); }
};
constexpr auto full_small = model(FullSmall{});

std::vector<int> int_list(const char* s) {
  std::vector<int> v;
  for (const char* p = s; *p;) {
    v.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return v;
}

std::vector<std::int32_t> random_prompt(int len, std::int64_t vocab, std::uint64_t salt) {
  std::vector<std::int32_t> p;
  for (int i = 0; i < len; ++i)
    p.push_back(static_cast<std::int32_t>(random::bits(7, salt, 0, static_cast<std::uint64_t>(i)) %
                                          static_cast<std::uint64_t>(vocab)));
  return p;
}

double max_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

double state_bytes(const Session& s) {
  double b = 0;
  for (const auto& [name, a] : s.params())
    if (name.find("_cache") != std::string::npos) b += static_cast<double>(a.bytes());
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, decode_tokens = 64, decode_prompt = 128, repeats = 3, chunk = 0;
  bool profile = false;
  std::vector<int> lengths{128, 1024, 4096}, batches{1, 16};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads")
      threads = std::atoi(argv[i + 1]);
    else if (a == "--lengths")
      lengths = int_list(argv[i + 1]);
    else if (a == "--batches")
      batches = int_list(argv[i + 1]);
    else if (a == "--decode-tokens")
      decode_tokens = std::atoi(argv[i + 1]);
    else if (a == "--decode-prompt")
      decode_prompt = std::atoi(argv[i + 1]);
    else if (a == "--repeats")
      repeats = std::atoi(argv[i + 1]);
    else if (a == "--chunk")
      chunk = std::atoi(argv[i + 1]);
    else if (a == "--profile")
      profile = std::string_view(argv[i + 1]) == "1";
    else {
      std::fprintf(stderr, "stag-bench-generate: unknown argument '%s'\n", a.c_str());
      return 2;
    }
  }
  const LmPreset& preset = *find_lm_preset("small");
  const std::int64_t vocab = preset.config->vocab;
  NamedArrays weights;
  for (auto& [k, a] : make_params(preset.decode, {{"batch", 1}, {"max_len", 1}}, 1))
    if (k.find("_cache") == std::string::npos) weights.emplace(k, a);
  std::printf("bench.generate.model: small (random weights), %s\n",
              lm_config_text(*preset.config).c_str());
  std::printf("bench.generate.threads: %d\n", threads);

  for (int len : lengths) {
    const std::string tag = "bench.generate.prefill_" + std::to_string(len);
    const std::vector<std::int32_t> prompt = random_prompt(len, vocab, 1);
    // Prefill and the first token, in a fresh generator (its setup: plans and the cache).
    double best = 1e30, setup = 0;
    std::int64_t plan_peak = 0;
    double cache = 0;
    for (int r = 0; r < repeats; ++r) {
      Generator gen(preset, weights, std::nullopt, {.threads = threads});
      const GenerateResult res = gen.generate_ids(
          prompt,
          {.max_new_tokens = 1, .prefill_chunk = chunk, .add_bos = false, .stop_at_eos = false});
      best = std::min(best, res.prefill_seconds);
      setup = res.setup_seconds;
      plan_peak = std::max(plan_peak, gen.session().plan().memory.peak);
      cache = state_bytes(gen.session());
    }
    std::printf("%s.time_to_first_token: %.2f ms\n", tag.c_str(), 1e3 * best);
    std::printf("%s.tokens_per_s: %.0f tokens/s\n", tag.c_str(), len / best);
    std::printf("%s.setup: %.1f ms\n", tag.c_str(), 1e3 * setup);
    std::printf("%s.plan_peak: %.1f MiB\n", tag.c_str(),
                static_cast<double>(plan_peak) / (1 << 20));
    std::printf("%s.cache: %.1f MiB\n", tag.c_str(), cache / (1 << 20));
    // One forward pass of language_model<small> over the same tokens (logits and loss).
    {
      Session s(full_small, {.threads = threads});
      s.set_params(weights);
      Array ids = Array::from_vector<std::int32_t>({1, len}, prompt);
      s.set_inputs({{"ids", ids}, {"targets", ids}});
      s.run();  // the plan
      double fbest = 1e30;
      for (int r = 0; r < repeats; ++r) {
        const auto t0 = Clock::now();
        s.run();
        fbest = std::min(fbest, std::chrono::duration<double>(Clock::now() - t0).count());
      }
      std::printf("%s.full_forward: %.2f ms (%.0f tokens/s)\n", tag.c_str(), 1e3 * fbest,
                  len / fbest);
      std::printf("%s.full_forward_plan_peak: %.1f MiB\n", tag.c_str(),
                  static_cast<double>(s.plan().memory.peak) / (1 << 20));
      std::printf("%s.prefill_over_forward: %.2f\n", tag.c_str(), best / fbest);
    }
  }

  for (int b : batches) {
    const std::string tag = "bench.generate.decode_batch_" + std::to_string(b);
    std::vector<std::vector<std::int32_t>> prompts;
    for (int i = 0; i < b; ++i)
      prompts.push_back(random_prompt(decode_prompt, vocab, 100 + static_cast<std::uint64_t>(i)));
    double best = 1e30, ttft = 0;
    for (int r = 0; r < repeats; ++r) {
      Generator gen(preset, weights, std::nullopt, {.threads = threads});
      const std::vector<GenerateResult> res =
          gen.generate_ids_batch(prompts, {.max_new_tokens = decode_tokens,
                                           .sample = {.temperature = 0.0},
                                           .add_bos = false,
                                           .stop_at_eos = false});
      double wall = 0;
      for (const GenerateResult& x : res) wall = std::max(wall, x.decode_seconds);
      if (wall < best) best = wall, ttft = res.front().prefill_seconds;
    }
    const double tokens = static_cast<double>(b) * (decode_tokens - 1);
    std::printf("%s.tokens_per_s: %.1f tokens/s (%d rows x %d steps after a %d-token prompt)\n",
                tag.c_str(), tokens / best, b, decode_tokens - 1, decode_prompt);
    std::printf("%s.ms_per_step: %.3f ms\n", tag.c_str(), 1e3 * best / (decode_tokens - 1));
    std::printf("%s.time_to_first_token: %.2f ms\n", tag.c_str(), 1e3 * ttft);
  }
  // The encoder-decoder: sources of decode_prompt / 4 ids (a sentence), then decode_tokens
  // steps of one token per row, each feeding the argmax of the last (no early <eos>).
  {
    const Seq2SeqGraphs gr = seq2seq_graphs<kTextSeq2SeqSmall>();
    const NamedArrays w = seq2seq_weights(gr, 1);
    std::printf(
        "bench.generate.seq2seq_model: stag-train seq2seq's small (random weights), 2+2 "
        "layers, d_model 128, vocab 256\n");
    const int src_len = std::max(decode_prompt / 4, 1);
    for (int b : batches) {
      const std::string tag = "bench.generate.seq2seq_batch_" + std::to_string(b);
      Array src(DType::i32, {b, src_len}), keep(DType::boolean, {b, src_len});
      for (int i = 0; i < b; ++i) {
        const auto ids = random_prompt(src_len, 250, 300 + static_cast<std::uint64_t>(i));
        for (int j = 0; j < src_len; ++j) {
          src.data<std::int32_t>()[i * src_len + j] = ids[static_cast<std::size_t>(j)] + 4;
          keep.data<bool>()[i * src_len + j] = true;
        }
      }
      Seq2SeqGenerator gen(gr, w, {.threads = threads, .profile = profile});
      double best = 1e30, enc_best = 1e30;
      for (int r = 0; r <= repeats; ++r) {  // the first round makes the plans
        const auto t0 = Clock::now();
        gen.encode(src, keep, 1, decode_tokens);
        const auto t1 = Clock::now();
        Array ids = Array::from_vector<std::int32_t>(
            {b, 1}, std::vector<std::int32_t>(static_cast<std::size_t>(b), data::kBosId));
        for (int t = 0; t < decode_tokens; ++t) {
          const Array logits =
              gen.step(ids, std::vector<std::int32_t>(static_cast<std::size_t>(b), t));
          const std::int64_t v = logits.dim(2);
          for (int i = 0; i < b; ++i) {
            const float* row = logits.data<float>() + i * v;
            ids.data<std::int32_t>()[i] =
                static_cast<std::int32_t>(std::max_element(row + 4, row + v) - row);
          }
        }
        const auto t2 = Clock::now();
        if (r == 0) continue;
        enc_best = std::min(enc_best, std::chrono::duration<double>(t1 - t0).count());
        best = std::min(best, std::chrono::duration<double>(t2 - t1).count());
      }
      std::printf("%s.encode: %.2f ms (%d sources of %d ids)\n", tag.c_str(), 1e3 * enc_best, b,
                  src_len);
      std::printf("%s.tokens_per_s: %.1f tokens/s (%d rows x %d steps)\n", tag.c_str(),
                  static_cast<double>(b) * decode_tokens / best, b, decode_tokens);
      std::printf("%s.ms_per_step: %.3f ms\n", tag.c_str(), 1e3 * best / decode_tokens);
      if (profile) std::printf("%s", gen.profile_report(30).c_str());
    }
    // Beam search, 4 beams, 16 sources (early <eos> allowed: random weights stop anywhere).
    Seq2SeqGenerator gen(gr, w, {.threads = threads});
    std::vector<std::vector<std::int32_t>> sources;
    for (int i = 0; i < 16; ++i) {
      auto ids = random_prompt(src_len, 250, 400 + static_cast<std::uint64_t>(i));
      for (auto& x : ids) x += 4;
      sources.push_back(ids);
    }
    std::vector<std::size_t> rows(sources.size());
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i] = i;
    const Seq2SeqGenerateOptions bo{.search = {.beam_size = 4}, .max_new = decode_tokens};
    (void)gen.generate(sources, rows, bo);  // plans
    double best = 1e30;
    std::size_t out_tokens = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = Clock::now();
      const auto res = gen.generate(sources, rows, bo);
      best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
      out_tokens = 0;
      for (const auto& h : res) out_tokens += h.front().ids.size();
    }
    std::printf(
        "bench.generate.seq2seq_beam4_batch_16.sources_per_s: %.1f sources/s (%.1f ms, "
        "%zu output tokens)\n",
        16 / best, 1e3 * best, out_tokens);
  }
  std::printf("bench.generate.max_rss: %.0f MiB\n", max_rss_mib());
  return 0;
}
