// The CUDA interpret mode (ops/cuda_interpret.hpp), part 2: shared memory checked for races,
// bounds and reads of unwritten elements (STAG_SHARED, STAG_DYNAMIC_SHARED).
#pragma once

#include <stag/ops/cuda_interpret_fibers.hpp>

namespace stag::cuda_interpret::emu {

// ---- shared memory -----------------------------------------------------------------------------
// One access remembered: the thread (linear index in the block) and how many __syncwarps its warp
// had completed since the last barrier when it made it.
struct Access {
  int thread = -1;
  std::uint32_t syncs = 0;
};
// What one element saw since the last barrier.
struct Shadow {
  std::uint64_t epoch = 0;          // the records below are of this epoch (else: none)
  std::uint64_t written_block = 0;  // block_serial of the block that last wrote it
  Access write;
  std::vector<Access> reads;  // one per thread, its latest
};

// Is `a`'s access ordered before thread `b`'s now? Same warp, and a __syncwarp after it whose mask
// holds both.
inline bool ordered(const Access& a, int b) {
  if (a.thread == b) return true;
  if (a.thread / 32 != b / 32) return false;
  const auto& syncs = state().warp_syncs[static_cast<std::size_t>(b / 32)];
  const unsigned both = (1u << (a.thread % 32)) | (1u << (b % 32));
  for (std::size_t k = a.syncs; k < syncs.size(); ++k)
    if ((syncs[k].mask & both) == both) return true;
  return false;
}
inline std::uint32_t syncs_now(int thread) {
  return static_cast<std::uint32_t>(
      state().warp_syncs[static_cast<std::size_t>(thread / 32)].size());
}

// A block of shared memory: its bytes and one shadow per element. `name` and `dims` are for
// the errors.
class SharedSpace {
 public:
  SharedSpace(const char* name, std::size_t elem_bytes, std::vector<std::size_t> dims)
      : name_(name), elem_(elem_bytes), dims_(std::move(dims)) {}

  // The element count; resets the bytes and shadows when a new block runs.
  void begin(unsigned char* bytes, std::size_t count) {
    const State& s = state();
    if (serial_ == s.block_serial && bytes == bytes_) return;
    serial_ = s.block_serial;
    bytes_ = bytes;
    count_ = count;
    std::memset(bytes_, 0xff, count_ * elem_);
    shadows_.assign(count_, Shadow{});
  }
  std::size_t count() const { return count_; }
  std::size_t elem_bytes() const { return elem_; }
  unsigned char* at(std::size_t i) { return bytes_ + i * elem_; }

  [[noreturn]] void out_of_bounds(std::int64_t i, std::size_t n) const {
    fail_here(where(self()) + ": index " + std::to_string(i) + " is out of bounds of shared `" +
              name_ + "`" + (dims_.size() > 1 ? " (a dimension of " : " (") + std::to_string(n) +
              (dims_.size() > 1 ? ")" : " elements)"));
  }
  void read(std::size_t i) {
    const State& s = state();
    const int me = self().linear;
    Shadow& sh = shadows_[i];
    if (sh.written_block != s.block_serial)
      fail_here(where(self()) + " reads shared " + element(i) +
                ", which no thread of this block has written (shared memory starts undefined "
                "in every block; if another thread writes it later, a __syncthreads is missing)");
    fresh(sh);
    if (sh.write.thread >= 0 && !ordered(sh.write, me))
      race(i, "read-after-write", "reads", thread_name(sh.write.thread), "wrote");
    for (Access& r : sh.reads)
      if (r.thread == me) {
        r.syncs = syncs_now(me);
        return;
      }
    sh.reads.push_back({me, syncs_now(me)});
  }
  void write(std::size_t i) {
    const State& s = state();
    const int me = self().linear;
    Shadow& sh = shadows_[i];
    fresh(sh);
    if (sh.write.thread >= 0 && !ordered(sh.write, me))
      race(i, "write-after-write", "writes", thread_name(sh.write.thread), "wrote");
    for (const Access& r : sh.reads)
      if (!ordered(r, me)) race(i, "write-after-read", "writes", thread_name(r.thread), "read");
    sh.write = {me, syncs_now(me)};
    sh.written_block = s.block_serial;
  }

 private:
  void fresh(Shadow& sh) const {
    const State& s = state();
    if (sh.epoch == s.epoch) return;
    sh.epoch = s.epoch;
    sh.write = {};
    sh.reads.clear();
  }
  std::string element(std::size_t i) const {
    if (dims_.empty()) return "`" + name_ + "`[" + std::to_string(i) + "]";
    std::string idx;
    for (std::size_t d = dims_.size(); d-- > 0;) {
      idx = "[" + std::to_string(i % dims_[d]) + "]" + idx;
      i /= dims_[d];
    }
    return "`" + name_ + "`" + idx;
  }
  [[noreturn]] void race(std::size_t i, const char* kind, const char* verb,
                         const std::string& other, const char* other_verb) const {
    fail_here("shared-memory race (" + std::string(kind) + ") in block " + str(state().block_idx) +
              ": " + thread_name(self().linear) + " " + verb + " " + element(i) + ", which " +
              other + " " + other_verb + " with no __syncthreads (or __syncwarp of both) between");
  }

  std::string name_;
  std::size_t elem_;
  std::vector<std::size_t> dims_;
  std::uint64_t serial_ = ~std::uint64_t{0};
  unsigned char* bytes_ = nullptr;
  std::size_t count_ = 0;
  std::vector<Shadow> shadows_;
};

// One element of shared memory as the kernel uses it: reading converts, assigning writes.
template <class T>
class SharedRef {
 public:
  SharedRef(SharedSpace& space, std::size_t i) : space_(space), i_(i) {}
  operator T() const {  // NOLINT: reads like the element
    space_.read(i_);
    T v;
    std::memcpy(&v, space_.at(i_), sizeof(T));
    return v;
  }
  const SharedRef& operator=(const T& v) const {
    space_.write(i_);
    std::memcpy(space_.at(i_), &v, sizeof(T));
    return *this;
  }
  const SharedRef& operator=(const SharedRef& o) const { return *this = static_cast<T>(o); }
  template <class U>
  const SharedRef& operator+=(const U& v) const {
    return *this = static_cast<T>(static_cast<T>(*this) + v);
  }
  template <class U>
  const SharedRef& operator-=(const U& v) const {
    return *this = static_cast<T>(static_cast<T>(*this) - v);
  }
  template <class U>
  const SharedRef& operator*=(const U& v) const {
    return *this = static_cast<T>(static_cast<T>(*this) * v);
  }
  template <class U>
  const SharedRef& operator/=(const U& v) const {
    return *this = static_cast<T>(static_cast<T>(*this) / v);
  }

 private:
  SharedSpace& space_;
  std::size_t i_;
};

// A view of dims Ns... at element `base` of a shared array: `a[i]` is the next dimension, down
// to a SharedRef.
template <class T, std::size_t N, std::size_t... Ns>
class SharedView {
 public:
  SharedView(SharedSpace& space, std::size_t base) : space_(space), base_(base) {}
  auto operator[](std::int64_t i) const {
    if (i < 0 || static_cast<std::size_t>(i) >= N) space_.out_of_bounds(i, N);
    const std::size_t at = base_ + static_cast<std::size_t>(i) * (Ns * ... * 1);
    if constexpr (sizeof...(Ns) == 0)
      return SharedRef<T>(space_, at);
    else
      return SharedView<T, Ns...>(space_, at);
  }

 private:
  SharedSpace& space_;
  std::size_t base_;
};

// STAG_SHARED(T, name, N, ...): a function-local static (one per kernel, as a __shared__ array
// is per block; blocks run one after another), reset at every block.
template <class T, std::size_t... Ns>
class SharedArray {
  static_assert(std::is_trivially_copyable_v<T>, "stag: shared memory holds plain values");
  static constexpr std::size_t kCount = (Ns * ...);

 public:
  explicit SharedArray(const char* name) : space_(name, sizeof(T), {Ns...}) {}
  auto operator[](std::int64_t i) const {
    space_.begin(bytes_, kCount);
    return SharedView<T, Ns...>(space_, 0)[i];
  }

 private:
  mutable SharedSpace space_;
  alignas(16) mutable unsigned char bytes_[kCount * sizeof(T)];
};

// STAG_DYNAMIC_SHARED(T, name): the launch's dynamic shared memory as T elements.
template <class T>
class DynamicShared {
  static_assert(std::is_trivially_copyable_v<T>, "stag: shared memory holds plain values");

 public:
  explicit DynamicShared(const char* name) : space_(name, sizeof(T), {}) {}
  SharedRef<T> operator[](std::int64_t i) const {
    State& s = state();
    space_.begin(s.dynamic.data(), s.dynamic_bytes / sizeof(T));
    if (i < 0 || static_cast<std::size_t>(i) >= space_.count())
      space_.out_of_bounds(i, space_.count());
    return SharedRef<T>(space_, static_cast<std::size_t>(i));
  }

 private:
  mutable SharedSpace space_;
};

}  // namespace stag::cuda_interpret::emu
