// The example behind docs/models/attention.md (the page quotes the marked regions): single-head
// attention with d_k != d_v, multi-head self-attention with padding & causal masks,
// cross-attention and grouped-query attention. Run, it checks what the masks promise;
// `--shapes mha|gqa` prints the page's shape tables.
#include "doc_tools.hpp"

using namespace stag;
using namespace stag::dims;  // the symbols batch, seq, src_seq, tgt_seq

// snippet-begin: single_head
constexpr auto single_head = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 32>>(g);
  auto keep = keep_input<"keep", Shape<batch, seq>>(g);  // true at real tokens
  // d_k = 16 for queries and keys, d_v = 24 for values: out is [batch, seq, 24].
  return single_head_attention<16, 24>(g / "attn", x, padding_keep(keep)).out;
});
// snippet-end: single_head

// snippet-begin: mha
constexpr auto self_attention = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 64>>(g);
  auto keep = keep_input<"keep", Shape<batch, seq>>(g);  // true at real tokens
  auto mask = padding_keep(keep) & causal_keep<seq>(g);  // [batch, 1, seq] & [1, seq, seq]
  auto a = multi_head_attention<4>(g / "attn", x, x, mask);
  a.weights.output("weights");  // [batch, 4, seq, seq], readable after a run
  return a.out;                 // [batch, seq, 64]
});
// snippet-end: mha

// snippet-begin: cross
constexpr auto cross_attention = model([](Builder& g) {
  auto y = input<"y", Shape<batch, tgt_seq, 64>>(g);            // queries: decoder states
  auto memory = input<"memory", Shape<batch, src_seq, 64>>(g);  // keys and values: encoder output
  auto src_keep = keep_input<"src_keep", Shape<batch, src_seq>>(g);
  return multi_head_attention<4>(g / "cross", y, memory, padding_keep(src_keep)).out;
});
// snippet-end: cross

// snippet-begin: gqa
constexpr auto gqa = model([](Builder& g) {
  auto x = input<"x", Shape<batch, seq, 64>>(g);
  const AttentionOptions o{.bias = false, .rope = true, .rope_theta = 1e6};
  // 8 query heads share 2 key/value heads (4 each); head dim 64 / 8 = 8.
  return grouped_query_attention<8, 2>(g / "attn", x, causal_keep<seq>(g), o).out;
});
// snippet-end: gqa

static_assert(self_attention.count(op::softmax) == 1);
static_assert(self_attention.shape(self_attention.output("weights")) ==
              Shape<batch, 4, seq, seq>::value);
static_assert(cross_attention.shape(cross_attention.result) == Shape<batch, tgt_seq, 64>::value);
static_assert(single_head.shape(single_head.result) == Shape<batch, seq, 24>::value);

int main(int argc, char** argv) {
  const std::string table = docs::shapes_arg(argc, argv);
  if (table == "mha") docs::print_shape_table(self_attention, [](int) { return true; });
  if (table == "gqa") docs::print_shape_table(gqa, [](int) { return true; });
  if (!table.empty()) return 0;

  // Two sequences of 5 positions, the second padded after 3.
  const std::int64_t B = 2, S = 5, H = 4;
  const std::int64_t lengths[B] = {5, 3};
  const NamedArrays in{{"x", docs::random_floats({B, S, 64}, 1)},
                       {"keep", docs::lengths_keep({5, 3}, S)}};
  const Evaluation e = evaluate_reference(self_attention, in, make_params(self_attention, {}, 7));
  const Array& w = e["weights"];
  bool zeros_where_masked = true, rows_sum_to_one = true;
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t h = 0; h < H; ++h)
      for (std::int64_t q = 0; q < S; ++q) {
        double row = 0;
        for (std::int64_t k = 0; k < S; ++k) {
          const double v = w.at(((b * H + h) * S + q) * S + k);
          row += v;
          if ((k > q || k >= lengths[b]) && v != 0.0) zeros_where_masked = false;
        }
        if (std::abs(row - 1) > 1e-5) rows_sum_to_one = false;
      }
  docs::expect(zeros_where_masked, "future and padded keys get weight exactly 0");
  docs::expect(rows_sum_to_one, "every query row (each keeps key 0) sums to 1");

  const NamedArrays cross_in{{"y", docs::random_floats({B, 3, 64}, 2)},
                             {"memory", docs::random_floats({B, 6, 64}, 3)},
                             {"src_keep", docs::lengths_keep({6, 4}, 6)}};
  const Evaluation c =
      evaluate_reference(cross_attention, cross_in, make_params(cross_attention, {}, 7));
  docs::expect(c.result().dims() == std::vector<std::int64_t>{B, 3, 64},
               "cross-attention output is [batch, tgt_seq, 64]");
  return 0;
}
