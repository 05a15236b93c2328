// Sampling a token from logits (models/sampling.cpp): greedy ties and NaN, frequencies that follow
// softmax(logits / temperature) within the top k and top p, and determinism per seed and counter.
#include <cmath>

#include <stag/models/sampling.hpp>

#include "harness.hpp"

namespace {
using namespace stag;

TEST_CASE("greedy sampling takes the largest logit; ties and NaN", "[generate][sampling]") {
  const std::vector<float> l{0.5f, 2.0f, -1.0f, 2.0f, NAN};
  CHECK(sample_token(l, {.temperature = 0}, 0) == 1);  // the tie goes to the smaller id
  CHECK(sample_token(l, {.temperature = 1.0, .top_k = 1}, 5) == 1);
  CHECK(sample_token(l, {.temperature = 0}, 0, 1) == 0);  // only id 0 is a candidate
  CHECK_THROWS_WITH(sample_token(std::vector<float>{NAN, -INFINITY}, {.temperature = 0}, 0),
                    Catch::Contains("every logit is NaN or -inf"));
  CHECK_THROWS_WITH(sample_token(l, {.temperature = -1}, 0),
                    Catch::Contains("temperature must be >= 0"));
  CHECK_THROWS_WITH(sample_token(l, {.top_k = -2}, 0), Catch::Contains("top_k must be >= 0"));
  CHECK_THROWS_WITH(sample_token(l, {.top_p = 0.0}, 0), Catch::Contains("top_p must be in (0, 1]"));
  CHECK_THROWS_WITH(sample_token(l, {.top_p = 1.5}, 0), Catch::Contains("top_p must be in (0, 1]"));
}

TEST_CASE("sampling frequencies follow softmax(logits / temperature) within the top k",
          "[generate][sampling]") {
  const std::vector<float> l{std::log(0.5f), std::log(0.3f), std::log(0.15f), std::log(0.05f)};
  struct Case {
    SampleOptions o;
    std::vector<double> p;  // computed by hand
  };
  const double s2 = std::sqrt(0.5) + std::sqrt(0.3) + std::sqrt(0.15) + std::sqrt(0.05);
  const Case cases[] = {
      {{.temperature = 1.0}, {0.5, 0.3, 0.15, 0.05}},
      {{.temperature = 2.0},
       {std::sqrt(0.5) / s2, std::sqrt(0.3) / s2, std::sqrt(0.15) / s2, std::sqrt(0.05) / s2}},
      {{.temperature = 1.0, .top_k = 2}, {0.5 / 0.8, 0.3 / 0.8, 0, 0}},
      {{.temperature = 0.5, .top_k = 3}, {0.25 / 0.3625, 0.09 / 0.3625, 0.0225 / 0.3625, 0}},
      // top_p: .5 + .3 = .8 reaches .75; .5 + .3 + .15 = .95 reaches .9; after top_k 3 the
      // first id alone has .5 / .95 > .5.
      {{.temperature = 1.0, .top_p = 0.75}, {0.5 / 0.8, 0.3 / 0.8, 0, 0}},
      {{.temperature = 1.0, .top_p = 0.9}, {0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0}},
      {{.temperature = 1.0, .top_k = 3, .top_p = 0.5}, {1, 0, 0, 0}},
  };
  for (const Case& c : cases) {
    INFO("temperature " << c.o.temperature << ", top_k " << c.o.top_k << ", top_p " << c.o.top_p);
    std::vector<double> p(4);
    sample_probabilities(l, c.o, p);
    for (int i = 0; i < 4; ++i)
      CHECK(p[static_cast<std::size_t>(i)] ==
            Approx(c.p[static_cast<std::size_t>(i)]).margin(1e-6));
    std::vector<int> counts(4, 0);
    const int n = 20000;
    for (int k = 0; k < n; ++k)
      ++counts[static_cast<std::size_t>(sample_token(l, c.o, static_cast<std::uint64_t>(k)))];
    for (int i = 0; i < 4; ++i) {
      INFO("id " << i);
      // Binomial standard deviation at most sqrt(0.25 / n) = 0.0035: allow 4 of them.
      CHECK(std::abs(counts[static_cast<std::size_t>(i)] / double(n) -
                     c.p[static_cast<std::size_t>(i)]) < 0.014);
      if (c.p[static_cast<std::size_t>(i)] == 0) CHECK(counts[static_cast<std::size_t>(i)] == 0);
    }
  }
}

TEST_CASE("the same seed and counter give the same token; other seeds give others",
          "[generate][sampling]") {
  std::vector<float> l(50);
  for (std::size_t i = 0; i < l.size(); ++i) l[i] = static_cast<float>(std::sin(i * 1.7));
  std::vector<std::int32_t> a, b, c;
  for (std::uint64_t k = 0; k < 40; ++k) {
    a.push_back(sample_token(l, {.temperature = 1.0, .seed = 4}, k));
    b.push_back(sample_token(l, {.temperature = 1.0, .seed = 4}, k));
    c.push_back(sample_token(l, {.temperature = 1.0, .seed = 5}, k));
  }
  CHECK(a == b);
  CHECK(a != c);
}

}  // namespace
