// dropout: the identity in eval mode, the empirical keep rate and the 1/(1-p) scale in
// training mode, masks keyed by (seed, step, salt), distinct salts per node, the gradient
// (the same mask regenerated), and p outside [0, 1) refused.
#include <cmath>
#include <cstring>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto rows = sym<"rows">;
constexpr auto len = sym<"len">;
constexpr double kP = 0.3;

constexpr auto drop = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  (void)dropout(x, kP).named("other");  // a second dropout node: its own mask
  return dropout(x, kP).named("y");
});

// Each dropout node carries a distinct salt, fixed when the graph is built.
constexpr bool salts_distinct() {
  std::int64_t salts[2] = {};
  int n = 0;
  for (int i = 0; i < drop.size(); ++i)
    if (drop.view().node(i).op == op::dropout) salts[n++] = drop.view().attr(i).i[0];
  return n == 2 && salts[0] != salts[1];
}
static_assert(salts_distinct());

EvalOptions training(std::uint64_t seed, std::uint64_t step) {
  EvalOptions o;
  o.training = true;
  o.seed = seed;
  o.step = step;
  return o;
}

std::vector<bool> kept(const Array& y) {
  std::vector<bool> k;
  for (double v : y.to_doubles()) k.push_back(v != 0.0);
  return k;
}

TEST_CASE("dropout is the identity in eval mode", "[op][dropout]") {
  const Array x = th::random_array(DType::f32, {5, 7}, 1);
  const Evaluation e = evaluate_reference(drop, {{"x", x}}, {});
  th::require_close(e["y"], x, 0);
}

TEST_CASE("dropout keeps 1 - p of the elements and scales them by 1 / (1 - p)", "[op][dropout]") {
  const std::int64_t r = 101, l = 103;                                // 10403 elements
  const Array x = th::random_array(DType::f32, {r, l}, 2, 0.5, 1.5);  // never 0
  const Evaluation e = evaluate_reference(drop, {{"x", x}}, {}, training(7, 0));
  const std::vector<double> y = e["y"].to_doubles();
  double n_kept = 0, worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (y[i] == 0.0) continue;
    ++n_kept;
    const double want = static_cast<float>(x.at(static_cast<std::int64_t>(i)) / (1.0 - kP));
    worst = std::max(worst, std::abs(y[i] - want));
  }
  const double n = static_cast<double>(r * l);
  const double sigma = std::sqrt(n * kP * (1 - kP));  // binomial standard deviation
  INFO("kept " << n_kept << " of " << n << ", expected " << n * (1 - kP) << " +- " << sigma);
  CHECK(std::abs(n_kept - n * (1 - kP)) < 5 * sigma);
  CHECK(worst == 0.0);
}

TEST_CASE("dropout masks depend on seed, step and node, nothing else", "[op][dropout]") {
  const Array x = th::random_array(DType::f32, {11, 13}, 3, 0.5, 1.5);
  auto run = [&](std::uint64_t seed, std::uint64_t step) {
    return evaluate_reference(drop, {{"x", x}}, {}, training(seed, step));
  };
  const Evaluation a = run(7, 3), again = run(7, 3), next_step = run(7, 4), other_seed = run(8, 3);
  auto differ = [](const std::vector<bool>& m1, const std::vector<bool>& m2) {
    std::size_t d = 0;
    for (std::size_t i = 0; i < m1.size(); ++i) d += m1[i] != m2[i];
    return static_cast<double>(d) / static_cast<double>(m1.size());
  };
  CHECK(kept(a["y"]) == kept(again["y"]));
  th::require_close(a["y"], again["y"], 0);
  // Independent masks disagree on 2 p (1 - p) = 42% of the elements.
  CHECK(differ(kept(a["y"]), kept(next_step["y"])) > 0.25);
  CHECK(differ(kept(a["y"]), kept(other_seed["y"])) > 0.25);
  CHECK(differ(kept(a["y"]), kept(a["other"])) > 0.25);
}

constexpr auto drop_scalar = model([](Builder& g) {
  auto x = input<"x", Shape<>>(g);
  return dropout(x, 0.5).named("y");
});

TEST_CASE("dropout of a scalar is 0 or 2x", "[op][dropout]") {
  int zeros = 0;
  for (std::uint64_t step = 0; step < 64; ++step) {
    const double y = evaluate_reference(drop_scalar, {{"x", Array::from<float>({}, {1.5f})}}, {},
                                        training(1, step))["y"]
                         .at(0);
    CHECK((y == 0.0 || y == 3.0));
    zeros += y == 0.0;
  }
  CHECK(zeros > 8);  // P(zeros <= 8) for Binomial(64, 0.5) is below 1e-9
  CHECK(zeros < 56);
}

constexpr auto drop_loss = model([](Builder& g) {
  auto x = input<"x", Shape<rows, len>>(g);
  auto w = input<"w", Shape<rows, len>>(g);
  return sum<0, 1>(dropout(x, kP) * w);
});
constexpr auto drop_train = grad<drop_loss, "x">();
static_assert(drop_train.count(op::dropout) == 2);

TEST_CASE("dropout's gradient reuses the forward mask", "[op][dropout]") {
  const Array x = th::random_array(DType::f32, {7, 5}, 4, 0.5, 1.5);
  const Array w = th::random_array(DType::f32, {7, 5}, 5);
  const EvalOptions o = training(11, 2);
  const Evaluation e = evaluate_reference(drop_train, {{"x", x}, {"w", w}}, {}, o);
  // Where the forward output is 0 the gradient is 0, elsewhere w / (1 - p).
  const int y_node = [&] {
    for (int i = 0; i < drop_train.size(); ++i)
      if (drop_train.view().node(i).op == op::dropout &&
          !(drop_train.view().node(i).flags & kFlagBackward))
        return i;
    return -1;
  }();
  REQUIRE(y_node >= 0);
  const std::vector<double> y = e.node(y_node).to_doubles();
  std::vector<double> want;
  for (std::size_t i = 0; i < y.size(); ++i)
    want.push_back(y[i] != 0.0 ? static_cast<float>(w.at(static_cast<std::int64_t>(i)) / (1 - kP))
                               : 0.0);
  th::require_close(e["grad/x"], want, 1e-6);
}

TEST_CASE("dropout gradients in training mode on several bindings", "[op][dropout][gradcheck]") {
  th::check_op({.what = "dropout",
                .forward = drop_loss,
                .train = drop_train,
                .inputs =
                    [](int k) {
                      const std::int64_t r = 5 + 6 * k, l = 13 - 6 * k;
                      return NamedArrays{{"x", th::random_array(DType::f32, {r, l}, 10 + k)},
                                         {"w", th::random_array(DType::f32, {r, l}, 20 + k)}};
                    },
                .bindings = 2,
                .eval = training(5, 9)});
}

TEST_CASE("dropout refuses p outside 0 <= p < 1 when a graph is built at run time",
          "[op][dropout]") {
  for (double p : {1.0, -0.1, 1.5, std::nan("")}) {
    Builder b;
    auto x = input<"x", Shape<5>>(b);
    CHECK_THROWS_WITH(dropout(x, p), Catch::Contains("stag::dropout: p must be in [0, 1)"));
  }
  Builder b;
  auto x = input<"x", Shape<5>>(b);
  CHECK_NOTHROW(dropout(x, 0.0));
}

}  // namespace

// ---- data parallelism: masks keyed by global row ------------------------------------------------

constexpr auto attn_drop = model([](Builder& g) {
  auto q = input<"q", Shape<rows, 2, len, 8>>(g);
  auto k = input<"k", Shape<rows, 2, len, 8>>(g);
  auto v = input<"v", Shape<rows, 2, len, 8>>(g);
  return sdpa(q, k, v, {.mask = AttnMask::causal, .dropout = kP, .salt = 77}).named("y");
});

// Rows [lo, hi) of a batch-major array.
Array rows_of(const Array& a, std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> dims = a.dims();
  dims[0] = hi - lo;
  Array out(a.dtype(), dims);
  const std::size_t row = a.bytes() / static_cast<std::size_t>(a.dim(0));
  std::memcpy(out.raw(), static_cast<const char*>(a.raw()) + static_cast<std::size_t>(lo) * row,
              static_cast<std::size_t>(hi - lo) * row);
  return out;
}

TEST_CASE("a part of the batch with its row offset draws the whole batch's masks for its rows",
          "[op][dropout][attention]") {
  // What a rank of a data-parallel run computes for rows [3, 7) of a global batch of 8 rows.
  const std::int64_t lo = 3, hi = 7;
  const NamedArrays whole_in = {{"x", th::random_array(DType::f32, {8, 13}, 4, 0.5, 1.5)}};
  NamedArrays attn_in;
  for (const char* n : {"q", "k", "v"})
    attn_in[n] = th::random_array(DType::f32, {8, 2, 70, 8}, n[0]);
  for (int which = 0; which < 2; ++which) {
    const GraphView g = which == 0 ? GraphView(drop) : GraphView(attn_drop);
    const NamedArrays& in = which == 0 ? whole_in : attn_in;
    INFO((which == 0 ? "dropout" : "attention's dropout"));
    NamedArrays part;
    for (const auto& [name, a] : in) part[name] = rows_of(a, lo, hi);
    Session whole(g, {.threads = 1, .seed = 5}), mine(g, {.threads = 1, .seed = 5});
    whole.set_inputs(in);
    whole.run({.training = true, .step = 2});
    mine.set_inputs(part);
    mine.run({.training = true, .step = 2, .row_offset = lo, .rows = hi - lo});
    th::require_close(mine.get("y"), rows_of(whole.get("y"), lo, hi), 0);
    // The reference kernels key their masks the same way.
    EvalOptions ref = training(5, 2);
    ref.row_offset = lo;
    ref.rows = hi - lo;
    const Evaluation r = evaluate_reference(g, part, {}, ref);
    const Evaluation rw = evaluate_reference(g, in, {}, training(5, 2));
    th::require_close(r["y"], rows_of(rw["y"], lo, hi), 0);
    // Without the offset the part draws other masks (the test can fail).
    Session plain(g, {.threads = 1, .seed = 5});
    plain.set_inputs(part);
    plain.run({.training = true, .step = 2});
    CHECK(kept(plain.get("y")) != kept(mine.get("y")));
  }
}
