// cache_write: rows land at the run-time position and nothing else changes (reference and CPU,
// sequential and parallel schedules), readers of the cache in the same step see the values
// from before the write and readers of the result those after it, per-row positions (with -1
// leaving a row alone), a writer nobody reads still runs, and a position that does not fit is
// a clear error.
#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto len = sym<"len">;
constexpr auto t_new = sym<"t_new">;

// cache [batch, 3, len, 4] written with rows [batch, 3, t_new, 4] at pos; "before" reads the
// cache in the same step (a sum over all of it).
constexpr auto writer = model([](Builder& g) {
  auto cache = state<Shape<batch, 3, len, 4>>(g / "attn", "k_cache");
  auto rows = input<"rows", Shape<batch, 3, t_new, 4>>(g);
  auto pos = input<"pos", Shape<1>, DType::i32>(g);
  auto before = sum<0, 1, 2, 3>(cache * 1.0).named("before").output("before");
  (void)cache_write(cache, rows, pos).named("write");
  return before;
});
static_assert(writer.count(op::cache_write) == 1);
static_assert(writer.shape("write") == Shape<batch, 3, len, 4>::value);  // the cache, written

// Per-row positions pos [batch]; "before" reads the cache, "after" the write's result.
constexpr auto row_writer = model([](Builder& g) {
  auto cache = state<Shape<batch, 3, len, 4>>(g / "attn", "k_cache");
  auto rows = input<"rows", Shape<batch, 3, t_new, 4>>(g);
  auto pos = input<"pos", Shape<batch>, DType::i32>(g);
  auto before = sum<0, 1, 2, 3>(cache * 1.0).named("before").output("before");
  auto written = cache_write(cache, rows, pos).named("write");
  (void)(written * 1.0).named("after").output("after");
  return before;
});

// The same write with an i64 scalar position and no reader at all.
constexpr auto lone_writer = model([](Builder& g) {
  auto cache = state<Shape<2, 5>>(g.root(), "cache");
  auto rows = input<"rows", Shape<1, 5>>(g);
  auto pos = input<"pos", Shape<>, DType::i64>(g);
  (void)cache_write(cache, rows, pos);
  return sum<0, 1>(rows);  // a result that does not depend on the write
});

// What the cache must hold after writing `rows` at `pos` (an independent loop over indices).
std::vector<double> expected_after(const Array& cache, const Array& rows, std::int64_t pos) {
  std::vector<double> out = cache.to_doubles();
  const std::int64_t b = cache.dim(0), h = cache.dim(1), l = cache.dim(2), d = cache.dim(3);
  const std::int64_t t = rows.dim(2);
  for (std::int64_t i = 0; i < b; ++i)
    for (std::int64_t j = 0; j < h; ++j)
      for (std::int64_t r = 0; r < t; ++r)
        for (std::int64_t k = 0; k < d; ++k)
          out[static_cast<std::size_t>(((i * h + j) * l + pos + r) * d + k)] =
              rows.at(((i * h + j) * t + r) * d + k);
  return out;
}

double total(const Array& a) {
  double s = 0;
  for (double v : a.to_doubles()) s += v;
  return s;
}

Array pos_array(std::int32_t p) {
  return Array::from<std::int32_t>({1}, {p});
}

// The cache after writing `rows` at per-row positions (-1: the row keeps its values).
std::vector<double> expected_after_rows(const Array& cache, const Array& rows,
                                        const std::vector<std::int32_t>& pos) {
  std::vector<double> out = cache.to_doubles();
  const std::int64_t h = cache.dim(1), l = cache.dim(2), d = cache.dim(3), t = rows.dim(2);
  for (std::int64_t i = 0; i < cache.dim(0); ++i) {
    const std::int64_t p = pos[static_cast<std::size_t>(i)];
    if (p < 0) continue;
    for (std::int64_t j = 0; j < h; ++j)
      for (std::int64_t r = 0; r < t; ++r)
        for (std::int64_t k = 0; k < d; ++k)
          out[static_cast<std::size_t>(((i * h + j) * l + p + r) * d + k)] =
              rows.at(((i * h + j) * t + r) * d + k);
  }
  return out;
}

TEST_CASE("cache_write puts the rows at pos on the reference evaluator", "[op][cache_write]") {
  for (auto [b, l, t, p] : {std::array{1, 5, 1, 0}, std::array{2, 7, 3, 4},
                            std::array{3, 11, 11, 0}, std::array{2, 13, 2, 11}}) {
    INFO("batch " << b << ", len " << l << ", rows " << t << ", pos " << p);
    const Array cache0 =
        th::random_array(DType::f32, {b, 3, l, 4}, 5 + static_cast<std::uint64_t>(l));
    NamedArrays params{{"attn.k_cache", cache0.clone()}};
    const Array rows =
        th::random_array(DType::f32, {b, 3, t, 4}, 9 + static_cast<std::uint64_t>(t));
    const Evaluation e =
        evaluate_reference(writer, {{"rows", rows}, {"pos", pos_array(p)}}, params);
    // The store's array is the one the kernel wrote (the evaluator shares f32 storage).
    th::require_close(params.at("attn.k_cache"), expected_after(cache0, rows, p), 0.0);
    CHECK(e["before"].at(0) == Approx(total(cache0)).epsilon(1e-6));
  }
}

TEST_CASE(
    "cache_write on the CPU session: successive steps fill the cache; readers see the old values",
    "[op][cache_write]") {
  for (Schedule sched : {Schedule::sequential, Schedule::parallel}) {
    INFO((sched == Schedule::sequential ? "sequential" : "parallel"));
    Session s(writer, {.threads = 2, .schedule = sched, .dims = {{"batch", 2}, {"len", 7}}});
    REQUIRE(s.params().at("attn.k_cache").dims() == std::vector<std::int64_t>{2, 3, 7, 4});
    Array want = Array(DType::f32, {2, 3, 7, 4});  // the state starts at zero
    int pos = 0;
    for (int t : {3, 1, 1, 2}) {
      const Array rows =
          th::random_array(DType::f32, {2, 3, t, 4}, 40 + static_cast<std::uint64_t>(pos));
      s.set_inputs({{"rows", rows}, {"pos", pos_array(pos)}});
      s.run();
      CHECK(s.result() == Approx(total(want)).epsilon(1e-6).margin(1e-6));  // read before the write
      want =
          Array::from_vector<double>({2, 3, 7, 4}, expected_after(want, rows, pos)).to(DType::f32);
      th::require_close(s.params().at("attn.k_cache"), want, 0.0);
      pos += t;
    }
    CHECK(s.num_plans() == 3);  // one plan per number of new rows (3, 1, 2)
  }
}

TEST_CASE("a cache_write that nothing reads still runs; scalar i64 positions",
          "[op][cache_write]") {
  Session s(lone_writer, {.threads = 1});
  const Array rows = Array::from<float>({1, 5}, {1, 2, 3, 4, 5});
  s.set_inputs({{"rows", rows}, {"pos", Array::from<std::int64_t>({}, {1})}});
  s.run();
  CHECK(s.result() == 15.0);
  th::require_close(s.params().at("cache"), {0, 0, 0, 0, 0, 1, 2, 3, 4, 5}, 0.0);
}

TEST_CASE("cache_write refuses a position that does not fit and changes nothing",
          "[op][cache_write]") {
  Session s(writer, {.threads = 1, .dims = {{"batch", 1}, {"len", 5}}});
  const Array rows = th::random_array(DType::f32, {1, 3, 2, 4}, 3);
  for (int p : {4, 5, -1, 1 << 30}) {
    INFO("pos " << p);
    s.set_inputs({{"rows", rows}, {"pos", pos_array(p)}});
    try {
      s.run();
      FAIL("no error");
    } catch (const stag::Error& e) {
      const std::string what = e.what();
      INFO(what);
      CHECK(what.find("stag: write: cache_write of 2 row(s) at position " + std::to_string(p) +
                      " does not fit a cache of 5 positions (pos must be in [0, 3])") !=
            std::string::npos);
    }
    CHECK(total(s.params().at("attn.k_cache")) == 0.0);
  }
  // The reference kernel says the same.
  NamedArrays params{{"attn.k_cache", Array(DType::f32, {1, 3, 5, 4})}};
  CHECK_THROWS_WITH(evaluate_reference(writer, {{"rows", rows}, {"pos", pos_array(4)}}, params),
                    Catch::Contains("does not fit a cache of 5 positions"));
}

TEST_CASE(
    "cache_write with a position per row; -1 leaves a row alone; its result is read after the "
    "write",
    "[op][cache_write]") {
  const std::vector<std::int32_t> pos{4, -1, 0};
  const Array rows = th::random_array(DType::f32, {3, 3, 2, 4}, 12);
  const Array cache0 = th::random_array(DType::f32, {3, 3, 7, 4}, 13);
  const std::vector<double> want = expected_after_rows(cache0, rows, pos);
  const Array pos_in = Array::from_vector<std::int32_t>({3}, pos);
  {  // reference evaluator
    NamedArrays params{{"attn.k_cache", cache0.clone()}};
    const Evaluation e = evaluate_reference(row_writer, {{"rows", rows}, {"pos", pos_in}}, params);
    th::require_close(params.at("attn.k_cache"), want, 0.0);
    th::require_close(e["after"], want, 0.0);
    CHECK(e["before"].at(0) == Approx(total(cache0)).epsilon(1e-6));
  }
  for (Schedule sched : {Schedule::sequential, Schedule::parallel}) {
    INFO((sched == Schedule::sequential ? "sequential" : "parallel"));
    Session s(row_writer, {.threads = 2, .schedule = sched, .dims = {{"batch", 3}, {"len", 7}}});
    s.set_param("attn.k_cache", cache0);
    s.set_inputs({{"rows", rows}, {"pos", pos_in}});
    s.run();
    CHECK(s.result() == Approx(total(cache0)).epsilon(1e-6));  // read before the write
    th::require_close(s.get("after"), want, 0.0);              // read after the write
    th::require_close(s.params().at("attn.k_cache"), want, 0.0);
  }
  // A per-row position that does not fit names the row and changes nothing.
  Session s(row_writer, {.threads = 1, .dims = {{"batch", 3}, {"len", 7}}});
  s.set_param("attn.k_cache", cache0);
  s.set_inputs({{"rows", rows}, {"pos", Array::from<std::int32_t>({3}, {0, 6, 1})}});
  CHECK_THROWS_WITH(s.run(),
                    Catch::Contains("stag: write: cache_write of 2 row(s) at position 6 "
                                    "(batch row 1) does not fit a cache of 7 positions "
                                    "(pos must be in [0, 5], or -1 to leave the row alone)"));
  th::require_close(s.params().at("attn.k_cache"), cache0, 0.0);
  s.set_inputs({{"rows", rows}, {"pos", Array::from<std::int32_t>({3}, {0, -2, 1})}});
  CHECK_THROWS_WITH(s.run(), Catch::Contains("at position -2 (batch row 1) does not fit"));
}

}  // namespace
