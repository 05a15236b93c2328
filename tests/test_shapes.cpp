// The compile-time shape algebra: canonical spellings, products, broadcasting, views,
// permutes, reductions. Positive facts are static_asserts; runtime checks print shapes.
#include "harness.hpp"

namespace {
using namespace stag;
constexpr auto batch = sym<"batch">;
constexpr auto seq = sym<"seq">;
constexpr auto kv = sym<"kv_seq">;

// Canonical spellings: user shapes round-trip; a product keeps its factors in layout order
// (`batch * seq` is row b * S + s; `seq * batch` is another layout).
static_assert(std::is_same_v<canonical_t<Shape<batch, seq, 512>>, Shape<batch, seq, 512>>);
static_assert(!std::is_same_v<decltype(batch * seq), decltype(seq * batch)>);
static_assert(!(dim_value<batch * seq>() == dim_value<seq * batch>()));
static_assert(std::is_same_v<canonical_t<Shape<seq * batch, 4>>, Shape<seq * batch, 4>>);
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
// A merged product splits back only in its own order (the flatten-for-a-projection bug).
static_assert(algebra::reshape(flat, Shape<seq, batch, 512>::value).err == ShapeErr::factor_order);
static_assert(algebra::reshape(bsd, Shape<seq * batch, 512>::value).err == ShapeErr::factor_order);
static_assert(algebra::reshape(Shape<seq, batch, 512>::value, Shape<seq * batch, 512>::value).ok());
static_assert(algebra::view_hint(flat, Shape<seq, batch, 512>::value).kind == 2);

// Views are splits and merges of adjacent axes, in order; axes of size 1 come and go freely.
static_assert(algebra::reshape(Shape<batch, 8, seq, 64>::value, bsd).err == ShapeErr::order);
static_assert(algebra::reshape(bsd, Shape<batch, 8, seq, 64>::value).err == ShapeErr::order);
static_assert(algebra::reshape(Shape<batch, seq, 4, 16>::value, Shape<batch, seq, 8, 8>::value)
                  .err == ShapeErr::regroup);
static_assert(algebra::reshape(bsd, Shape<batch, 1, seq, 512>::value).ok());
static_assert(
    algebra::reshape(Shape<batch, 8, 1, seq, 64>::value, Shape<batch, 8, seq, 64>::value).ok());
static_assert(algebra::reshape(bshd, Shape<batch * seq, 512>::value).ok());
static_assert(algebra::view_hint(Shape<batch, 8, seq, 64>::value, bsd).kind == 1);
static_assert(algebra::view_hint(Shape<batch, 8, seq, 64>::value, bsd).i == 1);
static_assert(algebra::view_hint(Shape<batch, 8, seq, 64>::value, bsd).j == 2);
static_assert(algebra::view_hint(bsd, Shape<batch, 8, seq, 64>::value).kind == 2);

// Named static dims: sizes like ints, identity like symbols.
constexpr auto heads = dim<"heads", 4>;
constexpr auto head_dim = dim<"head_dim", 16>;
constexpr auto d_model = heads * head_dim;
constexpr auto other4 = dim<"other", 4>;
static_assert(dim_value<heads>().is_static() && dim_value<heads>().coef == 4);
static_assert(dim_value<d_model>().is_static() && dim_value<d_model>().coef == 64);
static_assert(dim_value<d_model>().nname == 2);
// The rule for named and plain ints: a plain int is anonymous and matches a named dim of its
// size (the result keeps the name); two named dims match only by name, in order.
static_assert(dim_value<heads>() == dim_value<4>());
static_assert(!identical(dim_value<heads>(), dim_value<4>()));
static_assert(!(dim_value<heads>() == dim_value<other4>()));
static_assert(!(dim_value<d_model>() == dim_value<head_dim * heads>()));
static_assert(
    algebra::broadcast(Shape<batch, 4>::value, Shape<batch, heads>::value).shape.dims[1].nname ==
    1);
static_assert(algebra::broadcast(Shape<batch, heads>::value, Shape<batch, other4>::value).err ==
              ShapeErr::broadcast);
// Splits of a named product follow its factors in order; plain ints stand in by size.
constexpr ShapeV named_bsd = Shape<batch, seq, d_model>::value;
static_assert(algebra::reshape(named_bsd, Shape<batch, seq, heads, head_dim>::value).ok());
static_assert(algebra::reshape(named_bsd, Shape<batch, seq, head_dim, heads>::value).err ==
              ShapeErr::dim_names);
static_assert(algebra::reshape(named_bsd, Shape<batch, seq, 4, 16>::value).ok());
static_assert(algebra::reshape(named_bsd, Shape<batch, seq, 16, 4>::value).err ==
              ShapeErr::dim_names);
static_assert(algebra::reshape(named_bsd, Shape<batch, seq, 64>::value).ok());
static_assert(algebra::reshape(Shape<batch, seq, heads, head_dim>::value, named_bsd).ok());
static_assert(algebra::reshape(bsd, Shape<batch, seq, 8, 64>::value).ok());
// Canonical types keep names: a Shape type rebuilt from its value names the same dims.
static_assert(std::is_same_v<canonical_t<Shape<batch, heads, seq, head_dim>>,
                             Shape<batch, heads, seq, head_dim>>);
static_assert(std::is_same_v<canonical_t<Shape<d_model>>, Shape<d_model>>);
// Heads folded into the batch unfold in the same order (the bmm convention bug), with symbols
// and names interleaved as written.
constexpr ShapeV folded = Shape<batch * heads, seq, head_dim>::value;
static_assert(algebra::reshape(folded, Shape<batch, heads, seq, head_dim>::value).ok());
static_assert(algebra::reshape(folded, Shape<heads, batch, seq, head_dim>::value).err ==
              ShapeErr::factor_order);
static_assert(algebra::reshape(folded, Shape<batch, 4, seq, head_dim>::value).ok());  // anonymous
static_assert(!(dim_value<batch * heads>() == dim_value<heads * batch>()));
static_assert(std::is_same_v<canonical_t<Shape<batch * heads * seq>>, Shape<batch * heads * seq>>);

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
  CHECK(shape_string<Shape<batch, heads, seq, head_dim>>() == "[batch, heads, seq, head_dim]");
  CHECK(shape_string<Shape<batch, seq, d_model>>() == "[batch, seq, heads*head_dim]");
  CHECK(shape_string<Shape<batch * seq, 512>>() == "[batch*seq, 512]");
  CHECK(shape_string<Shape<seq * batch, 512>>() == "[seq*batch, 512]");
  CHECK(shape_string<Shape<batch * heads, seq>>() == "[batch*heads, seq]");
  CHECK(shape_string<Shape<>>() == "[]");
}

constexpr auto mha_graph = model([](Builder& g) {
  auto x = input<"x", Shape<dims::batch, dims::seq, 64>>(g);
  auto keep = input<"keep", Shape<dims::batch, dims::seq>, DType::boolean>(g);
  return sum<0, 1, 2>(multi_head_attention<4>(g / "attn", x, x, padding_keep(keep)).out);
});

TEST_CASE("the layers name their axes in the graph (pictures and descriptions)", "[shapes]") {
  const int w = mha_graph.find("attn.weights");
  REQUIRE(w >= 0);
  CHECK(dot_shape_text(mha_graph, mha_graph.shape(w)) == "[batch, heads, seq, seq]");
  bool split_seen = false;
  for (int n = 0; n < mha_graph.size(); ++n)
    split_seen = split_seen ||
                 dot_shape_text(mha_graph, mha_graph.shape(n)) == "[batch, heads, seq, head_dim]";
  CHECK(split_seen);
}

}  // namespace
