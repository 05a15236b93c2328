// Generation with a key/value cache: the decode-step graph has language_model's parameters; its
// logits equal the full forward's at every position (one token at a time, in chunks, batched,
// rows at different positions with padding and inactive rows, GQA, MQA and MHA, CPU schedules
// and the reference evaluator); positions past the cache are refused; checkpoints load;
// ragged batched generation gives each row the tokens it gets alone; bad prompts are clear
// errors. Sampling: test_sampling.cpp.
#include <filesystem>

#include <stag/models/generate.hpp>
#include <stag/models/generator.hpp>

#include "harness.hpp"

namespace {
using namespace stag;

constexpr LmConfig kGqa{.vocab = 37,
                        .d_model = 32,
                        .heads = 4,
                        .kv_heads = 2,
                        .d_ff = 48,
                        .layers = 2,
                        .rope_theta = 100.0};
constexpr LmConfig kMha{.vocab = 29,
                        .d_model = 24,
                        .heads = 3,
                        .kv_heads = 3,
                        .d_ff = 40,
                        .layers = 2,
                        .tie_embeddings = false};
constexpr LmConfig kMqa{
    .vocab = 31, .d_model = 32, .heads = 4, .kv_heads = 1, .d_ff = 32, .layers = 1};

template <const LmConfig& C>
struct FullLm {
  constexpr auto operator()(Builder& g) const { return language_model<C>(g); }
};
template <const LmConfig& C>
constexpr auto full_graph = model(FullLm<C>{});

// Every parameter of language_model<C> is a parameter of the decode step with the same name
// and shape, and the decode step has no other parameter.
template <const LmConfig& C>
constexpr bool same_parameters() {
  const GraphView full = full_graph<C>, dec = lm_decode_graph<C>;
  int n_full = 0;
  for (int n = 0; n < full.size(); ++n) {
    if (!(full.node(n).flags & kFlagParam)) continue;
    ++n_full;
    char buf[256] = {};
    const int len = full.write_name(full.node(n).scope, full.node(n).leaf, buf);
    const int m = dec.find(std::string_view(buf, static_cast<std::size_t>(len)));
    if (m < 0 || !(dec.node(m).flags & kFlagParam) || !(dec.shape(m) == full.shape(n)))
      return false;
  }
  return n_full == dec.count_flag(kFlagParam);
}
static_assert(same_parameters<kGqa>() && same_parameters<kMha>() && same_parameters<kMqa>());
static_assert(lm_decode_graph<kGqa>.count(op::cache_write) == 2 * kGqa.layers);
static_assert(lm_decode_graph<kGqa>.view().count_flag(kFlagState) == 2 * kGqa.layers);
static_assert(lm_decode_graph<kGqa>.shape("layers.1.self_attn.k_cache") ==
              Shape<dims::batch, 2, dims::max_len, 8>::value);

// Random tokens in [0, vocab).
Array random_ids(std::int64_t batch, std::int64_t len, std::int64_t vocab, std::uint64_t seed) {
  return th::random_array(DType::i32, {batch, len}, seed, 0, static_cast<double>(vocab));
}

// The full forward's logits [batch, len, vocab].
Array full_logits(const GraphView& g, const NamedArrays& params, const Array& ids) {
  Session s(g, {.threads = 2});
  s.set_params(params);
  s.set_inputs({{"ids", ids}, {"targets", Array(DType::i32, ids.dims())}});
  s.run();
  return s.get("logits");
}

// Rows [at, at + n) of the second dim of a [batch, len, vocab] array.
Array rows_of(const Array& a, std::int64_t at, std::int64_t n) {
  const std::int64_t b = a.dim(0), len = a.dim(1), v = a.dim(2);
  Array out(a.dtype(), {b, n, v});
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t t = 0; t < n; ++t)
      for (std::int64_t k = 0; k < v; ++k)
        out.set((i * n + t) * v + k, a.at((i * len + at + t) * v + k));
  return out;
}

// Scaled like the op harness: |got - want| / max(1, |want|).
void require_logits_close(const Array& got, const Array& want, const std::string& what) {
  REQUIRE(got.dims() == want.dims());
  double worst = 0;
  for (std::int64_t i = 0; i < got.numel(); ++i)
    worst = std::max(worst, std::abs(got.at(i) - want.at(i)) / std::max(1.0, std::abs(want.at(i))));
  INFO(what << ": largest scaled difference " << worst);
  REQUIRE(worst <= 2e-5);
}

// Feeds `ids` [batch, len] to a decode-step session in chunks of the given sizes and compares
// each step's logits with the full forward's rows.
void check_chunks(const GraphView& dec, const NamedArrays& params, const Array& ids,
                  const Array& want, const std::vector<std::int64_t>& chunks, Schedule sched,
                  std::int64_t max_len) {
  Session s(
      dec,
      {.threads = 2, .schedule = sched, .dims = {{"batch", ids.dim(0)}, {"max_len", max_len}}});
  for (const auto& [name, a] : params) s.set_param(name, a);
  std::int64_t pos = 0;
  for (std::int64_t n : chunks) {
    const Array part = [&] {
      Array p(DType::i32, {ids.dim(0), n});
      for (std::int64_t b = 0; b < ids.dim(0); ++b)
        for (std::int64_t t = 0; t < n; ++t) p.set(b * n + t, ids.at(b * ids.dim(1) + pos + t));
      return p;
    }();
    s.set_inputs(
        {{"ids", part},
         {"pos", Array::from_vector<std::int32_t>(
                     {ids.dim(0)}, std::vector<std::int32_t>(static_cast<std::size_t>(ids.dim(0)),
                                                             static_cast<std::int32_t>(pos)))},
         {"select", select_all_positions(ids.dim(0), n)}});
    s.run();
    require_logits_close(s.get("logits"), rows_of(want, pos, n),
                         "positions " + std::to_string(pos) + ".." + std::to_string(pos + n - 1));
    pos += n;
  }
}

template <const LmConfig& C>
void check_cached_equals_full(std::uint64_t seed) {
  const NamedArrays params = make_params(full_graph<C>, {}, seed);
  const std::int64_t len = 11;
  const Array ids = random_ids(2, len, C.vocab, seed + 1);
  const Array want = full_logits(full_graph<C>, params, ids);
  const GraphView dec = lm_decode_graph<C>;
  SECTION("one token per step") {
    check_chunks(dec, params, ids, want, std::vector<std::int64_t>(len, 1), Schedule::sequential,
                 16);
  }
  SECTION("prefill of 5, then single tokens and a chunk of 3") {
    check_chunks(dec, params, ids, want, {5, 1, 1, 3, 1}, Schedule::sequential, 11);
  }
  SECTION("the whole sequence in one step") {
    check_chunks(dec, params, ids, want, {len}, Schedule::sequential, 13);
  }
  SECTION("parallel schedule") {
    check_chunks(dec, params, ids, want, {4, 1, 2, 1, 1, 1, 1}, Schedule::parallel, 64);
  }
}

TEST_CASE("cached decoding gives the full forward's logits: GQA (4 query, 2 key/value heads)",
          "[generate]") {
  check_cached_equals_full<kGqa>(3);
}
TEST_CASE("cached decoding gives the full forward's logits: MHA, untied output", "[generate]") {
  check_cached_equals_full<kMha>(5);
}
TEST_CASE("cached decoding gives the full forward's logits: MQA (one key/value head)",
          "[generate]") {
  check_cached_equals_full<kMqa>(7);
}

// Rows at different positions in one step: row 0 and row 1 advance by different numbers of
// tokens (the shorter padded at the right), then row 0 is inactive while row 1 catches up.
// Every real token's logits equal the full forward's.
template <const LmConfig& C>
void check_ragged_steps(std::uint64_t seed) {
  const NamedArrays params = make_params(full_graph<C>, {}, seed);
  const Array ids = random_ids(2, 9, C.vocab, seed + 1);
  const Array want = full_logits(full_graph<C>, params, ids);
  Session s(lm_decode_graph<C>, {.threads = 2, .dims = {{"batch", 2}, {"max_len", 12}}});
  for (const auto& [name, a] : params) s.set_param(name, a);
  struct Step {
    std::int64_t width;
    std::int32_t at[2];  // position of each row (-1: inactive)
    std::int64_t n[2];   // real tokens of each row
  };
  const Step steps[] = {{4, {0, 0}, {4, 2}},
                        {3, {4, 2}, {3, 3}},
                        {2, {7, 5}, {2, 1}},
                        {1, {-1, 6}, {0, 1}},
                        {2, {-1, 7}, {0, 2}}};
  for (const Step& st : steps) {
    Array part(DType::i32, {2, st.width});  // padding: id 0
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t t = 0; t < st.n[b]; ++t)
        part.set(b * st.width + t, ids.at(b * 9 + st.at[b] + t));
    s.set_inputs({{"ids", part},
                  {"pos", Array::from<std::int32_t>({2}, {st.at[0], st.at[1]})},
                  {"select", select_all_positions(2, st.width)}});
    s.run();
    const Array got = s.get("logits");
    for (std::int64_t b = 0; b < 2; ++b)
      for (std::int64_t t = 0; t < st.n[b]; ++t) {
        double worst = 0;
        for (std::int64_t k = 0; k < C.vocab; ++k) {
          const double w = want.at((b * 9 + st.at[b] + t) * C.vocab + k);
          worst = std::max(worst, std::abs(got.at((b * st.width + t) * C.vocab + k) - w) /
                                      std::max(1.0, std::abs(w)));
        }
        INFO("row " << b << ", position " << st.at[b] + t << ": largest scaled difference "
                    << worst);
        REQUIRE(worst <= 2e-5);
      }
  }
}

TEST_CASE("one decode step serves rows at different positions (ragged, padded, inactive rows)",
          "[generate]") {
  check_ragged_steps<kGqa>(13);
  check_ragged_steps<kMqa>(17);
}

// `select` picks the positions whose logits a step computes (a prefill wants its last token's
// only): the head runs on one row per batch row, and each equals the full forward's logits of
// that position.
TEST_CASE("a decode step computes the logits of the positions select picks, and only those",
          "[generate]") {
  const NamedArrays params = make_params(full_graph<kGqa>, {}, 21);
  const Array ids = random_ids(2, 7, kGqa.vocab, 22);
  const Array want = full_logits(full_graph<kGqa>, params, ids);
  Session s(lm_decode_graph<kGqa>, {.threads = 1, .dims = {{"batch", 2}, {"max_len", 8}}});
  for (const auto& [name, a] : params) s.set_param(name, a);
  const std::vector<std::int32_t> at = {6, 2};
  s.set_inputs({{"ids", ids},
                {"pos", Array::from<std::int32_t>({2}, {0, 0})},
                {"select", select_positions(at, 7)}});
  s.run();
  const Array got = s.get("logits");
  REQUIRE(got.dims() == std::vector<std::int64_t>{2, 1, kGqa.vocab});
  for (std::int64_t b = 0; b < 2; ++b) {
    double worst = 0;
    for (std::int64_t k = 0; k < kGqa.vocab; ++k) {
      const double w = want.at((b * 7 + at[static_cast<std::size_t>(b)]) * kGqa.vocab + k);
      worst =
          std::max(worst, std::abs(got.at(b * kGqa.vocab + k) - w) / std::max(1.0, std::abs(w)));
    }
    INFO("row " << b << ", position " << at[static_cast<std::size_t>(b)]
                << ": largest scaled difference " << worst);
    REQUIRE(worst <= 2e-5);
  }
  const std::vector<std::int32_t> outside = {7};
  CHECK_THROWS_WITH(select_positions(outside, 7),
                    Catch::Contains("position 7 of row 0 is outside the step's 7 tokens"));
}

TEST_CASE("the reference evaluator runs the decode step too (cache in the parameter store)",
          "[generate]") {
  const NamedArrays params = make_params(full_graph<kGqa>, {}, 9);
  const Array ids = random_ids(1, 6, kGqa.vocab, 10);
  const Evaluation full = evaluate_reference(
      full_graph<kGqa>, {{"ids", ids}, {"targets", Array(DType::i32, {1, 6})}}, params);
  NamedArrays store = make_params(lm_decode_graph<kGqa>, {{"batch", 1}, {"max_len", 8}}, 0);
  for (const auto& [name, a] : params) store.at(name) = a;
  for (std::int64_t pos = 0; pos < 6; ++pos) {
    const Evaluation e = evaluate_reference(
        lm_decode_graph<kGqa>,
        {{"ids", Array::from<std::int32_t>({1, 1}, {static_cast<std::int32_t>(ids.at(pos))})},
         {"pos", Array::from<std::int32_t>({1}, {static_cast<std::int32_t>(pos)})},
         {"select", select_all_positions(1, 1)}},
        store);
    require_logits_close(e["logits"], rows_of(full["logits"], pos, 1),
                         "reference, position " + std::to_string(pos));
  }
}

TEST_CASE("a position past the cache is a clear error", "[generate]") {
  const NamedArrays params = make_params(full_graph<kGqa>, {}, 11);
  Session s(lm_decode_graph<kGqa>, {.threads = 1, .dims = {{"batch", 1}, {"max_len", 4}}});
  for (const auto& [name, a] : params) s.set_param(name, a);
  s.set_inputs({{"ids", Array::from<std::int32_t>({1, 2}, {1, 2})},
                {"pos", Array::from<std::int32_t>({1}, {3})},
                {"select", select_all_positions(1, 2)}});
  CHECK_THROWS_WITH(
      s.run(),
      Catch::Contains("layers.0.self_attn.k_cache_write: cache_write of 2 row(s) at position 3 "
                      "(batch row 0) does not fit a cache of 4 positions"));
  s.set_inputs({{"ids", Array::from<std::int32_t>({1, 1}, {1})},
                {"pos", Array::from<std::int32_t>({1}, {-2})},
                {"select", select_all_positions(1, 1)}});
  CHECK_THROWS_WITH(s.run(), Catch::Contains("at position -2 (batch row 0) does not fit"));
  Session unsized(lm_decode_graph<kGqa>, {.threads = 1});
  unsized.set_inputs({{"ids", Array::from<std::int32_t>({1, 1}, {1})},
                      {"pos", Array::from<std::int32_t>({1}, {0})},
                      {"select", select_all_positions(1, 1)}});
  CHECK_THROWS_WITH(
      unsized.run(),
      Catch::Contains("symbol 'max_len' is not determined by any input; pass its value in dims"));
}

// ---- the Generator ----------------------------------------------------------------------------

// A char-tiny checkpoint with random weights and a tokeniser in its config, as a trainer saves it.
std::string random_checkpoint(const std::string& file) {
  const LmPreset& p = *find_lm_preset("char-tiny");
  const NamedArrays all = make_params(p.decode, {{"batch", 1}, {"max_len", 1}}, 21);
  NamedArrays weights;
  for (const auto& [name, a] : all)
    if (name.find("_cache") == std::string::npos) weights.emplace(name, a);
  weights.emplace("embed_tokens.weight.adam_m",
                  Array(DType::f32, {128, 128}));  // optimizer state is ignored
  const data::CharTokenizer tok = data::CharTokenizer::build(
      std::vector<std::string>{"the quick brown fox jumps over the lazy dog"});
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  save_checkpoint(
      path, weights, {.step = 3},
      "{\"model\":" + lm_config_to_json(*p.config) + ",\"tokenizer\":" + tok.to_json() + "}");
  return path;
}

TEST_CASE("the model config round-trips through JSON and names its preset", "[generate]") {
  const LmConfig c = lm_config_from_json(lm_config_to_json(kLmCharTiny));
  CHECK(find_lm_preset(c) == find_lm_preset("char-tiny"));
  CHECK(
      lm_config_from_json(
          R"({"model": {"vocab": 5, "d_model": 8, "heads": 2, "kv_heads": 1, "d_ff": 4, "layers": 1}})")
          .vocab == 5);
  CHECK_THROWS_WITH(lm_config_from_json(R"({"vocab": 5})"), Catch::Contains("missing \"d_model\""));
  CHECK_THROWS_WITH(
      lm_config_from_json(
          R"({"vocab": 5.5, "d_model": 8, "heads": 2, "kv_heads": 1, "d_ff": 4, "layers": 1})"),
      Catch::Contains("\"vocab\" is 5.5, expected an integer"));
  CHECK_THROWS_WITH(require_lm_preset(kGqa),
                    Catch::Contains("no compiled-in language model has the config vocab=37"));
}

TEST_CASE("the Generator loads a checkpoint and generates deterministically per seed",
          "[generate]") {
  const std::string path = random_checkpoint("stag_test_generate.safetensors");
  Generator gen(path, {.threads = 2});
  CHECK(gen.preset().name == "char-tiny");
  REQUIRE(gen.tokenizer() != nullptr);
  GenerateOptions o{.max_new_tokens = 12,
                    .sample = {.temperature = 1.0, .top_k = 10, .seed = 7},
                    .stop_at_eos = false};
  const GenerateResult a = gen.generate("the fox", o);
  const GenerateResult b = gen.generate("the fox", o);
  CHECK(a.prompt_ids == gen.tokenizer()->encode("the fox"));
  REQUIRE(a.new_ids.size() == 12);
  CHECK(a.new_ids == b.new_ids);
  CHECK(a.text == gen.tokenizer()->decode(a.new_ids));
  for (std::int32_t id : a.new_ids)
    CHECK(id < static_cast<std::int32_t>(gen.tokenizer()->vocab_size()));
  CHECK(a.prefill_tokens == 7);
  CHECK(a.decode_tokens == 11);
  CHECK(a.decode_tokens_per_s() > 0);
  o.sample.seed = 8;
  CHECK(gen.generate("the fox", o).new_ids != a.new_ids);
  CHECK(gen.max_len() == 64);  // 7 + 11 positions, rounded up
  // Prefill in chunks feeds the same logits (compared in the tests above); here it must run.
  o.prefill_chunk = 3;
  CHECK(gen.generate("the fox", o).new_ids.size() == 12);
  std::filesystem::remove(path);
}

// [gpu]: the GPU under label cuda, the CUDA backend's kernels on the CPU under cuda_interpret.
TEST_CASE("the Generator on a device gives the CPU's tokens from the same checkpoint", "[gpu]") {
  const std::string path = random_checkpoint("stag_test_generate_device.safetensors");
  Generator cpu(path, {.threads = 1});
  Generator dev(path, {.device = th::gpu_device()});
  const GenerateOptions greedy{
      .max_new_tokens = 10, .sample = {.temperature = 0.0}, .stop_at_eos = false};
  const GenerateResult want = cpu.generate("the fox", greedy);
  CHECK(dev.generate("the fox", greedy).new_ids == want.new_ids);
  // Prefill in chunks of 3, then beam search: its rows' caches are reordered on the device.
  GenerateOptions chunked = greedy;
  chunked.prefill_chunk = 3;
  CHECK(dev.generate("the fox", chunked).new_ids == want.new_ids);
  const std::vector<std::int32_t> prompt = cpu.tokenizer()->encode("the quick");
  const BeamSearchOptions beam{.beam_size = 3, .n_best = 3, .max_new = 6};
  const std::vector<Hypothesis> a = cpu.beam_search(prompt, beam),
                                b = dev.beam_search(prompt, beam);
  REQUIRE(a.size() == b.size());
  for (std::size_t h = 0; h < a.size(); ++h) {
    INFO("hypothesis " << h);
    CHECK(a[h].ids == b[h].ids);
    CHECK(a[h].log_prob == Approx(b[h].log_prob).margin(1e-4));
  }
  std::filesystem::remove(path);
}

TEST_CASE("the Generator refuses what does not fit", "[generate]") {
  const std::string path = random_checkpoint("stag_test_generate_fit.safetensors");
  Generator gen(path, {.threads = 1, .max_len = 8});
  CHECK_THROWS_WITH(gen.generate("the lazy dog", {.max_new_tokens = 4}),
                    Catch::Contains("15 positions do not fit the cache of max_len 8"));
  CHECK_THROWS_WITH(Generator(path, {.tokenizer_path = "/nonexistent/tokenizer.json"}),
                    Catch::Contains("/nonexistent/tokenizer.json"));
  std::filesystem::remove(path);
}

TEST_CASE("a tokeniser whose \"type\" is not a string is a stag::Error, not an abort",
          "[generate][reliability]") {
  std::string e;
  try {
    TextTokenizer::from_json(R"({"type": 5})");
  } catch (const Error& err) {  // before the fix: nlohmann::json::type_error
    e = err.what();
  }
  CHECK_THAT(e, Catch::Contains(R"("type" is 5, not a string)"));
}

// ---- batched generation ----------------------------------------------------------------------

// Each prompt alone, then all in one batch: the same tokens row by row (greedy and sampled,
// one-pass and chunked prefill, rows stopped early by max_new_tokens and by the callback).
TEST_CASE("ragged batched generation equals one-by-one generation, row by row", "[generate]") {
  const std::string path = random_checkpoint("stag_test_generate_batch.safetensors");
  Generator gen(path, {.threads = 2});
  const std::vector<std::string> prompts{"the quick brown fox", "a", "lazy dog over the", "",
                                         "jumps"};
  const std::vector<int> max_new{9, 14, 3, 6, 11};
  for (const double temperature : {0.0, 1.0})
    for (const int chunk : {0, 3}) {
      INFO("temperature " << temperature << ", prefill chunk " << chunk);
      GenerateOptions o{.max_new_tokens = 0,
                        .sample = {.temperature = temperature, .top_k = 8, .seed = 11},
                        .prefill_chunk = chunk,
                        .stop_at_eos = false};
      // The callback stops the row of prompt 4 after its 5th token.
      std::vector<GenerateResult> alone;
      for (std::size_t i = 0; i < prompts.size(); ++i) {
        GenerateOptions oi = o;
        oi.max_new_tokens = max_new[i];
        const bool stops = i == 4;
        oi.on_token = [stops](const TokenEvent& e) { return !(stops && e.index == 4); };
        alone.push_back(gen.generate(prompts[i], oi));
      }
      o.on_token = [](const TokenEvent& e) { return !(e.row == 4 && e.index == 4); };
      const std::vector<GenerateResult> batch = gen.generate_batch(prompts, o, max_new);
      REQUIRE(batch.size() == prompts.size());
      for (std::size_t i = 0; i < prompts.size(); ++i) {
        INFO("prompt " << i << " '" << prompts[i] << "'");
        CHECK(batch[i].prompt_ids == alone[i].prompt_ids);
        CHECK(batch[i].new_ids == alone[i].new_ids);
        CHECK(batch[i].text == alone[i].text);
        CHECK(batch[i].new_ids.size() == (i == 4 ? 5u : static_cast<std::size_t>(max_new[i])));
        CHECK(batch[i].decode_tokens == static_cast<std::int64_t>(batch[i].new_ids.size()) - 1);
      }
    }
  std::filesystem::remove(path);
}

// ---- beam search ------------------------------------------------------------------------------

// The log-softmax over [eos, limit) of each position of one pass over prompt + ids (batch 1):
// the score of `ids` (and of <eos> after them when `finished`), and whether each id was the
// most likely allowed one.
std::pair<double, bool> score_alone(Generator& gen, const std::vector<std::int32_t>& prompt,
                                    const std::vector<std::int32_t>& ids, bool finished,
                                    std::int32_t limit) {
  std::vector<std::int32_t> all = prompt;
  all.insert(all.end(), ids.begin(), ids.end());
  const Array logits = gen.step(all, 0);  // [1, n + len, V]
  const std::int64_t v = logits.dim(2);
  double lp = 0;
  bool argmax = true;
  for (std::size_t j = 0; j < ids.size() + (finished ? 1 : 0); ++j) {
    const float* x = logits.data<float>() + static_cast<std::int64_t>(prompt.size() - 1 + j) * v;
    const std::int32_t want = j < ids.size() ? ids[j] : data::kEosId;
    double m = -INFINITY, sum = 0;
    std::int32_t best = data::kEosId;
    for (std::int32_t c = data::kEosId; c < limit; ++c) {
      m = std::max(m, double{x[c]});
      if (x[c] > x[best]) best = c;
    }
    for (std::int32_t c = data::kEosId; c < limit; ++c) sum += std::exp(x[c] - m);
    lp += x[want] - (m + std::log(sum));
    argmax = argmax && best == want;
  }
  return {lp, argmax};
}

TEST_CASE("language-model beam search: beam 1 takes the argmax, hypotheses score as the model does",
          "[generate][beam_search]") {
  const std::string path = random_checkpoint("stag_test_generate_beam.safetensors");
  Generator gen(path, {.threads = 1});
  const auto limit = static_cast<std::int32_t>(gen.tokenizer()->vocab_size());
  const std::vector<std::int32_t> prompt = gen.tokenizer()->encode("the quick");
  const std::vector<Hypothesis> greedy = gen.beam_search(prompt, {.beam_size = 1, .max_new = 7});
  REQUIRE(greedy.size() == 1);
  CHECK(score_alone(gen, prompt, greedy[0].ids, greedy[0].finished, limit).second);
  // Beam 3, 3-best: each row's cache followed its hypothesis (a row that read another's cache
  // would score its tokens wrongly), best first.
  const std::vector<Hypothesis> beam =
      gen.beam_search(prompt, {.beam_size = 3, .n_best = 3, .length_penalty = 0.0, .max_new = 7});
  REQUIRE(beam.size() == 3);
  for (std::size_t h = 0; h < beam.size(); ++h) {
    INFO("hypothesis " << h << ": " << beam[h].ids.size() << " ids");
    CHECK(
        beam[h].log_prob ==
        Approx(score_alone(gen, prompt, beam[h].ids, beam[h].finished, limit).first).margin(1e-4));
    if (h > 0) CHECK(beam[h].score <= beam[h - 1].score);
  }
  CHECK(beam[0].log_prob >= greedy[0].log_prob - 1e-6);  // at least as likely as greedy's
  CHECK_THROWS_WITH(gen.beam_search({}, {}), Catch::Contains("the prompt is empty"));
  CHECK_THROWS_WITH(gen.beam_search({5000}, {}), Catch::Contains("5000"));
  std::filesystem::remove(path);
}

TEST_CASE("the streaming callback sees every token in order, with its text", "[generate]") {
  const std::string path = random_checkpoint("stag_test_generate_stream.safetensors");
  Generator gen(path, {.threads = 1});
  std::vector<std::string> text(2);
  std::vector<std::size_t> next(2, 0);
  GenerateOptions o{.max_new_tokens = 7, .stop_at_eos = false};
  o.on_token = [&](const TokenEvent& e) {
    REQUIRE(e.row < 2);
    CHECK(e.index == next[e.row]++);
    text[e.row] += std::string(e.text);
    return true;
  };
  const std::vector<GenerateResult> r = gen.generate_batch({"the", "over the lazy"}, o);
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(next[i] == 7);
    CHECK(text[i] == r[i].text);
  }
  std::filesystem::remove(path);
}

TEST_CASE("bad prompts are clear errors: too long, ids outside the vocabulary, nothing to feed",
          "[generate]") {
  const std::string path = random_checkpoint("stag_test_generate_bad.safetensors");
  Generator gen(path, {.threads = 1, .max_len = 8});
  CHECK_THROWS_WITH(
      gen.generate("the quick brown fox", {.max_new_tokens = 1}),
      Catch::Contains("stag::Generator: 19 positions do not fit the cache of max_len "
                      "8; use a shorter prompt, fewer new tokens or a larger max_len"));
  CHECK_THROWS_WITH(gen.generate_ids({3, 128, 4}),
                    Catch::Contains("stag::Generator: the prompt: id 128 at position 1 is outside "
                                    "the model's vocabulary [0, 128)"));
  CHECK_THROWS_WITH(gen.generate_ids_batch({{3, 4}, {-5}}),
                    Catch::Contains("stag::Generator: prompt 1: id -5 at position 0 is outside "
                                    "the model's vocabulary [0, 128)"));
  CHECK_THROWS_WITH(gen.generate_ids_batch({}),
                    Catch::Contains("stag::Generator: no prompts to generate from"));
  CHECK_THROWS_WITH(
      gen.step(std::vector<std::int32_t>{}, 0),
      Catch::Contains("stag::Generator::step: no ids (a step feeds at least one token)"));
  CHECK_THROWS_WITH(gen.generate_batch({"a", "b"}, {}, {3}),
                    Catch::Contains("stag::Generator: 1 max_new_tokens for 2 prompts"));
  // An empty prompt is not an error: it starts a document (after <eos> here: the checkpoint's
  // config has no add_bos).
  const GenerateResult r = gen.generate("", {.max_new_tokens = 2, .stop_at_eos = false});
  CHECK(r.prompt_ids == std::vector<std::int32_t>{data::kEosId});
  CHECK(r.new_ids.size() == 2);
  std::filesystem::remove(path);
}

}  // namespace
