// The compile-time shape algebra: canonical spellings, products, broadcasting, views,
// permutes, reductions. Positive facts are static_asserts; runtime checks print shapes.
#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr auto kv = sym<"kv_seq">;

// Canonical spellings: user shapes round-trip; products are order independent.
static_assert(std::is_same_v<canonical_t<Shape<batch, seq, 512>>, Shape<batch, seq, 512>>);
static_assert(std::is_same_v<decltype(batch * seq), decltype(seq * batch)>);
static_assert(std::is_same_v<canonical_t<Shape<prod<batch, 1>, 4L>>, Shape<batch, 4>>);
static_assert(
    std::is_same_v<std::remove_const_t<decltype(prod<8, 64>)>, int>);  // static*static stays static
static_assert(prod<8, 64> == 512);
static_assert(Shape<batch * seq, 512>::value.dims[0].nsym == 2);
static_assert(!Shape<batch * seq, 512>::value.dims[0].is_static());
static_assert(Shape<batch, 512>::value.dims[1].is_static());

constexpr ShapeV bsd = Shape<batch, seq, 512>::value;
constexpr ShapeV bshd = Shape<batch, seq, 8, 64>::value;
constexpr ShapeV flat = Shape<batch * seq, 512>::value;

// Broadcasting: numpy rules, symbols by name.
static_assert(algebra::broadcast(bsd, Shape<512>::value).shape == bsd);
static_assert(algebra::broadcast(Shape<batch, 1, seq>::value, Shape<batch, seq, 1>::value).shape ==
              Shape<batch, seq, seq>::value);
static_assert(algebra::broadcast(bsd, Shape<batch, kv, 512>::value).err == ShapeErr::broadcast);
static_assert(algebra::broadcast(Shape<5, 7>::value, Shape<7>::value).ok());
static_assert(algebra::broadcast(Shape<5, 7>::value, Shape<5>::value).err == ShapeErr::broadcast);
static_assert(algebra::broadcast(Shape<>::value, Shape<5, 7>::value).shape == Shape<5, 7>::value);

// Views keep symbolic factors and their order.
static_assert(algebra::reshape(bsd, bshd).ok());
static_assert(algebra::reshape(bshd, bsd).ok());
static_assert(algebra::reshape(bsd, flat).ok());
static_assert(algebra::reshape(flat, bsd).ok());
static_assert(algebra::reshape(bsd, Shape<seq, 512>::value).err == ShapeErr::symbols);
static_assert(algebra::reshape(bsd, Shape<batch, seq, 500>::value).err == ShapeErr::numel);
static_assert(algebra::reshape(bsd, Shape<seq, batch, 512>::value).err == ShapeErr::order);
static_assert(algebra::reshape(Shape<5, 7>::value, Shape<35>::value).ok());

// Permutes with negative axes.
constexpr int perm[] = {0, 2, 1, -1};
static_assert(algebra::permute(bshd, perm, 4).shape == Shape<batch, 8, seq, 64>::value);
constexpr int bad_perm[] = {0, 0, 1, 2};
static_assert(algebra::permute(bshd, bad_perm, 4).err == ShapeErr::permutation);
static_assert(algebra::transpose(bsd, -1, -2).shape == Shape<batch, 512, seq>::value);
static_assert(algebra::transpose(bsd, 3, 0).err == ShapeErr::axis);

// squeeze / unsqueeze / concat / expand / slice / reduce.
static_assert(algebra::unsqueeze(Shape<batch, seq>::value, 1).shape == Shape<batch, 1, seq>::value);
static_assert(algebra::unsqueeze(Shape<batch, seq>::value, -1).shape ==
              Shape<batch, seq, 1>::value);
static_assert(algebra::squeeze(Shape<batch, 1, seq>::value, 1).shape == Shape<batch, seq>::value);
static_assert(algebra::squeeze(Shape<batch, 2, seq>::value, 1).err == ShapeErr::not_one);
constexpr ShapeV parts[] = {Shape<batch, 3>::value, Shape<batch, 5>::value};
static_assert(algebra::concat(parts, 2, -1).shape == Shape<batch, 8>::value);
constexpr ShapeV sym_parts[] = {Shape<seq, 4>::value, Shape<seq, 4>::value};
static_assert(algebra::concat(sym_parts, 2, 0).shape == Shape<prod<2, seq>, 4>::value);
constexpr ShapeV bad_parts[] = {Shape<seq, 4>::value, Shape<kv, 4>::value};
static_assert(algebra::concat(bad_parts, 2, 0).err == ShapeErr::concat_symbolic);
static_assert(
    algebra::expand(Shape<batch, 1, 1, seq>::value, Shape<batch, 8, seq, seq>::value).ok());
static_assert(algebra::expand(Shape<batch, 2, seq>::value, Shape<batch, 8, seq>::value).err ==
              ShapeErr::expand);
static_assert(algebra::slice(Shape<batch, 13>::value, 1, 2, 7).shape == Shape<batch, 5>::value);
static_assert(algebra::slice(Shape<batch, 13>::value, 1, 2, 14).err == ShapeErr::slice_range);
static_assert(algebra::reduce(bsd, 0b100, false).shape == Shape<batch, seq>::value);
static_assert(algebra::reduce(bsd, 0b010, true).shape == Shape<batch, 1, 512>::value);
static_assert(algebra::reduce(bsd, 0b111, false).shape == Shape<>::value);

TEST_CASE("shapes print with their symbol names", "[shapes]") {
  CHECK(shape_string<Shape<batch, seq, 512>>() == "[batch, seq, 512]");
  CHECK(shape_string<Shape<batch * seq, 512>>().find('*') != std::string::npos);
  CHECK(shape_string<Shape<>>() == "[]");
}

}  // namespace
