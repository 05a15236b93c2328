// Mistake: two inputs named "x" (a copy-pasted line); callers could not bind them apart.
// expect: stag: two inputs or parameters have the same name; scope them apart
// expect-gcc: duplicate_input_names\.cpp:[0-9]+:[0-9]+:   required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
#ifdef STAG_BAD
  auto y = input<"x", Shape<batch, 8>>(b);
#else
  auto y = input<"y", Shape<batch, 8>>(b);
#endif
  return sum<0, 1>(x * y);
});

int main() { return g.size() > 0 ? 0 : 1; }
