// Whole-model goldens (llm.c's test_gpt2): each file under tests/golden/ holds the inputs,
// parameters, outputs, loss and every gradient of a PyTorch model (tools/make_goldens.py); the
// same model built with stag runs on the f64 reference evaluator and the f32 CPU session, and
// every tensor is compared by name. To add a case: add it to make_goldens.py, then a graph here
// with the same config and one TEST_CASE calling check_golden.
#include <iostream>
#include <set>

#include <stag/models/models.hpp>

#include "golden_file.hpp"
#include "harness.hpp"
#include "source_dir.hpp"

namespace {
using namespace stag;
using namespace stag::dims;

// Tolerances, scaled by max(1, |torch value|):
// - reference (f64) vs PyTorch (f64): both compute in double precision; they differ only in
//   summation order and libm rounding, which after two layers is ~1e-14. 1e-10 leaves room for
//   that and still catches any semantic difference (an eps of 1e-6 instead of 1e-5, a RoPE
//   theta, a mask off by one position: all move values by > 1e-7).
// - CPU session (f32) vs PyTorch (f64): f32 rounding (2^-24 ~ 6e-8) accumulated over sums of
//   up to ~20 terms per dot product and a few layers gives ~1e-6; 1e-4 leaves room for
//   gradients, which pass through twice as many ops.
constexpr double kRefTol = 1e-10;
constexpr double kCpuTol = 1e-4;

struct Worst {
  double diff = 0;
  std::string where;
};

// Scaled max difference of `got` from `want` (dims must match); NaN counts as infinite.
double scaled_diff(const Array& got, const Array& want, std::string& at) {
  REQUIRE(got.dims() == want.dims());
  const std::vector<double> g = got.to_doubles(), w = want.to_doubles();
  double worst = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double d = std::abs(g[i] - w[i]) / std::max(1.0, std::abs(w[i]));
    if (!(d <= worst)) {
      worst = std::isnan(d) ? INFINITY : d;
      at = "[" + std::to_string(i) + "] got " + std::to_string(g[i]) + " want " +
           std::to_string(w[i]);
    }
  }
  return worst;
}

void compare(const std::string& backend, const std::string& name, const Array& got,
             const Array& want, double tol, Worst& worst) {
  std::string at;
  const double d = scaled_diff(got, want, at);
  INFO(backend << " vs PyTorch, " << name << ": largest scaled difference " << d << " at " << at);
  CHECK(d <= tol);
  if (!(d <= worst.diff)) worst = {d, name};
}

// The values of the golden's outputs, loss and gradients as `get(name)` returns them from a run.
template <class Get>
Worst compare_all(const std::string& backend, const th::GoldenFile& f, Get get, double tol) {
  Worst worst;
  for (const auto& [name, want] : f.with_prefix("output/"))
    compare(backend, name, get(name), want, tol, worst);
  compare(backend, "loss", get(std::string("loss")), f.at("loss"), tol, worst);
  for (const auto& [name, want] : f.with_prefix("grad/"))
    compare(backend, "grad/" + name, get("grad/" + name), want, tol, worst);
  return worst;
}

NamedArrays to_f32(const NamedArrays& xs) {
  NamedArrays out;
  for (const auto& [k, v] : xs) out.emplace(k, v.dtype() == DType::f64 ? v.to(DType::f32) : v);
  return out;
}

void check_golden(const GraphView& train, const std::string& file) {
  const th::GoldenFile f = th::read_golden(std::string(th::source_dir()) + "/tests/golden/" + file);
  INFO("golden file " << f.path);
  const NamedArrays inputs = f.with_prefix("input/"), params = f.with_prefix("param/");

  // Every parameter and gradient the graph has is in the file, and nothing else is.
  std::set<std::string> graph_params, graph_grads, file_params, file_grads;
  for (int n = 0; n < train.size(); ++n)
    if (train.node(n).flags & kFlagParam) graph_params.insert(train.name(n));
  for (const OutputEntry& o : train.outputs)
    if (o.grad_of >= 0) graph_grads.insert(train.name(o.grad_of));
  for (const auto& [k, v] : params) file_params.insert(k);
  for (const auto& [k, v] : f.with_prefix("grad/")) file_grads.insert(k);
  CHECK(graph_params == file_params);
  CHECK(graph_grads == file_grads);

  const Evaluation ref = evaluate_reference(train, inputs, params, {.f64 = true});
  const Worst w_ref = compare_all(
      "reference (f64)", f,
      [&](const std::string& n) -> const Array& { return n == "loss" ? ref.result() : ref[n]; },
      kRefTol);

  Session s(train, {.threads = 2, .poison_freed = true});
  s.set_params(to_f32(params));
  s.set_inputs(to_f32(inputs));
  s.run();
  const Worst w_cpu = compare_all(
      "cpu (f32)", f,
      [&](const std::string& n) {
        return n == "loss" ? Array::from<double>({}, {s.result()}) : s.get(n);
      },
      kCpuTol);
  std::cout << "golden " << file << ": " << f.tensors.size() << " tensors; reference " << w_ref.diff
            << " (" << w_ref.where << "), cpu " << w_cpu.diff << " (" << w_cpu.where << ")\n";
}

// ---- the cases; configs must match tools/make_goldens.py ------------------------------------

constexpr auto mha_self = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 6>>(g);
  auto w = input<"w", Shape<batch, seq, 6>>(g);
  auto keep = input<"keep", Shape<batch, seq>, DType::boolean>(g);
  auto a = multi_head_attention<2>(g / "mha", x, x, padding_keep(keep) & causal_keep<seq>(g));
  a.out.output("out");
  a.weights.output("weights");
  return sum<0, 1, 2>(a.out * w);
});
constexpr auto mha_self_train = grad<mha_self, "x">();

constexpr auto mha_cross = model([](Builder& g) {
  auto xq = input<"xq", Shape<batch, tgt_seq, 6>>(g);
  auto memory = input<"memory", Shape<batch, src_seq, 6>>(g);
  auto w = input<"w", Shape<batch, tgt_seq, 6>>(g);
  auto keep = input<"keep", Shape<batch, src_seq>, DType::boolean>(g);
  auto a = multi_head_attention<3>(g / "mha", xq, memory, padding_keep(keep));
  a.out.output("out");
  a.weights.output("weights");
  return sum<0, 1, 2>(a.out * w);
});
constexpr auto mha_cross_train = grad<mha_cross, "xq", "memory">();

template <NormPlacement P>
constexpr auto encoder_golden = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 6>>(g);
  auto w = input<"w", Shape<batch, seq, 6>>(g);
  auto keep = input<"keep", Shape<batch, seq>, DType::boolean>(g);
  auto y = encoder_layer<2, 10>(g / "enc", x, padding_keep(keep), {.norm = P, .dropout = 0.0});
  return sum<0, 1, 2>(y.output("out") * w);
});
constexpr auto encoder_post_train = grad<encoder_golden<NormPlacement::post>, "x">();
constexpr auto encoder_pre_train = grad<encoder_golden<NormPlacement::pre>, "x">();

constexpr ClassifierConfig kCls{.vocab = 11,
                                .max_len = 8,
                                .d_model = 6,
                                .heads = 2,
                                .d_ff = 10,
                                .layers = 2,
                                .classes = 3,
                                .dropout = 0.0,
                                .pre_norm = false};
constexpr auto cls = model([](Builder& g) { return classifier<kCls>(g); });
constexpr auto cls_train = grad<cls>();

constexpr TransformerConfig kTfPre{.src_vocab = 13,
                                   .tgt_vocab = 11,
                                   .shared_vocab = false,
                                   .d_model = 6,
                                   .heads = 2,
                                   .d_ff = 10,
                                   .enc_layers = 2,
                                   .dec_layers = 2,
                                   .dropout = 0.0,
                                   .pre_norm = true};
constexpr auto tf_pre = model([](Builder& g) { return transformer<kTfPre>(g); });
constexpr auto tf_pre_train = grad<tf_pre>();

constexpr TransformerConfig kTfPostShared{.src_vocab = 13,
                                          .tgt_vocab = 13,
                                          .shared_vocab = true,
                                          .d_model = 6,
                                          .heads = 2,
                                          .d_ff = 10,
                                          .enc_layers = 2,
                                          .dec_layers = 2,
                                          .dropout = 0.0,
                                          .pre_norm = false};
constexpr auto tf_post = model([](Builder& g) { return transformer<kTfPostShared>(g); });
constexpr auto tf_post_train = grad<tf_post>();

constexpr LmConfig kLm{.vocab = 17,
                       .d_model = 16,
                       .heads = 4,
                       .kv_heads = 2,
                       .d_ff = 12,
                       .layers = 2,
                       .dropout = 0.0,
                       .rope_theta = 500.0,
                       .tie_embeddings = true};
constexpr auto lm = model([](Builder& g) { return language_model<kLm>(g); });
constexpr auto lm_train = grad<lm>();

TEST_CASE("multi-head self-attention, padding & causal masks, vs nn.MultiheadAttention",
          "[golden]") {
  check_golden(mha_self_train, "mha_self.safetensors");
}
TEST_CASE("multi-head cross-attention (q_len != k_len) vs nn.MultiheadAttention", "[golden]") {
  check_golden(mha_cross_train, "mha_cross.safetensors");
}
TEST_CASE("Post-LN encoder layer with a fully padded sequence", "[golden]") {
  check_golden(encoder_post_train, "encoder_post.safetensors");
}
TEST_CASE("Pre-LN encoder layer with a fully padded sequence", "[golden]") {
  check_golden(encoder_pre_train, "encoder_pre.safetensors");
}
TEST_CASE("the classifier (2 Post-LN layers, masked mean, cross-entropy)", "[golden]") {
  check_golden(cls_train, "classifier.safetensors");
}
TEST_CASE("the encoder-decoder Transformer (Pre-LN, separate vocabularies)", "[golden]") {
  check_golden(tf_pre_train, "transformer_pre.safetensors");
}
TEST_CASE("the encoder-decoder Transformer (Post-LN, shared and tied vocabulary)", "[golden]") {
  check_golden(tf_post_train, "transformer_post_shared.safetensors");
}
TEST_CASE("the minimind-style language model (RMSNorm, GQA, RoPE, SwiGLU, tied)", "[golden]") {
  check_golden(lm_train, "lm.safetensors");
}

}  // namespace
