// Mistake: tokens flattened batch-major for a projection ([batch * seq, 64]) and viewed back
// sequence-major ([seq, batch, 64]), then transposed to the shape that was wanted. The counts
// agree and the last shape is right, so this runs and mixes up which row belongs to which
// sentence. A product keeps its factors' order: batch * seq splits only into [batch, seq].
// clang-format off
// expect-first-gcc: error: .*stag::shape_error<.*"stag::view: the split or merge reorders a product.?'s symbolic factors .*: \[batch\*seq, 64\] and \[seq, batch, 64\]; view to \[batch, seq, 64\], then transpose<0, 1>"
// expect-first-clang: error: static_assert failed due to requirement .*stag::show::shape<stag::show::prod<stag::dims::batch, stag::dims::seq>, stag::show::n<64>>, stag::show::shape<stag::dims::seq, stag::dims::batch, stag::show::n<64>>, stag::show::hint<2, 0, 1>>>. "stag::view: the split or merge reorders a product's symbolic factors
// expect-errors: 1
// clang-format on
#include <stag/stag.hpp>

using namespace stag;
using namespace stag::dims;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, seq, 64>>(b);
  auto w = param<Shape<64, 64>>(b / "proj", "weight");
  auto flat = matmul(view<batch * seq, 64>(x), w);
#ifdef STAG_BAD
  auto y = transpose<0, 1>(view<seq, batch, 64>(flat));
#else
  auto y = view<batch, seq, 64>(flat);
#endif
  return sum<0, 1, 2>(y);
});

int main() { return g.size() > 0 ? 0 : 1; }
