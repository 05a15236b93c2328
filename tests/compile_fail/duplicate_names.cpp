// Mistake: two layers built with the same scope, so both weights are called "proj.weight".
// The builder's check runs in the constant evaluation of model(); the compiler shows the throw.
// expect: stag: two inputs or parameters have the same name; scope them apart
// expect-gcc: duplicate_names\.cpp:[0-9]+:[0-9]+:   required from here
#include <stag/stag.hpp>

using namespace stag;
constexpr auto batch = sym<"batch">;

constexpr auto g = model([](Builder& b) {
  auto x = input<"x", Shape<batch, 8>>(b);
  auto w1 = param<Shape<8, 8>>(b / "proj", "weight");
#ifdef STAG_BAD
  auto w2 = param<Shape<8, 8>>(b / "proj", "weight");
#else
  auto w2 = param<Shape<8, 8>>(b / "proj2", "weight");
#endif
  return sum<0, 1>(matmul(matmul(x, w1), w2));
});

int main() { return g.size() > 0 ? 0 : 1; }
