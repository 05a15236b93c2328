// Reference kernels of concat and concat_backward: byte copies of contiguous blocks, for any
// dtype. concat_backward finds its offset from g's bound axis length (see vjp.hpp).
#include <cstring>
#include <string>

#include <stag/ops/concat/concat.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {
namespace {

// Copies `part` to or from [offset, offset + part's length) along `axis` of `whole`.
void copy_block(const TensorView& whole, const TensorView& part, int axis, std::int64_t offset,
                bool into_whole) {
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= whole.dims[d];
  for (int d = axis + 1; d < whole.rank; ++d) inner *= whole.dims[d];
  const auto es = static_cast<std::int64_t>(dtype_size(whole.dtype));
  const std::int64_t whole_row = whole.dims[axis] * inner * es;
  const std::int64_t part_row = part.dims[axis] * inner * es;
  auto* w = static_cast<unsigned char*>(whole.data);
  auto* p = static_cast<unsigned char*>(part.data);
  for (std::int64_t o = 0; o < outer; ++o) {
    unsigned char* wo = w + o * whole_row + offset * inner * es;
    unsigned char* po = p + o * part_row;
    if (into_whole)
      std::memcpy(wo, po, static_cast<std::size_t>(part_row));
    else
      std::memcpy(po, wo, static_cast<std::size_t>(part_row));
  }
}

}  // namespace

void OpDef<OpId::concat>::reference(const KernelArgs& a) {
  const int axis = static_cast<int>(a.attr().i[0]);
  std::int64_t offset = 0;
  for (const TensorView& part : a.in) {
    if (offset + part.dims[axis] > a.out.dims[axis])
      throw Error("stag: internal error: " + a.name() + ": the inputs do not fit the output");
    copy_block(a.out, part, axis, offset, true);
    offset += part.dims[axis];
  }
}

void OpDef<OpId::concat_backward>::reference(const KernelArgs& a) {
  const int axis = static_cast<int>(a.attr().i[0]);
  const std::int64_t prefix = a.attr().i[2], total = a.attr().i[3];
  const TensorView& g = a.in[0];
  const std::int64_t whole = g.dims[axis];
  // NOTE: total == 0 only when every input is empty along the axis; then the offset is 0.
  if (total < 0 || prefix < 0 || (total > 0 && whole % total != 0))
    throw Error("stag: internal error: " + a.name() + ": the gradient's axis length " +
                std::to_string(whole) + " is not a multiple of " + std::to_string(total));
  const std::int64_t unit = total > 0 ? whole / total : 0;
  const std::int64_t offset = prefix * unit;
  if (offset + a.out.dims[axis] > whole)
    throw Error("stag: internal error: " + a.name() + ": part " + std::to_string(a.attr().i[1]) +
                " does not fit the gradient");
  copy_block(g, a.out, axis, offset, false);
}

}  // namespace stag
