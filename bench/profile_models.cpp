// Profiles one training step of the benchmark configurations node by node (for runtime work;
// the figures that count come from ./bench.sh). Usage: stag-profile [cls|tf|gpt] [threads] [infer]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <stag/stag.hpp>

namespace {
using namespace stag;
constexpr ClassifierConfig kCls{};  // the articles' classifier (vocab 8000, d 128, 4 heads, d_ff 512, 1 layer)
constexpr auto cls = model([](Builder& g) { return classifier<kCls>(g); });
constexpr auto cls_step = train_step<cls, AdamW{}>();
constexpr TransformerConfig kTf{};
constexpr auto tf = model([](Builder& g) { return transformer<kTf>(g); });
constexpr auto tf_step = train_step<tf, AdamW{}>();
constexpr LmConfig kLm{.kv_heads = 8};
constexpr auto lm = model([](Builder& g) { return language_model<kLm>(g); });
constexpr auto lm_step = train_step<lm, AdamW{}>();

Array ints(std::vector<std::int64_t> dims, int hi, int salt) {
  Array a(DType::i32, dims);
  for (std::int64_t i = 0; i < a.numel(); ++i) a.set(i, static_cast<double>((i * 7919 + salt * 104729) % hi));
  return a;
}
Array keep(std::int64_t b, std::int64_t s) {
  Array a(DType::boolean, {b, s});
  for (std::int64_t i = 0; i < a.numel(); ++i) a.set(i, (i % s) < ((i / s) % 2 ? s * 3 / 4 : s));
  return a;
}
}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "cls";
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  const bool infer = argc > 3 && std::string(argv[3]) == "infer";
  NamedArrays in;
  GraphView g = cls_step;
  if (which == "cls") {
    g = infer ? GraphView(cls) : GraphView(cls_step);
    in = {{"ids", ints({32, 128}, 8000, 1)}, {"keep", keep(32, 128)}, {"label", ints({32}, 2, 2)}};
  } else if (which == "tf") {
    g = infer ? GraphView(tf) : GraphView(tf_step);
    in = {{"src", ints({8, 32}, 1000, 1)}, {"src_keep", keep(8, 32)}, {"tgt_in", ints({8, 32}, 1000, 2)},
          {"tgt_keep", keep(8, 32)}, {"tgt_out", ints({8, 32}, 1000, 3)}};
  } else {
    g = infer ? GraphView(lm) : GraphView(lm_step);
    in = {{"ids", ints({16, 128}, 4096, 1)}, {"targets", ints({16, 128}, 4096, 2)}};
  }
  if (!infer) {
    in["lr"] = Array::from<float>({}, {1e-4f});
    in["step"] = Array::from<float>({}, {1.f});
  }
  Session s(g, {.threads = threads, .profile = true, .seed = 1});
  s.set_inputs(in);
  for (int i = 0; i < 3; ++i) s.run({.training = !infer, .step = static_cast<std::uint64_t>(i)});
  Session p(g, {.threads = threads, .profile = true, .seed = 1});
  p.set_inputs(in);
  for (int i = 0; i < 10; ++i) p.run({.training = !infer, .step = static_cast<std::uint64_t>(i)});
  std::printf("%s", p.profile_report(std::getenv("TOP") ? std::atoi(std::getenv("TOP")) : 25).c_str());
  std::printf("arena %.1f MiB\n", static_cast<double>(p.plan().arena_bytes()) / 1048576.0);
  return 0;
}
