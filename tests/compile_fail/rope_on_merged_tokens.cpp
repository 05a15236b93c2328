// Mistake: rope on the tokens flattened for a projection, [batch * seq, head_dim]: the rows are
// numbered across the whole batch, so the second sentence starts at position seq, not 0.
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::rope: rope rotates along the second-to-last axis, the sequence, but it is a merged product \(rows numbered across the batch\); rotate before merging: \[batch\*seq, 16\]"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::args<stag::show::shape<stag::show::prod<stag::dims::batch, stag::dims::seq>, stag::show::n<16>>>>. "stag::rope: rope rotates along the second-to-last axis, the sequence, but it is a merged product \(rows numbered across the batch\); rotate before merging"
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 16>>(b);
#ifdef STAG_BAD
  auto r = view<batch, seq, 16>(rope(view<batch * seq, 16>(x)));
#else
  auto r = rope(x);
#endif
  return sum<0, 1, 2>(r);
});

int main() { return g.size() > 0 ? 0 : 1; }
