// The ONNX export against ONNX Runtime (npm onnxruntime-node, an outside implementation of every
// ONNX op): each bundled model family exported once and run at two lengths from the one file,
// its outputs within 1e-4 of stag's session. Label onnx (tools/data.sh --only onnxruntime).
#include <filesystem>

#include <stag/models/generator.hpp>
#include <stag/models/hf.hpp>
#include <stag/models/seq2seq_generator.hpp>
#include <stag/runtime/onnx/export.hpp>
#include <stag/runtime/sample_inputs.hpp>

#include "harness.hpp"
#include "hf_presets.hpp"
#include "ort_run.hpp"
#include "skip.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;
namespace fs = std::filesystem;

constexpr ClassifierConfig kCls{.vocab = 50,
                                .max_len = 16,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .layers = 2,
                                .classes = 3,
                                .dropout = 0.1};
constexpr auto cls = model([](Builder& g) { return classifier<kCls>(g); });
constexpr ClassifierConfig kClsPre{.vocab = 50,
                                   .max_len = 16,
                                   .d_model = 16,
                                   .heads = 4,
                                   .d_ff = 24,
                                   .layers = 1,
                                   .classes = 2,
                                   .dropout = 0.0,
                                   .pre_norm = true};
constexpr auto cls_pre = model([](Builder& g) { return classifier<kClsPre>(g); });
constexpr TransformerConfig kTf{.src_vocab = 30,
                                .tgt_vocab = 40,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .enc_layers = 2,
                                .dec_layers = 2,
                                .dropout = 0.1};
constexpr auto tf = model([](Builder& g) { return transformer<kTf>(g); });
constexpr LmConfig kLm{
    .vocab = 60, .d_model = 16, .heads = 4, .kv_heads = 2, .d_ff = 32, .layers = 2};
constexpr auto lm = model([](Builder& g) { return language_model<kLm>(g); });
constexpr auto gpt2 = model([](Builder& g) { return language_model<th::kTinyGpt2>(g); });
constexpr auto qwen2 = model([](Builder& g) { return language_model<th::kTinyQwen2>(g); });

#define STAG_NEEDS_ORT()                                                         \
  if (th::ort_dir().empty())                                                     \
  STAG_SKIP(                                                                     \
      "ONNX Runtime is not installed (tools/data.sh --only onnxruntime, or set " \
      "STAG_ORT_DIR)")

double worst_difference(const Array& got, const Array& want) {
  REQUIRE(got.dims() == want.dims());
  const std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i)
    worst = std::max(worst, std::abs(g[i] - w[i]) / std::max(1.0, std::abs(w[i])));
  return worst;
}

// Exports `g`'s `outputs` once, then at each binding of `dims` runs stag's session and ONNX
// Runtime on the same inputs and compares every output.
void check_model(const GraphView& g, const std::vector<std::string>& outputs,
                 const std::vector<DimValues>& bindings, const std::string& what,
                 bool external_data = false, bool attention_op = false) {
  INFO(what);
  th::TempDir tmp("onnx");
  const fs::path path = tmp.dir / "model.onnx";
  Session s(g, {.threads = 1, .seed = 3});
  s.set_inputs(sample_inputs(g, bindings.front()));
  s.run();
  export_onnx(g, s.params(), path.string(),
              {.outputs = outputs, .external_data = external_data, .attention_op = attention_op});
  if (external_data) {  // the weights beside the model, which stays small
    REQUIRE(fs::exists(path.string() + ".data"));
    CHECK(fs::file_size(path) < 64 * 1024);
    CHECK(fs::file_size(path.string() + ".data") > 100 * 1024);
  }
  for (const DimValues& dims : bindings) {
    INFO("batch " << dims.at("batch"));
    NamedArrays in = sample_inputs(g, dims, {.seed = 5});
    s.set_inputs(in);
    s.run();
    // The model's inputs are the ones its outputs need (a classifier's logits need no labels).
    NamedArrays feed;
    for (const char* name : {"ids", "keep", "src", "src_keep", "tgt_in", "tgt_keep"})
      if (g.find(name) >= 0 && in.count(name)) feed.emplace(name, in.at(name));
    const NamedArrays got = th::ort_run(path.string(), feed);
    for (const std::string& o : outputs) {
      INFO("output " << o);
      REQUIRE(got.count(o) == 1);
      const double worst = worst_difference(got.at(o), s.get(o));
      INFO("largest scaled difference " << worst);
      CHECK(worst <= 1e-4);
    }
  }
}

TEST_CASE("ONNX Runtime runs exported classifiers: logits of padded batches at two lengths",
          "[onnx]") {
  STAG_NEEDS_ORT();
  check_model(cls, {"logits"}, {{{"batch", 3}, {"seq", 7}}, {{"batch", 2}, {"seq", 13}}},
              "classifier (Post-LN, dropout)");
  check_model(cls_pre, {"logits"}, {{{"batch", 4}, {"seq", 5}}, {{"batch", 1}, {"seq", 16}}},
              "classifier (Pre-LN)");
}

TEST_CASE(
    "ONNX Runtime runs exported language models: causal attention, rope, GQA, Llama, "
    "Qwen2 and GPT-2 layouts",
    "[onnx]") {
  STAG_NEEDS_ORT();
  const std::vector<DimValues> b = {{{"batch", 2}, {"seq", 9}}, {{"batch", 3}, {"seq", 4}}};
  check_model(lm, {"logits"}, b, "lm (GQA 4/2)");
  check_model(qwen2, {"logits"}, b, "Qwen2 layout (biases, GQA 6/2, untied)");
  check_model(gpt2, {"logits"}, b, "GPT-2 layout (learned positions, GELU-tanh, tied)");
  check_model(qwen2, {"logits"}, b, "Qwen2 layout, weights as external data", true);
}

TEST_CASE("ONNX Runtime runs an exported encoder-decoder: padding, causal and cross attention",
          "[onnx]") {
  STAG_NEEDS_ORT();
  check_model(tf, {"logits"},
              {{{"batch", 2}, {"src_seq", 7}, {"tgt_seq", 5}},
               {{"batch", 3}, {"src_seq", 4}, {"tgt_seq", 9}}},
              "transformer");
}

// Greedy decoding's next token of each row of logits [batch, 1, vocab], from stag's and from
// ONNX Runtime's logits: they must agree (the first maximum wins in both).
Array next_tokens(const Array& want, const Array& got) {
  const std::int64_t batch = want.dims()[0], vocab = want.dims().back();
  std::vector<std::int32_t> next(static_cast<std::size_t>(batch));
  for (std::int64_t b = 0; b < batch; ++b) {
    std::int64_t best = 0, best_ort = 0;
    for (std::int64_t v = 1; v < vocab; ++v) {
      if (want.at(b * vocab + v) > want.at(b * vocab + best)) best = v;
      if (got.at(b * vocab + v) > got.at(b * vocab + best_ort)) best_ort = v;
    }
    CHECK(best_ort == best);
    next[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(best);
  }
  return Array::from_vector<std::int32_t>({batch, 1}, next);
}

// The decode step with the key/value caches as explicit inputs and outputs (present.<name>),
// fed back by the caller: greedy generation in ONNX Runtime, token for token as stag's session
// (which keeps its caches as state), for a Llama-layout (GQA, rope over cache positions) and a
// GPT-2-layout model (learned positions).
template <const LmConfig& C>
void check_decode(const std::string& what, const NamedArrays* weights = nullptr,
                  bool external_data = false, bool attention_op = false) {
  INFO(what);
  const GraphView& g = lm_decode_graph<C>;
  constexpr std::int64_t kBatch = 2, kLen = 24, kPrompt = 5, kSteps = 8;
  Session s(g, {.threads = 1,
                .seed = 7,
                .dims = {{"max_len", kLen}},
                .shared_params = weights != nullptr ? *weights : NamedArrays{}});
  th::TempDir tmp("onnx_decode");
  const std::string path = tmp / "decode.onnx";
  Array ids = th::random_array(DType::i32, {kBatch, kPrompt}, 11, 0, C.vocab);
  Array pos = Array::from_vector<std::int32_t>({kBatch}, {0, 0});
  const std::vector<std::int32_t> last(kBatch, kPrompt - 1);
  Array select = select_positions(last, kPrompt);
  NamedArrays caches;  // ONNX Runtime's: zeros, then each step's present.<name>
  bool exported = false;
  for (int step = 0; step <= kSteps; ++step) {
    INFO("step " << step);
    const NamedArrays in{{"ids", ids}, {"pos", pos}, {"select", select}};
    s.set_inputs(in);
    s.run();
    if (!exported && weights != nullptr)  // the session runs on the given weights
      for (const auto& [name, w] : *weights) CHECK(s.params().at(name).raw() == w.raw());
    if (!exported) {  // the weights exist once the session has run
      export_onnx(g, s.params(), path,
                  {.external_data = external_data, .attention_op = attention_op});
      for (const std::string& name : onnx_inputs(g))
        if (!in.count(name)) {
          const Array& c = s.params().at(name);
          caches.emplace(name, Array(c.dtype(), c.dims()));  // zero-filled
        }
      REQUIRE(caches.size() == 2 * static_cast<std::size_t>(C.layers));
      exported = true;
    }
    NamedArrays feed = in;
    for (const auto& [name, c] : caches) feed.emplace(name, c);
    const NamedArrays got = th::ort_run(path, feed);
    const Array want = s.get("logits");  // [batch, 1, vocab]
    CHECK(worst_difference(got.at("logits"), want) <= 1e-4);
    for (auto& [name, c] : caches) c = got.at("present." + name);
    ids = next_tokens(want, got.at("logits"));
    const std::int32_t p = static_cast<std::int32_t>(kPrompt + step);
    pos = Array::from_vector<std::int32_t>({kBatch}, {p, p});
    select = select_all_positions(kBatch, 1);
  }
}

TEST_CASE("ONNX Runtime generates greedily from an exported decode step, token for token as stag",
          "[onnx]") {
  STAG_NEEDS_ORT();
  check_decode<kLm>("lm (GQA 4/2)");
  check_decode<th::kTinyGpt2>("GPT-2 layout");
}

// A Hugging Face folder (tests/hf/qwen2: Qwen2ForCausalLM in two F16 shards, what
// `stag-export --hf` reads) loaded by hf::load and exported with its weights as external data.
TEST_CASE("ONNX Runtime generates from an exported Hugging Face folder, weights beside the model",
          "[onnx]") {
  STAG_NEEDS_ORT();
  const hf::Model m = hf::load(th::hf_fixture("qwen2"), th::kTinyPresets);
  REQUIRE(m.preset->config == &th::kTinyQwen2);
  check_decode<th::kTinyQwen2>("tests/hf/qwen2", &m.weights, true);
}

// The encoder-decoder's encoder (memory and each layer's cross-attention keys and values) and
// decode step (self-attention caches in and out, the memory as inputs), as stag-export writes
// them: greedy decoding of a padded batch in ONNX Runtime, token for token as stag's
// Seq2SeqGenerator.
TEST_CASE("ONNX Runtime translates greedily with an exported encoder and decode step", "[onnx]") {
  STAG_NEEDS_ORT();
  const Seq2SeqGraphs gs = seq2seq_graphs<kTf>();
  const NamedArrays weights = seq2seq_weights(gs, 5);
  constexpr std::int64_t kBatch = 2, kSrc = 6, kLen = 12, kSteps = 8;
  th::TempDir tmp("onnx_s2s");
  OnnxOptions enc{.outputs = {"memory"}};
  for (const std::string& name : seq2seq_memory_names(gs)) enc.outputs.push_back(name);
  export_onnx(gs.encode, weights, tmp / "encoder.onnx", enc);
  export_onnx(gs.decode, weights, tmp / "decoder.onnx", {.outputs = {"logits"}});

  const Array src = th::random_array(DType::i32, {kBatch, kSrc}, 21, 4, kTf.src_vocab);
  Array keep(DType::boolean, {kBatch, kSrc});
  for (std::int64_t i = 0; i < kBatch * kSrc; ++i) keep.set(i, i % kSrc < (i < kSrc ? 6 : 4));
  Seq2SeqGenerator gen(gs, weights, {.threads = 1});
  gen.encode(src, keep, 1, kLen);
  const NamedArrays memory = th::ort_run(tmp / "encoder.onnx", {{"src", src}, {"src_keep", keep}});
  NamedArrays state;  // the decoder's cache and memory inputs
  for (const std::string& name : onnx_inputs(gs.decode)) {
    if (name == "ids" || name == "pos" || name == "src_keep") continue;
    if (memory.count(name)) {
      state.emplace(name, memory.at(name));
    } else {
      const int n = gs.decode.find(name);
      REQUIRE(n >= 0);
      const ShapeV& sh = gs.decode.shape(n);  // [batch, heads, max_len, head_dim]
      state.emplace(name, Array(DType::f32, {kBatch, sh[1].coef, kLen, sh[3].coef}));
    }
  }
  REQUIRE(state.size() == 4 * static_cast<std::size_t>(kTf.dec_layers));
  Array ids = Array::from_vector<std::int32_t>({kBatch, 1}, {1, 1});  // <bos>
  for (std::int32_t step = 0; step < kSteps; ++step) {
    INFO("step " << step);
    const std::vector<std::int32_t> p = {step, step};
    const Array want = gen.step(ids, p);  // [batch, 1, tgt_vocab]
    NamedArrays feed = state;
    feed.emplace("ids", ids);
    feed.emplace("pos", Array::from_vector<std::int32_t>({kBatch}, p));
    feed.emplace("src_keep", keep);
    const NamedArrays got = th::ort_run(tmp / "decoder.onnx", feed);
    CHECK(worst_difference(got.at("logits"), want) <= 1e-4);
    for (auto& [name, c] : state)
      if (got.count("present." + name)) c = got.at("present." + name);
    ids = next_tokens(want, got.at("logits"));
  }
}

// OnnxOptions::attention_op: opset 23, the fused attention as ONNX's Attention op (padding
// masks, causal masks, GQA, cross-attention, cache positions), which ONNX Runtime implements.
TEST_CASE("ONNX Runtime runs models exported with the opset-23 Attention op", "[onnx]") {
  STAG_NEEDS_ORT();
  check_model(cls, {"logits"}, {{{"batch", 3}, {"seq", 7}}, {{"batch", 2}, {"seq", 13}}},
              "classifier, Attention op", false, true);
  const std::vector<DimValues> b = {{{"batch", 2}, {"seq", 9}}, {{"batch", 3}, {"seq", 4}}};
  check_model(lm, {"logits"}, b, "lm (GQA 4/2), Attention op", false, true);
  check_model(tf, {"logits"},
              {{{"batch", 2}, {"src_seq", 7}, {"tgt_seq", 5}},
               {{"batch", 3}, {"src_seq", 4}, {"tgt_seq", 9}}},
              "transformer, Attention op", false, true);
  check_decode<kLm>("lm decode step, Attention op", nullptr, false, true);
}

// What does not export is refused by name before anything is written.
TEST_CASE("ONNX export refuses what it cannot export, naming the node and the reason", "[models]") {
  const std::string loss = onnx_unsupported(cls, {.outputs = {"result"}});
  CHECK_THAT(loss, Catch::Contains("cross_entropy") && Catch::Contains("a training loss"));
  CHECK(onnx_unsupported(cls, {.outputs = {"logits"}}).empty());
  static constexpr auto cls_train = grad<cls>();
  CHECK_THAT(onnx_unsupported(cls_train), Catch::Contains("a training loss"));
  CHECK_THAT(onnx_unsupported(cls_train, {.outputs = {"grad/tok.weight"}}),
             Catch::Contains("a gradient op"));
  CHECK_THAT(th::error_of([&] { onnx_model(cls, {}, {.outputs = {"probs"}}); }),
             Catch::Contains("no output 'probs'") && Catch::Contains("logits"));
  CHECK_THAT(th::error_of([&] { onnx_model(cls, {}, {.outputs = {"logits"}}); }),
             Catch::Contains("parameter 'tok.weight' is missing"));
  CHECK_THAT(th::error_of([&] {
               export_onnx(cls, make_params(cls, {}, 1), "/nonexistent-stag-dir/m.onnx",
                           {.outputs = {"logits"}});
             }),
             Catch::Contains("the folder /nonexistent-stag-dir does not exist"));
  NamedArrays wrong = make_params(cls, {}, 1);
  wrong.at("head.weight") = Array(DType::f32, {2, 16});
  CHECK_THAT(th::error_of([&] { onnx_model(cls, wrong, {.outputs = {"logits"}}); }),
             Catch::Contains("parameter 'head.weight' is f32 [2, 16]"));
}

TEST_CASE("an exported model names its inputs, symbolic dims and parameters as the graph does",
          "[models]") {
  const NamedArrays params = make_params(cls, {}, 1);
  const std::string bytes = onnx_model(cls, params, {.outputs = {"logits"}});
  // The serialised strings: the inputs (no label), the dim_params and a parameter's name.
  for (const char* s : {"ids", "keep", "batch", "seq", "tok.weight", "enc.1.self_attn.w_q.weight"})
    CHECK(bytes.find(s) != std::string::npos);
  CHECK(bytes.find("label") == std::string::npos);
  // The attention: the standard-op pattern by default, ONNX's Attention op with attention_op.
  CHECK(bytes.find("Softmax") != std::string::npos);
  CHECK(bytes.find("Attention") == std::string::npos);
  const std::string op23 = onnx_model(cls, params, {.outputs = {"logits"}, .attention_op = true});
  CHECK(op23.find("Attention") != std::string::npos);
  CHECK(op23.find("Softmax") == std::string::npos);
}

}  // namespace
