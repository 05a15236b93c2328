// Typed token and attention masks: keep_input / padding_input carry their polarity in their
// type, `~` flips it, the converters and the ops (softmax, masked_fill, sdpa) take the typed
// masks and give what the plain-tensor forms give for the same positions, computed by hand here.
#include <cmath>

#include <stag/models/data/batch.hpp>

#include "op_harness.hpp"

namespace {
using namespace stag;
using namespace stag::dims;

using KeepT = KeepTokens<Shape<batch, seq>>;
using PadT = PaddingTokens<Shape<batch, seq>>;
static_assert(std::is_same_v<decltype(~std::declval<KeepT>()), PadT>);
static_assert(std::is_same_v<decltype(~std::declval<PadT>()), KeepT>);
static_assert(std::is_same_v<decltype(std::declval<KeepT>() & std::declval<KeepT>()), KeepT>);
static_assert(std::is_same_v<decltype(std::declval<PadT>() | std::declval<PadT>()), PadT>);
static_assert(decltype(padding_keep(std::declval<KeepT>()))::polarity == MaskPolarity::keep);
static_assert(decltype(from_key_padding_mask(std::declval<PadT>()))::polarity ==
              MaskPolarity::keep);
static_assert(decltype(query_keep(std::declval<KeepT>()))::axis == MaskAxis::query);

constexpr auto typed = model([](Builder& g) {
  auto keep = keep_input<"keep", Shape<batch, seq>>(g);
  auto pad = padding_input<"pad", Shape<batch, seq>>(g);
  auto s = input<"s", Shape<batch, 2, seq, seq>>(g);
  auto s3 = input<"s3", Shape<batch, seq, seq>>(g);
  (void)softmax<-1>(s, padding_keep(keep)).named("soft_keep");
  (void)softmax<-1>(s, from_key_padding_mask(pad)).named("soft_pad");
  (void)softmax<-1>(s, padding_keep(~pad)).named("soft_flipped");
  (void)softmax<-1>(s3, padding_keep(keep)).named("soft3");
  (void)masked_fill(s, ~padding_keep(keep), -100.0).named("fill");
  auto q = view<batch, 2, seq, 1>(sum<-1>(s));
  (void)sdpa(q, q, q, padding_keep(keep)).named("attn_typed");
  (void)sdpa(q, q, q, unsqueeze<1>(unsqueeze<1>(keep.values))).named("attn_plain");
  return sum<0, 1, 2, 3>(s);
});

TEST_CASE("typed masks: the converters and ops mask the keys they say", "[masks]") {
  const std::int64_t b = 2, n = 4;
  const Array s = th::random_array(DType::f32, {b, 2, n, n}, 11);
  const Array s3 = th::random_array(DType::f32, {b, n, n}, 12);
  // Row 0 keeps keys 0, 1 and 3; row 1 keeps key 2 only.
  const std::vector<bool> keep_v = {true, true, false, true, false, false, true, false};
  std::vector<bool> pad_v;
  for (bool k : keep_v) pad_v.push_back(!k);
  const Array keep = Array::from_vector<bool>({b, n}, keep_v);
  const Array pad = Array::from_vector<bool>({b, n}, pad_v);
  const Evaluation e =
      evaluate_reference(typed, {{"keep", keep}, {"pad", pad}, {"s", s}, {"s3", s3}}, {});
  // softmax over the kept keys of each row, zero elsewhere; masked_fill with -100 where dropped.
  const auto expected = [&](const Array& x, std::int64_t heads) {
    const std::vector<double> xs = x.to_doubles();
    std::vector<double> soft(xs.size()), fill(xs.size());
    for (std::int64_t r = 0; r < b * heads * n; ++r) {
      const std::int64_t bi = r / (heads * n);
      double mx = -1e300, z = 0;
      for (std::int64_t k = 0; k < n; ++k)
        if (keep_v[static_cast<std::size_t>(bi * n + k)])
          mx = std::max(mx, xs[static_cast<std::size_t>(r * n + k)]);
      for (std::int64_t k = 0; k < n; ++k)
        if (keep_v[static_cast<std::size_t>(bi * n + k)])
          z += std::exp(xs[static_cast<std::size_t>(r * n + k)] - mx);
      for (std::int64_t k = 0; k < n; ++k) {
        const auto i = static_cast<std::size_t>(r * n + k);
        const bool kept = keep_v[static_cast<std::size_t>(bi * n + k)];
        soft[i] = kept ? std::exp(xs[i] - mx) / z : 0.0;
        fill[i] = kept ? xs[i] : -100.0;
      }
    }
    return std::pair{soft, fill};
  };
  const auto [soft, fill] = expected(s, 2);
  th::require_close(e["soft_keep"], soft, 1e-6);
  th::require_close(e["soft_pad"], soft, 1e-6);
  th::require_close(e["soft_flipped"], soft, 1e-6);
  th::require_close(e["fill"], fill, 0);
  th::require_close(e["soft3"], expected(s3, 1).first, 1e-6);
  th::require_close(e["attn_typed"], e["attn_plain"], 0);
}

// The polarity declared by keep_input / padding_input is checked against an array that says
// its own (the batches' masks say keep): the wrong one is refused with both named, a plain
// array (no role) is accepted, and flip_mask gives the other polarity with negated values.
TEST_CASE("typed masks: a session refuses a mask of the other polarity", "[masks]") {
  const std::int64_t b = 2, n = 4;
  const Array s = th::random_array(DType::f32, {b, 2, n, n}, 11);
  const Array s3 = th::random_array(DType::f32, {b, n, n}, 12);
  Array keep =
      Array::from_vector<bool>({b, n}, {true, true, false, true, false, false, true, false});
  keep.set_mask_role(MaskRole::keep);
  const Array pad = flip_mask(keep);
  CHECK(pad.mask_role() == MaskRole::padding);
  CHECK(pad.to_doubles() == std::vector<double>{0, 0, 1, 0, 1, 1, 0, 1});
  CHECK(flip_mask(pad).mask_role() == MaskRole::keep);
  auto run = [&](const Array& k, const Array& p) {
    return evaluate_reference(typed, {{"keep", k}, {"pad", p}, {"s", s}, {"s3", s3}}, {});
  };
  const Evaluation right = run(keep, pad);
  try {
    (void)run(pad, pad);
    FAIL("a padding mask fed to keep_input was accepted");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "stag: input 'keep' is declared a keep mask (true at real tokens) but was given a "
          "padding mask (true at padding): flip it (stag::flip_mask) or feed the mask the graph "
          "declares");
  }
  CHECK_THROWS_WITH(run(keep, keep), Catch::Contains("input 'pad' is declared a padding mask"));
  // A plain bool array says nothing and is taken as it is.
  Array plain_pad = pad.clone();
  plain_pad.set_mask_role(MaskRole::none);
  th::require_close(run(keep, plain_pad)["soft_pad"], right["soft_pad"], 0);
  // The batches' masks say keep.
  const data::PaddedIds padded = data::pad_batch({{5, 6}, {7}}, std::vector<std::size_t>{0, 1}, {});
  CHECK(padded.keep.mask_role() == MaskRole::keep);
}
}  // namespace
