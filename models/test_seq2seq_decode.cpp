// stag::greedy_decode_seq2seq on a small random Transformer: every produced id is the argmax of
// the full forward pass on its prefix, rows decode the same alone as in a batch, the vocabulary
// limit and <eos> are respected, and bad calls are refused.
#include <stag/models/seq2seq_decode.hpp>

#include "harness.hpp"

namespace {
using namespace stag;

constexpr TransformerConfig kTf{.src_vocab = 30,
                                .tgt_vocab = 40,
                                .d_model = 16,
                                .heads = 2,
                                .d_ff = 32,
                                .enc_layers = 1,
                                .dec_layers = 1,
                                .dropout = 0.0};
constexpr auto tf = model([](Builder& g) { return transformer<kTf>(g); });

// The argmax over [eos, limit) of the logits at the prefix's last position, from one full run.
std::int32_t next_id(Session& s, const std::vector<std::int32_t>& src,
                     const std::vector<std::int32_t>& prefix, std::int32_t limit) {
  const auto n = static_cast<std::int64_t>(src.size()),
             t = static_cast<std::int64_t>(prefix.size());
  Array sa(DType::i32, {1, n}), sk(DType::boolean, {1, n}), ti(DType::i32, {1, t}),
      tk(DType::boolean, {1, t}), to(DType::i32, {1, t});
  for (std::int64_t j = 0; j < n; ++j)
    sa.data<std::int32_t>()[j] = src[static_cast<std::size_t>(j)];
  for (std::int64_t j = 0; j < n; ++j) sk.data<bool>()[j] = true;
  for (std::int64_t j = 0; j < t; ++j) {
    ti.data<std::int32_t>()[j] = prefix[static_cast<std::size_t>(j)];
    tk.data<bool>()[j] = true;
    to.data<std::int32_t>()[j] = -100;
  }
  s.set_inputs({{"src", sa}, {"src_keep", sk}, {"tgt_in", ti}, {"tgt_keep", tk}, {"tgt_out", to}});
  s.run();
  const Array logits = s.get("logits");
  const float* row = logits.data<float>() + (t - 1) * logits.dim(2);
  std::int32_t best = data::kEosId;
  for (std::int32_t c = data::kEosId + 1; c < limit; ++c)
    if (row[c] > row[best]) best = c;
  return best;
}

TEST_CASE("greedy_decode_seq2seq follows the argmax of the full forward pass", "[models][decode]") {
  Session s(tf, {.seed = 3});
  const std::vector<std::vector<std::int32_t>> sources = {
      {5, 6, 7, 8}, {9, 10}, {11, 12, 13, 14, 15, 16}, {17}};
  const std::vector<std::size_t> rows = {0, 1, 2, 3};
  const std::int32_t limit = 25;
  const auto out = greedy_decode_seq2seq(s, sources, rows, {.max_new = 5, .vocab_limit = limit});
  REQUIRE(out.size() == 4);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    INFO("row " << i);
    CHECK(out[i].size() <= 5);
    std::vector<std::int32_t> prefix = {data::kBosId};
    for (std::int32_t id : out[i]) {
      CHECK(id > data::kEosId);
      CHECK(id < limit);
      // Padding the other rows' sources must not change this row's choice.
      CHECK(next_id(s, sources[i], prefix, limit) == id);
      prefix.push_back(id);
    }
    // It stopped at <eos> or at max_new.
    if (out[i].size() < 5) CHECK(next_id(s, sources[i], prefix, limit) == data::kEosId);
    // One row alone decodes the same as in the batch, and in batches of one row.
    const std::size_t only[] = {i};
    CHECK(greedy_decode_seq2seq(s, sources, only, {.max_new = 5, .vocab_limit = limit})[0] ==
          out[i]);
  }
  CHECK(greedy_decode_seq2seq(s, sources, rows,
                              {.max_new = 5, .vocab_limit = limit, .batch_rows = 1}) == out);
}

TEST_CASE("greedy_decode_seq2seq refuses bad calls", "[models][decode]") {
  Session s(tf, {.seed = 3});
  const std::vector<std::vector<std::int32_t>> sources = {{5, 6}};
  const std::vector<std::size_t> none, bad = {4}, one = {0};
  CHECK_THROWS_WITH(greedy_decode_seq2seq(s, sources, none), Catch::Contains("no rows to decode"));
  CHECK_THROWS_WITH(greedy_decode_seq2seq(s, sources, bad),
                    Catch::Contains("row 4 is out of range"));
  CHECK_THROWS_WITH(greedy_decode_seq2seq(s, sources, one, {.vocab_limit = 3}),
                    Catch::Contains("eos id 3 is outside the 3 ids decoded"));
  CHECK_THROWS_WITH(greedy_decode_seq2seq(s, sources, one, {.max_new = -1}),
                    Catch::Contains("must not be negative"));
}

}  // namespace
