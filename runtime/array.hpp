// Array: an owning, 64-byte aligned, contiguous host tensor with a dtype and concrete dims.
// It is what callers feed into graphs and get back from them, and what checkpoints hold.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <stag/ops/kernel.hpp>

namespace stag {

class Array {
 public:
  Array() = default;
  // A zero-filled array.
  Array(DType dtype, std::vector<std::int64_t> dims);

  template <class T>
  static Array from(std::vector<std::int64_t> dims, std::initializer_list<T> values) {
    return from_vector<T>(std::move(dims), std::vector<T>(values));
  }
  template <class T>
  static Array from_vector(std::vector<std::int64_t> dims, const std::vector<T>& values);

  // An array over memory someone else allocated and frees (the deleter of `data`), e.g. a
  // parameter's copy on a GPU. NOTE: device memory must not be read through raw() on the host;
  // such arrays are only handed to the planner, which bakes their pointers into kernels.
  static Array wrap(DType dtype, std::vector<std::int64_t> dims, std::shared_ptr<std::byte> data);

  DType dtype() const { return dtype_; }
  int rank() const { return static_cast<int>(dims_.size()); }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  std::int64_t dim(int i) const { return dims_[static_cast<std::size_t>(i < 0 ? i + rank() : i)]; }
  std::int64_t numel() const;
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype_); }
  bool empty() const { return data_ == nullptr && numel() == 0; }

  void* raw() { return data_.get(); }
  const void* raw() const { return data_.get(); }
  template <class T>
  T* data() {
    return static_cast<T*>(raw());
  }
  template <class T>
  const T* data() const {
    return static_cast<const T*>(raw());
  }

  // Element `flat` (row-major) as a double, whatever the dtype; and the reverse.
  double at(std::int64_t flat) const;
  void set(std::int64_t flat, double v);
  std::vector<double> to_doubles() const;

  // Copies share storage (like a shared_ptr); clone() makes an independent copy.
  Array clone() const { return to(dtype_, true); }
  // The same values in another dtype (rounding as the cast op does).
  Array to(DType t, bool always_copy = false) const;
  TensorView view() const;

  // Shape as text, e.g. "[2, 5, 64]".
  std::string shape_string() const;
  std::string describe() const { return std::string(dtype_name(dtype_)) + " " + shape_string(); }

  // For a bool token mask: what true means (graph/dtype.hpp). The batches (models/data) say
  // keep; a session refuses a mask fed to an input declared with the other polarity. Copies,
  // clone() and to() keep it; none (the default) is accepted by any bool input.
  MaskRole mask_role() const { return mask_role_; }
  void set_mask_role(MaskRole r) { mask_role_ = r; }

 private:
  struct Free {
    void operator()(std::byte* p) const;
  };
  DType dtype_ = DType::f32;
  MaskRole mask_role_ = MaskRole::none;
  std::vector<std::int64_t> dims_;
  std::shared_ptr<std::byte> data_;
};

// The same tokens with the other polarity: the values negated, keep <-> padding (a bool array).
Array flip_mask(const Array& mask);

std::string dims_string(const std::vector<std::int64_t>& dims);

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else if constexpr (std::is_same_v<T, std::int32_t>)
    return DType::i32;
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return DType::i64;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::boolean;
  else
    static_assert(sizeof(T) == 0, "stag::Array: unsupported element type");
}

template <class T>
Array Array::from_vector(std::vector<std::int64_t> dims, const std::vector<T>& values) {
  Array a(dtype_of<T>(), std::move(dims));
  if (static_cast<std::int64_t>(values.size()) != a.numel())
    throw Error("stag::Array: " + std::to_string(values.size()) + " values for shape " +
                a.shape_string() + " (" + std::to_string(a.numel()) + " elements)");
  T* out = a.data<T>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return a;
}

}  // namespace stag
