// Shared helpers of the CPU kernels (oneDNN descriptors, creation counter).
#include <stag/ops/cpu_kernel.hpp>

namespace stag {

std::atomic<std::int64_t>& primitive_creations() {
  static std::atomic<std::int64_t> count{0};
  return count;
}

dnnl::memory::data_type onednn_type(DType t) {
  using dt = dnnl::memory::data_type;
  switch (t) {
    case DType::f32:
      return dt::f32;
    case DType::bf16:
      return dt::bf16;
    case DType::i32:
      return dt::s32;
    case DType::boolean:
      return dt::u8;
    default:
      return dt::undef;
  }
}

dnnl::memory::desc memory_desc(const TensorView& v) {
  dnnl::memory::dims dims(v.dims, v.dims + v.rank), strides(v.strides, v.strides + v.rank);
  if (v.rank == 0) {  // oneDNN has no rank-0 tensors: a scalar is [1]
    dims = {1};
    strides = {1};
  }
  return dnnl::memory::desc(dims, onednn_type(v.dtype), strides);
}

std::string impl_name(const dnnl::primitive_desc_base& pd) {
  const char* s = pd.impl_info_str();
  return s ? std::string(s) : std::string("?");
}

}  // namespace stag
