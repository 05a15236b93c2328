// Mistake: a [batch, seq] padding mask used on [batch, heads, seq, seq] scores. PyTorch's
// broadcasting would align it with the last two dims ([seq, seq] against [batch, seq]) and
// silently mask the wrong positions whenever batch == seq; stag wants [batch, 1, 1, seq].
// expect: stag::softmax: the mask's rank differs from the scores' rank; unsqueeze it explicitly
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), 4, Sym<fixed_string<4>\{"seq"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)>
// expect-gcc: SM = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto q = input<"q", Shape<batch, 4, seq, 16>>(b);
  auto keep = input<"keep", Shape<batch, seq>, boolean>(b);
  auto scores = matmul_nt(q, q) * 0.25;
#ifdef STAG_BAD
  auto p = softmax<-1>(scores, keep);
#else
  auto p = softmax<-1>(scores, unsqueeze<1>(unsqueeze<1>(keep)));
#endif
  return sum<0, 1, 2, 3>(p);
});

int main() { return g.size() > 0 ? 0 : 1; }
