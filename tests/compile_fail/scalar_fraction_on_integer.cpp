// Mistake: scaling integer ids by 0.5: the constant would be truncated to 0 and every value
// silently zeroed. Graph building stops with the message of the throw.
// expect: stag: fractional scalar with an integer tensor; cast<f32>\(x\) first
// expect-gcc: scalar_fraction_on_integer\.cpp:[0-9]+:[0-9]+:   in .+constexpr.+ expansion of .+stag::operator\*<Shape<Sym<fixed_string<6>\{"batch"\}>\(\), 4>, stag::DType::i32>\(ids, 5\.0e-1\)
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto ids = input<"ids", Shape<batch, 4>, i32>(b);
#ifdef STAG_BAD
  auto half = ids * 0.5;
#else
  auto half = ids * 2.0;
#endif
  return sum<0, 1>(cast<f32>(half));
});

int main() { return g.size() > 0 ? 0 : 1; }
