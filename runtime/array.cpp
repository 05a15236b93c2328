// Array storage and conversions.
#include <cstdlib>
#include <cstring>

#include <stag/runtime/array.hpp>

namespace stag {

void Array::Free::operator()(std::byte* p) const {
  std::free(p);
}

Array::Array(DType dtype, std::vector<std::int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  if (dims_.size() > static_cast<std::size_t>(kMaxRank))
    throw Error("stag::Array: at most " + std::to_string(kMaxRank) + " dims, got " +
                std::to_string(dims_.size()));
  for (std::int64_t d : dims_)
    if (d < 0) throw Error("stag::Array: negative dim in " + dims_string(dims_));
  const std::size_t n = bytes();
  const std::size_t padded = ((n == 0 ? 1 : n) + 63) / 64 * 64;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(64, padded));
  if (p == nullptr)
    throw Error("stag::Array: out of memory allocating " + std::to_string(n) + " bytes");
  std::memset(p, 0, padded);
  data_ = std::shared_ptr<std::byte>(p, Free{});
}

std::int64_t Array::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims_) n *= d;
  return n;
}

Array Array::wrap(DType dtype, std::vector<std::int64_t> dims, std::shared_ptr<std::byte> data) {
  Array a;
  a.dtype_ = dtype;
  a.dims_ = std::move(dims);
  a.data_ = std::move(data);
  return a;
}

TensorView Array::view() const {
  TensorView v;
  v.data = const_cast<std::byte*>(data_.get());
  v.dtype = dtype_;
  v.rank = rank();
  for (int i = 0; i < v.rank; ++i) v.dims[i] = dims_[static_cast<std::size_t>(i)];
  v.set_contiguous();
  return v;
}

double Array::at(std::int64_t flat) const {
  return kernel::load(view(), flat);
}
void Array::set(std::int64_t flat, double v) {
  kernel::store(view(), flat, v);
}

std::vector<double> Array::to_doubles() const {
  std::vector<double> out(static_cast<std::size_t>(numel()));
  const TensorView v = view();
  for (std::int64_t i = 0; i < numel(); ++i) out[static_cast<std::size_t>(i)] = kernel::load(v, i);
  return out;
}

Array Array::to(DType t, bool always_copy) const {
  if (t == dtype_ && !always_copy) return *this;
  Array out(t, dims_);
  out.mask_role_ = mask_role_;
  if (t == dtype_) {  // a copy: the bytes (an i64 beyond 2^53 would not survive a double)
    if (bytes() > 0) std::memcpy(out.raw(), raw(), bytes());
    return out;
  }
  const TensorView src = view(), dst = out.view();
  for (std::int64_t i = 0; i < numel(); ++i) kernel::store(dst, i, kernel::load(src, i));
  return out;
}

Array flip_mask(const Array& mask) {
  if (mask.dtype() != DType::boolean)
    throw Error("stag: flip_mask: expected a bool mask, got " + mask.describe());
  Array out(DType::boolean, mask.dims());
  const bool* in = mask.data<bool>();
  bool* o = out.data<bool>();
  for (std::int64_t i = 0; i < mask.numel(); ++i) o[i] = !in[i];
  out.set_mask_role(mask.mask_role() == MaskRole::keep      ? MaskRole::padding
                    : mask.mask_role() == MaskRole::padding ? MaskRole::keep
                                                            : MaskRole::none);
  return out;
}

std::string dims_string(const std::vector<std::int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::string Array::shape_string() const {
  return dims_string(dims_);
}

}  // namespace stag
