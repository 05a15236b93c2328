// stag-generate: samples text from a trained language model checkpoint (language_model<C> with
// a compiled-in config, see models/lm_presets.hpp), with a key/value cache, and reports the
// prefill and decode speed. The text is printed as it is sampled (GenerateOptions::on_token).
// With an encoder-decoder checkpoint (stag-train g2p or seq2seq) it translates instead: each
// line of stdin (or --prompt, --prompt-file) through stag::Translator, greedy or beam search.
// With --hf it runs a Hugging Face model folder (models/hf.hpp: GPT-2 / Llama / Qwen2 configs
// that match a compiled-in preset) with the folder's tokeniser.
// To add an option, add a flag here and a field in GenerateOptions. The program's main is
// stag_generate_main.cpp; a program with its own model sizes calls generate_main with them.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "generate_main.hpp"

#include <stag/models/generator.hpp>
#include <stag/models/hf.hpp>
#include <stag/models/translator.hpp>
#include <stag/ops/random.hpp>
#include <stag/runtime/cpu/omp_policy.hpp>
#include <stag/runtime/params.hpp>

namespace {

void print_speed(const stag::GenerateResult& r) {
  std::printf("prompt_tokens: %lld  prefill_tokens_per_s: %.1f  (%.2f ms)\n",
              static_cast<long long>(r.prefill_tokens), r.prefill_tokens_per_s(),
              1e3 * r.prefill_seconds);
  std::printf("new_tokens: %zu  decode_ms_per_token: %.3f  setup_ms: %.1f\n", r.new_ids.size(),
              r.decode_tokens ? 1e3 * r.decode_seconds / static_cast<double>(r.decode_tokens) : 0.0,
              1e3 * r.setup_seconds);
  std::printf("tokens_per_s: %.1f\n", r.decode_tokens_per_s());
}

// A prompt of n random ids below `vocab` (the same for every run).
std::vector<std::int32_t> random_prompt(int n, std::int64_t vocab) {
  std::vector<std::int32_t> prompt;
  for (int i = 0; i < n; ++i)
    prompt.push_back(
        static_cast<std::int32_t>(stag::random::bits(7, 0, 0, static_cast<std::uint64_t>(i)) %
                                  static_cast<std::uint64_t>(vocab)));
  return prompt;
}

// This process's resident memory and its peak so far, in MiB (/proc/self/status: VmRSS, VmHWM).
std::pair<double, double> resident_mib() {
  std::ifstream in("/proc/self/status");
  double rss = 0, peak = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) rss = std::atof(line.c_str() + 6) / 1024.0;
    if (line.rfind("VmHWM:", 0) == 0) peak = std::atof(line.c_str() + 6) / 1024.0;
  }
  return {rss, peak};
}

const char* weights_text(stag::DType t) {
  return t == stag::DType::bf16 ? "bf16 weights, bf16 matmuls" : "f32 weights";
}

// Speed with random weights and a random prompt (the figures in docs/generation.md).
int bench_random(const std::string& name, int prompt_tokens, stag::GenerateOptions o, int threads,
                 const std::string& schedule, stag::DType weight_type) {
  try {
    const stag::LmPreset* p = stag::find_lm_preset(name);
    if (p == nullptr)
      throw stag::Error("stag: no compiled-in model '" + name + "' (see --list-models)");
    stag::NamedArrays weights;
    for (auto& [k, a] : stag::make_params(p->decode, {{"batch", 1}, {"max_len", 1}}, 1))
      if (k.find("_cache") == std::string::npos) weights.emplace(k, a);
    stag::GeneratorOptions go;
    go.threads = threads;
    go.schedule = schedule == "parallel" ? stag::Schedule::parallel : stag::Schedule::sequential;
    go.weights = weight_type;
    stag::Generator gen(*p, weights, std::nullopt, go);
    const std::vector<std::int32_t> prompt = random_prompt(prompt_tokens, p->config->vocab);
    o.stop_at_eos = false;
    o.add_bos = false;
    const stag::GenerateResult r = gen.generate_ids(prompt, o);
    std::printf("model: %s (random weights, %s), cache %lld positions\n",
                std::string(p->name).c_str(), weights_text(weight_type),
                static_cast<long long>(gen.max_len()));
    print_speed(r);
  } catch (const stag::Error& e) {
    std::fprintf(stderr, "stag-generate: %s\n", e.what());
    return 1;
  }
  return 0;
}

// Translation mode: every line of `lines` through an encoder-decoder checkpoint (stag-train g2p
// or seq2seq), the outputs on stdout, one line per input line (n-best: "line<TAB>rank<TAB>
// score<TAB>text" lines), the speed on stderr.
int translate(const std::string& checkpoint, const std::vector<std::string>& lines,
              const stag::Seq2SeqGenerateOptions& o, int threads, bool allow_nonfinite,
              stag::Device device) {
  const auto t0 = std::chrono::steady_clock::now();
  stag::Translator tr(checkpoint,
                      {.threads = threads, .allow_nonfinite = allow_nonfinite, .device = device});
  const auto t1 = std::chrono::steady_clock::now();
  const auto out = tr.translate(lines, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  std::size_t empty = 0;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].empty()) ++empty;
    if (o.search.n_best == 1) {
      std::printf("%s\n", out[i].empty() ? "" : out[i][0].text.c_str());
      continue;
    }
    for (std::size_t k = 0; k < out[i].size(); ++k)
      std::printf("%zu\t%zu\t%.4f\t%s\n", i + 1, k + 1, out[i][k].score, out[i][k].text.c_str());
  }
  std::fflush(stdout);
  if (empty > 0)
    std::fprintf(stderr,
                 "stag-generate: %zu empty line(s) (no character the model knows) left empty\n",
                 empty);
  std::fprintf(stderr,
               "---\nmodel: %s %s, beam %d; %zu lines in %.3f s (%.1f lines/s), load %.2f s\n",
               tr.task().c_str(), tr.preset().c_str(), o.search.beam_size, lines.size(), secs,
               secs > 0 ? static_cast<double>(lines.size()) / secs : 0.0,
               std::chrono::duration<double>(t1 - t0).count());
  return 0;
}

}  // namespace

int stag::generate_main(int argc, char** argv, std::span<const LmPreset> extra_presets) {
  // NOTE: OpenMP threads that spin while they wait (libgomp's default) slow every step down on
  // a busy machine, and a chunked prefill, which runs more steps, the most: measured with one
  // core busy, a 972-token prefill took 1.15x longer in chunks of 64 than in one pass while
  // spinning, and 0.67x as long with passive waiting (docs/benchmarks.md). libgomp reads the
  // policy when it loads, so the program sets it, unless given, and starts again.
  stag::choose_omp_wait_policy(argv);
  CLI::App app{
      "stag-generate: sample text from a trained stag language model, or translate lines "
      "(stdin, --prompt or --prompt-file) with an encoder-decoder checkpoint (stag-train g2p, "
      "seq2seq)"};
  std::string checkpoint, hf_folder, prompt, prompt_file, tokenizer, schedule = "sequential";
  std::string weights = "f32";
  stag::GenerateOptions o;
  o.max_new_tokens = 200;
  o.sample.temperature = 0.8;
  int threads = 0;
  std::int64_t max_len = 0;
  bool bos = false, no_bos = false, ignore_eos = false, list = false;
  std::string random_model;
  int prompt_tokens = 64;
  app.add_option("--checkpoint", checkpoint,
                 "checkpoint (.safetensors) saved from a language model");
  app.add_option("--hf", hf_folder,
                 "a Hugging Face model folder (config.json, model.safetensors or its shards, "
                 "tokenizer.json) whose config is a compiled-in preset (see --list-models)")
      ->excludes("--checkpoint");
  app.add_option("--prompt", prompt, "text to continue (empty: start from <bos>)");
  app.add_option("--prompt-file", prompt_file, "read the text to continue from this file")
      ->excludes("--prompt");
  app.add_option("--max-new-tokens", o.max_new_tokens, "tokens to generate")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--temperature", o.sample.temperature, "softmax temperature; 0 = greedy")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top-k", o.sample.top_k, "sample among the k most likely tokens (0: all)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--top-p", o.sample.top_p,
                 "sample among the most likely tokens whose probability reaches p (1: all)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--seed", o.sample.seed, "seed of the sampler (same seed, same text)");
  app.add_option("--threads", threads, "threads (0: every core)")->check(CLI::NonNegativeNumber);
  std::string device = "cpu";
  app.add_option("--device", device,
                 "where the model's steps run: cpu, cuda (the GPU backend), or cuda_interpret "
                 "(its kernels on the CPU, slowly: a check without a GPU)")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda_interpret"}));
  app.add_option("--tokenizer", tokenizer,
                 "tokeniser: a JSON file (stag's, or a Hugging Face tokenizer.json) or a model "
                 "folder; overrides the one the checkpoint names");
  app.add_option("--max-len", max_len, "positions in the key/value cache (0: prompt + new tokens)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--prefill-chunk", o.prefill_chunk,
                 "prompt tokens per step (0: whole prompt at once; 1: one by one)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--schedule", schedule, "sequential or parallel (TBB) execution of each step")
      ->check(CLI::IsMember({"sequential", "parallel"}));
  app.add_option("--weights", weights,
                 "f32, or bf16: the matmuls' weights kept in bf16 (half the memory and half the "
                 "bytes read per token; bf16 matmuls with f32 sums; the Hugging Face presets)")
      ->check(CLI::IsMember({"f32", "bf16"}));
  app.add_flag("--bos", bos, "start the prompt with <bos>");
  app.add_flag("--no-bos", no_bos, "do not start the prompt with <bos>");
  app.add_flag("--ignore-eos", ignore_eos, "keep generating after <eos>");
  app.add_flag("--list-models", list, "print the compiled-in model configs and exit");
  bool allow_nonfinite = false;
  app.add_flag("--allow-nonfinite", allow_nonfinite,
               "load the checkpoint even if a weight is NaN or infinite (its samples are garbage)");
  app.add_option("--random-weights", random_model,
                 "benchmark: a compiled-in model (see --list-models) with random weights instead "
                 "of a checkpoint");
  app.add_option("--prompt-tokens", prompt_tokens,
                 "benchmark: random prompt length with --random-weights, or with --hf instead "
                 "of a text prompt")
      ->check(CLI::PositiveNumber);
  stag::Seq2SeqGenerateOptions so;
  app.add_option("--beam", so.search.beam_size,
                 "beam width (1: greedy): translation, language models and --hf folders")
      ->check(CLI::Range(1, 64));
  app.add_option("--n-best", so.search.n_best,
                 "encoder-decoder checkpoints: outputs per line, best first (at most --beam)")
      ->check(CLI::Range(1, 64));
  app.add_option("--length-penalty", so.search.length_penalty,
                 "encoder-decoder checkpoints: rank by log p / length^this")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  // The presets a checkpoint or a folder may have: the program's own, then the library's.
  std::vector<stag::LmPreset> presets(extra_presets.begin(), extra_presets.end());
  presets.insert(presets.end(), stag::lm_presets().begin(), stag::lm_presets().end());
  if (list) {
    for (const stag::LmPreset& p : presets)
      std::printf("%-12s %s\n             %s\n", std::string(p.name).c_str(),
                  std::string(p.what).c_str(), stag::lm_config_text(*p.config).c_str());
    return 0;
  }
  const stag::DType weight_type = weights == "bf16" ? stag::DType::bf16 : stag::DType::f32;
  if (!random_model.empty())
    return bench_random(random_model, prompt_tokens, o, threads, schedule, weight_type);
  if (checkpoint.empty() && hf_folder.empty()) {
    std::fprintf(stderr, "stag-generate: --checkpoint or --hf is required (see --help)\n");
    return 2;
  }
  if (bos && no_bos) {
    std::fprintf(stderr, "stag-generate: --bos and --no-bos contradict each other\n");
    return 2;
  }
  if (bos) o.add_bos = true;
  if (no_bos) o.add_bos = false;
  o.stop_at_eos = !ignore_eos;
  if (!prompt_file.empty()) {
    std::ifstream in(prompt_file, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "stag-generate: cannot read the prompt file %s\n", prompt_file.c_str());
      return 1;
    }
    prompt.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  try {
    const std::string task = hf_folder.empty() ? stag::Translator::task_of(checkpoint) : "lm";
    if (task == "g2p" || task == "seq2seq") {
      // Lines to translate: --prompt, --prompt-file, or stdin.
      std::vector<std::string> lines;
      std::istringstream given(prompt);
      std::istream& in = !prompt.empty() ? static_cast<std::istream&>(given) : std::cin;
      for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(line);
      }
      so.max_new = app.count("--max-new-tokens") ? o.max_new_tokens : 0;
      return translate(checkpoint, lines, so, threads, allow_nonfinite,
                       *stag::device_from_name(device));
    }
    const bool beam = app.count("--beam") > 0;
    for (const char* flag : {"--n-best", "--length-penalty"})
      if (app.count(flag) && !beam) throw stag::Error(std::string(flag) + " needs --beam");
    stag::GeneratorOptions go;
    go.threads = threads;
    go.device = *stag::device_from_name(device);
    go.max_len = max_len;
    go.tokenizer_path = tokenizer;
    go.allow_nonfinite = allow_nonfinite;
    go.presets = extra_presets;
    go.weights = weight_type;
    go.schedule = schedule == "parallel" ? stag::Schedule::parallel : stag::Schedule::sequential;
    const auto t_load = std::chrono::steady_clock::now();
    const std::unique_ptr<stag::Generator> made =
        hf_folder.empty() ? std::make_unique<stag::Generator>(checkpoint, go)
                          : stag::hf::generator(hf_folder, go, presets);
    stag::Generator& gen = *made;
    const double load_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t_load).count();
    const std::pair<double, double> memory = resident_mib();  // after loading
    const auto print_load = [&] {
      std::printf("load_seconds: %.2f  rss_mib: %.0f  peak_rss_mib: %.0f\n", load_seconds,
                  memory.first, memory.second);
    };
    if (!hf_folder.empty() && app.count("--prompt-tokens")) {
      // Benchmark: a random prompt of --prompt-tokens ids; no tokeniser needed.
      o.stop_at_eos = false;
      o.add_bos = false;
      const stag::GenerateResult r =
          gen.generate_ids(random_prompt(prompt_tokens, gen.preset().config->vocab), o);
      std::printf("model: %s (%s, random prompt, %s), cache %lld positions\n",
                  std::string(gen.preset().name).c_str(), hf_folder.c_str(),
                  weights_text(weight_type), static_cast<long long>(gen.max_len()));
      print_load();
      print_speed(r);
      return 0;
    }
    if (!gen.tokenizer())
      throw stag::Error(hf_folder +
                        " has no tokeniser (tokenizer.json, or vocab.json and "
                        "merges.txt)");
    if (beam) {
      // Beam search: the n-best continuations, "rank<TAB>score<TAB>text" lines.
      std::vector<std::int32_t> ids = gen.tokenizer()->encode(prompt);
      if (o.add_bos.value_or(gen.add_bos()) || ids.empty()) {
        if (gen.bos_id() < 0)
          throw stag::Error("the model has no <bos> (bos_token_id) to start an empty prompt");
        ids.insert(ids.begin(), gen.bos_id());
      }
      so.search.max_new = o.max_new_tokens;
      const auto found = gen.beam_search(ids, so.search);
      for (std::size_t k = 0; k < found.size(); ++k)
        std::printf("%zu\t%.4f\t%s%s\n", k + 1, found[k].score, prompt.c_str(),
                    gen.tokenizer()->decode(found[k].ids).c_str());
      std::printf("---\nmodel: %s, beam %d, %s\n", std::string(gen.preset().name).c_str(),
                  so.search.beam_size, weights_text(weight_type));
      return 0;
    }
    // The prompt, then each token as it comes.
    std::fputs(prompt.c_str(), stdout);
    std::fflush(stdout);
    o.on_token = [](const stag::TokenEvent& e) {
      std::fwrite(e.text.data(), 1, e.text.size(), stdout);
      std::fflush(stdout);
      return true;
    };
    const stag::GenerateResult r = gen.generate(prompt, o);
    std::printf("\n");
    std::printf("---\nmodel: %s (%s tokeniser, %s), cache %lld positions\n",
                std::string(gen.preset().name).c_str(),
                std::string(gen.tokenizer()->kind()).c_str(), weights_text(weight_type),
                static_cast<long long>(gen.max_len()));
    if (!hf_folder.empty()) print_load();
    print_speed(r);
  } catch (const stag::Error& e) {
    std::string what = e.what();
    if (what.rfind("stag: ", 0) == 0) what = what.substr(6);  // one program name is enough
    std::fprintf(stderr, "stag-generate: %s\n", what.c_str());
    return 1;
  }
  return 0;
}
