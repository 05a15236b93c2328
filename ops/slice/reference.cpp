// Reference kernels of slice and slice_backward: byte copies of [start, end) along the axis,
// for any dtype. A symbolic dim shorter than `end` is reported here, when its size is known.
#include <cstring>
#include <string>

#include <stag/ops/kernel.hpp>
#include <stag/ops/slice/slice.hpp>

namespace stag {
namespace {

// The dim as written in the graph, e.g. "seq" or "2*seq" (a static dim prints its number).
std::string dim_spelling(const GraphView& g, const DimV& d) {
  std::string s = (d.coef != 1 || d.nsym == 0) ? std::to_string(d.coef) : "";
  for (int i = 0; i < d.nsym; ++i) {
    if (!s.empty()) s += '*';
    s += g.sym_name(d.sym[i]);
  }
  return s;
}

// Checks that `full` (the un-sliced tensor) holds [start, end) along `axis`.
void check_bounds(const KernelArgs& a, const TensorView& full, int graph_input) {
  const int axis = static_cast<int>(a.attr().i[0]);
  const std::int64_t start = a.attr().i[1], end = a.attr().i[2];
  const std::int64_t n = full.dims[axis];
  if (start >= 0 && end >= start && end <= n) return;
  const DimV& d = a.g.shape(graph_input).dims[axis];
  throw Error("stag: " + a.name() + ": slice [" + std::to_string(start) + ", " +
              std::to_string(end) + ") of dim " + std::to_string(axis) +
              " is out of range: the dim is " + dim_spelling(a.g, d) +
              (d.is_static() ? "" : " = " + std::to_string(n)) + ", it must be at least " +
              std::to_string(end));
}

// Copies between the full tensor and the slice: to_slice selects the direction.
void copy_slice(const KernelArgs& a, const TensorView& full, const TensorView& part,
                bool to_slice) {
  const int axis = static_cast<int>(a.attr().i[0]);
  const std::int64_t start = a.attr().i[1];
  std::int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= full.dims[d];
  for (int d = axis + 1; d < full.rank; ++d) inner *= full.dims[d];
  const auto es = static_cast<std::int64_t>(dtype_size(full.dtype));
  const std::int64_t full_row = full.dims[axis] * inner * es,
                     part_row = part.dims[axis] * inner * es;
  auto* f = static_cast<unsigned char*>(full.data);
  auto* p = static_cast<unsigned char*>(part.data);
  for (std::int64_t o = 0; o < outer; ++o) {
    unsigned char* fo = f + o * full_row + start * inner * es;
    unsigned char* po = p + o * part_row;
    if (to_slice)
      std::memcpy(po, fo, static_cast<std::size_t>(part_row));
    else
      std::memcpy(fo, po, static_cast<std::size_t>(part_row));
  }
}

}  // namespace

void OpDef<OpId::slice>::reference(const KernelArgs& a) {
  check_bounds(a, a.in[0], a.n().in[0]);
  copy_slice(a, a.in[0], a.out, true);
}

void OpDef<OpId::slice_backward>::reference(const KernelArgs& a) {
  check_bounds(a, a.out, a.node);
  std::memset(a.out.data, 0, static_cast<std::size_t>(a.out.numel()) * dtype_size(a.out.dtype));
  copy_slice(a, a.out, a.in[0], false);
}

}  // namespace stag
