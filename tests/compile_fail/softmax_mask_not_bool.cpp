// Mistake: a 0/1 float mask passed where softmax takes a bool keep-mask.
// expect: stag::softmax: the mask must be a bool tensor
// expect-gcc: SM = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), 1, 1, Sym<fixed_string<4>\{"seq"\}>\(\)>; DType TM = stag::DType::f32
// expect-gcc: S = Shape<Sym<fixed_string<6>\{"batch"\}>\(\), 4, Sym<fixed_string<4>\{"seq"\}>\(\), Sym<fixed_string<4>\{"seq"\}>\(\)>
// expect-gcc: required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;

constexpr auto g = model([](Builder& b) {
  auto scores = input<"scores", Shape<batch, 4, seq, seq>>(b);
#ifdef STAG_BAD
  auto keep = input<"keep", Shape<batch, 1, 1, seq>>(b);
#else
  auto keep = input<"keep", Shape<batch, 1, 1, seq>, boolean>(b);
#endif
  return sum<0, 1, 2, 3>(softmax<-1>(scores, keep));
});

int main() { return g.size() > 0 ? 0 : 1; }
