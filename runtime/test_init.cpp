// Parameter initialisation overrides by name pattern: glob matching, last match wins, values
// recomputed from the counter-based formula, determinism (seed + name), optimizer state left at
// zero, typos refused, and the SessionOptions wiring.
#include <cmath>

#include "harness.hpp"
#include "test_files.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto net = model([](Builder& g) {
  auto x = input<"x", Shape<batch, 8>>(g);
  auto tok = param<Shape<8, 16>>(g / "tok", "weight");
  auto w = param<Shape<16, 16>>(g / "enc" / 0 / "attn" / "w_q", "weight");
  auto b = param<Shape<16>>(g / "enc" / 0 / "attn" / "w_q", "bias", kZeros);
  auto gain = param<Shape<16>>(g / "enc" / 0 / "norm", "gain", kOnes);
  auto y = tanh(matmul(matmul(x, tok), w) + b) * gain;
  return mean<0, 1>(y * y);
});
constexpr auto step_graph = train_step<net, AdamW{}>();

TEST_CASE("glob patterns: '*' spans dots, '?' is one character", "[init]") {
  CHECK(glob_match("*.bias", "enc.0.attn.w_q.bias"));
  CHECK(!glob_match("*.bias", "enc.0.attn.w_q.bias.adam_m"));
  CHECK(glob_match("enc.*.attn.*.weight", "enc.0.attn.w_q.weight"));
  CHECK(glob_match("enc.*.attn.*.weight", "enc.11.attn.w_out.weight"));
  CHECK(!glob_match("enc.*.attn.*.weight", "dec.0.attn.w_q.weight"));
  CHECK(glob_match("tok.weight", "tok.weight"));
  CHECK(!glob_match("tok.weight", "tok.weights"));
  CHECK(glob_match("enc.?.norm.gain", "enc.0.norm.gain"));
  CHECK(!glob_match("enc.?.norm.gain", "enc.10.norm.gain"));
  CHECK(glob_match("a*b*c", "aXbYbZc"));
  CHECK(!glob_match("a*b", "a"));
  CHECK(glob_match("*", ""));
  CHECK(glob_match("**", "x"));
  CHECK(!glob_match("", "x"));
}

TEST_CASE("overrides replace the graph's initialisers, the last match winning", "[init]") {
  const InitOverrides o = {{"*.weight", InitSpec::uniform(-0.5, 0.5)},
                           {"tok.weight", InitSpec::normal(0, 0.02)},
                           {"*.bias", InitSpec::uniform(-0.1, 0.1)}};
  const GraphView g = net;
  CHECK(resolve_init(g, g.find("tok.weight"), o) == InitSpec::normal(0, 0.02));
  CHECK(resolve_init(g, g.find("enc.0.attn.w_q.weight"), o) == InitSpec::uniform(-0.5, 0.5));
  CHECK(resolve_init(g, g.find("enc.0.attn.w_q.weight")) == InitSpec::xavier_uniform());
  CHECK(resolve_init(g, g.find("enc.0.norm.gain"), o) == InitSpec::ones());  // no match

  const std::uint64_t seed = 17;
  const NamedArrays p = make_params(g, {}, seed, DType::f32, o);
  // Uniform values recomputed from the counter-based stream: (seed, step 0, fnv1a(name), i).
  for (std::string name : {"enc.0.attn.w_q.bias", "enc.0.attn.w_q.weight"}) {
    const double lo = name.ends_with("bias") ? -0.1 : -0.5, hi = -lo;
    std::vector<double> want;
    for (std::int64_t i = 0; i < p.at(name).numel(); ++i)
      want.push_back(lo + (hi - lo) *
                              random::uniform(seed, 0, fnv1a(name), static_cast<std::uint64_t>(i)));
    INFO(name);
    th::require_close(p.at(name), want, 1e-7);
  }
  // N(0, 0.02): 128 draws; the sample deviation of 128 normals lies within 20% of 0.02 with
  // overwhelming probability, and the values are fixed by the seed anyway.
  double sum = 0, sq = 0;
  for (double v : p.at("tok.weight").to_doubles()) {
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 128, sd = std::sqrt(sq / 128 - mean * mean);
  CHECK(std::abs(mean) < 0.006);
  CHECK(sd > 0.016);
  CHECK(sd < 0.024);
  CHECK(p.at("enc.0.norm.gain").to_doubles() == std::vector<double>(16, 1.0));
}

TEST_CASE("values depend only on seed, name and initialiser", "[init]") {
  const GraphView g = net;
  const NamedArrays plain = make_params(g, {}, 5);
  const NamedArrays other = make_params(g, {}, 5, DType::f32, {{"tok.weight", InitSpec::zeros()}});
  const NamedArrays same =
      make_params(g, {}, 5, DType::f32, {{"*.weight", InitSpec::xavier_uniform()}});
  const Array& w = plain.at("enc.0.attn.w_q.weight");
  th::require_close(other.at("enc.0.attn.w_q.weight"), w.to_doubles(), 0);  // untouched by others
  th::require_close(same.at("enc.0.attn.w_q.weight"), w.to_doubles(), 0);  // same spec, same values
  CHECK(other.at("tok.weight").to_doubles() == std::vector<double>(128, 0.0));
  const NamedArrays reseeded = make_params(g, {}, 6);
  CHECK(reseeded.at("enc.0.attn.w_q.weight").to_doubles() != w.to_doubles());
}

TEST_CASE("sessions apply init_overrides; optimizer state stays zero", "[init]") {
  const InitOverrides o = {{"*", InitSpec::ones()}};  // every parameter, never the state
  Session s(step_graph, {.threads = 1, .seed = 3, .init_overrides = o});
  REQUIRE(s.params().size() == 12);  // 4 parameters, 2 moments each
  for (const auto& [name, a] : s.params()) {
    INFO(name);
    const bool state = name.ends_with("adam_m") || name.ends_with("adam_v");
    CHECK(a.to_doubles() ==
          std::vector<double>(static_cast<std::size_t>(a.numel()), state ? 0.0 : 1.0));
  }
  const NamedArrays direct =
      make_params(net, {}, 3, DType::f32, {{"*.bias", InitSpec::normal(1, 2)}});
  Session t(net, {.threads = 1, .seed = 3, .init_overrides = {{"*.bias", InitSpec::normal(1, 2)}}});
  th::require_close(t.params().at("enc.0.attn.w_q.bias"),
                    direct.at("enc.0.attn.w_q.bias").to_doubles(), 0);
}

TEST_CASE("an override that matches nothing or has bad arguments is refused", "[init]") {
  CHECK(th::error_of([] {
          make_params(net, {}, 1, DType::f32, {{"enc.*.atn.*", InitSpec::zeros()}});
        }) ==
        "stag: init override 'enc.*.atn.*' (zeros) matches no parameter (parameters are named like "
        "'tok.weight', 'enc.0.attn.w_q.weight', 'enc.0.attn.w_q.bias', 'enc.0.norm.gain')");
  CHECK(th::error_of([] {
          Session s(step_graph, {.init_overrides = {{"*.adam_m", InitSpec::ones()}}});
        }).find("matches no parameter") != std::string::npos);
  CHECK(th::error_of([] {
          make_params(net, {}, 1, DType::f32, {{"*", InitSpec::normal(0, -1)}});
        }) == "stag: init override '*' (normal(0, -1)): the standard deviation must be >= 0");
  CHECK(th::error_of([] {
          make_params(net, {}, 1, DType::f32, {{"*", InitSpec::uniform(1, 0)}});
        }) ==
        "stag: init override '*' (uniform(1, 0)): the low end must not be above the high end");
}

}  // namespace
