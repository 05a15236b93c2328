// rope: against the complex-number form of the rotation (z_i = x_i + j x_{i+Dh/2} times
// e^{j p theta^(-2i/Dh)}), theta and offset, inverse rotation, the relative-position property,
// odd sequence lengths and symbolic dims, the odd-head-dim runtime error, positions read from
// an input, and gradients (with and without a positions input).
#include <complex>

#include "op_harness.hpp"

namespace {
using namespace stag;
constexpr auto heads = sym<"heads">;
constexpr auto seq = sym<"seq">;
constexpr auto dh = sym<"dh">;
constexpr auto batch = sym<"batch">;

// The axis rope rotates along must look like a sequence: the [B, S, H, Dh] layout (static heads
// after a symbolic axis) and merged tokens are refused; a static sequence of 1 under a symbolic
// batch and static heads (decoding) and fully static shapes are not.
static_assert(rules::rope_along_seq(Shape<batch, 4, seq, 16>::value, DType::f32).ok());
static_assert(rules::rope_along_seq(Shape<batch, seq, 4, 16>::value, DType::f32).err ==
              ShapeErr::seq_axis);
static_assert(rules::rope_along_seq(Shape<batch, seq, 1, 16>::value, DType::f32).err ==
              ShapeErr::seq_axis);
static_assert(rules::rope_along_seq(Shape<batch, 4, 1, 16>::value, DType::f32).ok());
static_assert(rules::rope_along_seq(Shape<batch * seq, 16>::value, DType::f32).err ==
              ShapeErr::seq_axis);
static_assert(rules::rope_along_seq(Shape<batch * heads, seq, 16>::value, DType::f32).ok());
static_assert(rules::rope_along_seq(Shape<2, 8, 16>::value, DType::f32).ok());
static_assert(rules::rope(Shape<batch, seq, 4, 16>::value, DType::f32).ok());  // the Ref form

// The rotation of a contiguous [rows, S, Dh] array, as complex multiplication.
// Row s is at position positions[s] + offset when positions are given, else at s + offset.
std::vector<double> expected_rope(const Array& x, double theta, std::int64_t offset,
                                  bool inverse = false,
                                  const std::vector<std::int64_t>& positions = {}) {
  const std::int64_t d = x.dim(-1), s_len = x.dim(-2), half = d / 2;
  const std::int64_t rows = x.numel() / (s_len * d);
  std::vector<double> out(static_cast<std::size_t>(x.numel()));
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t s = 0; s < s_len; ++s)
      for (std::int64_t i = 0; i < half; ++i) {
        const std::int64_t base = (r * s_len + s) * d;
        const std::complex<double> z(x.at(base + i), x.at(base + i + half));
        const std::int64_t p = positions.empty() ? s : positions[static_cast<std::size_t>(s)];
        const double angle = static_cast<double>(p + offset) / std::pow(theta, 2.0 * i / d);
        const std::complex<double> rz = z * std::polar(1.0, inverse ? -angle : angle);
        out[static_cast<std::size_t>(base + i)] = rz.real();
        out[static_cast<std::size_t>(base + i + half)] = rz.imag();
      }
  return out;
}

constexpr auto plain = model([](Builder& g) {
  auto x = input<"x", Shape<heads, seq, 8>>(g);
  (void)rope(x, {.theta = 1e6, .offset = 5}).named("minimind");
  return rope(x).named("y");
});

TEST_CASE("rope rotates pairs (i, i + Dh/2), hand-computed", "[op][rope]") {
  // One head, positions 0 and 1, Dh = 4: frequencies 1 and 10000^(-1/2) = 0.01.
  constexpr auto small =
      model([](Builder& g) { return rope(input<"x", Shape<2, 4>>(g)).named("y"); });
  const Evaluation e =
      evaluate_reference(small, {{"x", Array::from<float>({2, 4}, {1, 2, 3, 4, 1, 2, 3, 4})}}, {});
  const double c1 = std::cos(1.0), s1 = std::sin(1.0), c2 = std::cos(0.01), s2 = std::sin(0.01);
  th::require_close(e["y"],
                    {1, 2, 3, 4,  // position 0: no rotation
                     1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1, 4 * c2 + 2 * s2},
                    1e-6);
}

TEST_CASE("rope with theta, offset, odd sequence lengths and several bindings", "[op][rope]") {
  for (auto [h, s] : {std::pair{1, 5}, std::pair{3, 7}, std::pair{2, 13}}) {
    const Array x = th::random_array(DType::f32, {h, s, 8}, 10 + static_cast<std::uint64_t>(s));
    const Evaluation e = evaluate_reference(plain, {{"x", x}}, {});
    th::require_close(e["y"], expected_rope(x, 10000, 0), 1e-6);
    th::require_close(e["minimind"], expected_rope(x, 1e6, 5), 1e-6);
  }
}

constexpr auto round_trip = model([](Builder& g) {
  auto x = input<"x", Shape<seq, dh>>(g);
  const Ref there = rope(x.ref(), 500.0, 3);
  (void)Tensor<Shape<seq, dh>>{&g, there.id}.named("there");
  return Tensor<Shape<seq, dh>>{&g, rope(there, 500.0, 3, true).id}.named("back");
});

TEST_CASE("the inverse rope undoes rope; a symbolic head dim is checked when bound", "[op][rope]") {
  for (auto [s, d] : {std::pair{5, 6}, std::pair{11, 2}, std::pair{7, 10}}) {
    const Array x = th::random_array(DType::f32, {s, d}, 20 + static_cast<std::uint64_t>(d));
    const Evaluation e = evaluate_reference(round_trip, {{"x", x}}, {});
    th::require_close(e["there"], expected_rope(x, 500, 3), 1e-6);
    th::require_close(e["back"], x, 1e-6);
  }
  try {
    evaluate_reference(round_trip, {{"x", Array(DType::f32, {5, 7})}}, {});
    FAIL("no error");
  } catch (const stag::Error& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("there: rope needs an even head dim (the last dim), got 7") !=
          std::string::npos);
  }
}

// q_m . k_n after rope depends only on m - n: shifting both by an offset changes nothing.
constexpr auto relative = model([](Builder& g) {
  auto q = input<"q", Shape<seq, 16>>(g);
  auto k = input<"k", Shape<seq, 16>>(g);
  (void)matmul_nt(rope(q), rope(k)).named("scores");
  return matmul_nt(rope(q, {.offset = 37}), rope(k, {.offset = 37})).named("shifted");
});

TEST_CASE("rope scores depend on relative positions only", "[op][rope]") {
  const std::vector<float> q1 = [] {
    std::vector<float> v;
    for (int i = 0; i < 16; ++i) v.push_back(static_cast<float>(std::sin(i + 1.0)));
    return v;
  }();
  std::vector<float> qs, ks;
  for (int s = 0; s < 5; ++s)  // the same q and k vector at every position
    for (int i = 0; i < 16; ++i) {
      qs.push_back(q1[static_cast<std::size_t>(i)]);
      ks.push_back(static_cast<float>(std::cos(3.0 * i)));
    }
  const Evaluation e = evaluate_reference(relative,
                                          {{"q", Array::from_vector<float>({5, 16}, qs)},
                                           {"k", Array::from_vector<float>({5, 16}, ks)}},
                                          {});
  th::require_close(e["shifted"], e["scores"], 1e-5);
  // Equal offsets m - n give equal scores: scores[1, 0] == scores[4, 3].
  CHECK(std::abs(e["scores"].at(1 * 5 + 0) - e["scores"].at(4 * 5 + 3)) < 1e-5);
}

// Positions as an input: one per row, in any order, negative too.
constexpr auto at_positions = model([](Builder& g) {
  auto x = input<"x", Shape<heads, seq, 8>>(g);
  auto p = input<"p", Shape<seq>, DType::i32>(g);
  (void)rope(x, p, {.theta = 1e6, .offset = 3}).named("shifted");
  (void)rope(x, {.offset = 2}).named("static_offset");
  (void)rope(x, cast<DType::i64>(positions<seq>(g)) +
                    Tensor<Shape<>, DType::i64>{&g, scalar(g, 2.0, DType::i64).id})
      .named("input_offset");
  return rope(x, p).named("y");
});

TEST_CASE("rope at positions given by an input", "[op][rope]") {
  for (auto [h, s] : {std::pair{1, 5}, std::pair{3, 7}, std::pair{2, 1}}) {
    const Array x = th::random_array(DType::f32, {h, s, 8}, 30 + static_cast<std::uint64_t>(s));
    std::vector<std::int64_t> pos;
    std::vector<std::int32_t> pos32;
    for (int i = 0; i < s; ++i) {
      pos.push_back((i * 37 + 11) % 50 - 5);  // unordered, one negative
      pos32.push_back(static_cast<std::int32_t>(pos.back()));
    }
    const Evaluation e = evaluate_reference(
        at_positions, {{"x", x}, {"p", Array::from_vector<std::int32_t>({s}, pos32)}}, {});
    th::require_close(e["y"], expected_rope(x, 10000, 0, false, pos), 1e-6);
    th::require_close(e["shifted"], expected_rope(x, 1e6, 3, false, pos), 1e-6);
    // positions 0..S-1 from an i64 input plus 2 give exactly the static offset 2.
    th::require_close(e["input_offset"], e["static_offset"], 0.0);
  }
}

constexpr auto rope_at_loss = model([](Builder& g) {
  auto x = input<"x", Shape<heads, seq, 6>>(g);
  auto w = input<"w", Shape<heads, seq, 6>>(g);
  auto p = input<"p", Shape<seq>, DType::i32>(g);
  return sum<0, 1, 2>(rope(x, p, {.theta = 100.0, .offset = 1}) * w);
});
constexpr auto rope_at_train = grad<rope_at_loss, "x">();
static_assert(rope_at_train.count(op::rope) == 2);

TEST_CASE("rope gradients with a positions input", "[op][rope][gradcheck]") {
  const std::pair<int, int> dims[] = {{1, 5}, {3, 7}};
  th::check_op({.what = "rope at positions",
                .forward = rope_at_loss,
                .train = rope_at_train,
                .inputs =
                    [&](int k) {
                      auto [h, s] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {h, s, 6}, 50 + k)},
                                         {"w", th::random_array(DType::f32, {h, s, 6}, 60 + k)},
                                         {"p", th::random_array(DType::i32, {s}, 70 + k, -20, 40)}};
                    },
                .bindings = 2});
}

constexpr auto rope_loss = model([](Builder& g) {
  auto x = input<"x", Shape<heads, seq, 6>>(g);
  auto w = input<"w", Shape<heads, seq, 6>>(g);
  return sum<0, 1, 2>(rope(x, {.theta = 100.0, .offset = 2}) * w);
});
constexpr auto rope_train = grad<rope_loss, "x">();
static_assert(rope_train.count(op::rope) == 2);

TEST_CASE("rope gradients on odd shapes and several bindings", "[op][rope][gradcheck]") {
  const std::pair<int, int> dims[] = {{1, 5}, {3, 7}, {2, 11}};
  th::check_op({.what = "rope",
                .forward = rope_loss,
                .train = rope_train,
                .inputs =
                    [&](int k) {
                      auto [h, s] = dims[k];
                      return NamedArrays{{"x", th::random_array(DType::f32, {h, s, 6}, 10 + k)},
                                         {"w", th::random_array(DType::f32, {h, s, 6}, 20 + k)}};
                    },
                .bindings = 3});
}

}  // namespace
