// CUDA kernels of embedding (row gathers) and embedding_backward (a deterministic scatter-add:
// (id, position) pairs sorted stably by CUB's radix sort, then each id's gradient rows summed
// in position order, in double). An id outside the table records its position in Launch::bad.
#if !defined(STAG_CUDA_INTERPRET)
#include <cub/device/device_radix_sort.cuh>
#endif

#include <stag/ops/cuda_common.cuh>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

__device__ std::int64_t id_at(const void* ids, bool wide, std::int64_t i) {
  return wide ? static_cast<const std::int64_t*>(ids)[i] : static_cast<const std::int32_t*>(ids)[i];
}

template <class T>
__global__ void gather_kernel(const void* ids, bool wide, std::int64_t n, const T* table,
                              std::int64_t rows, std::int64_t d, T* out, Bad bad) {
  const std::int64_t total = n * d;
  for (std::int64_t j = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; j < total;
       j += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t i = j / d, k = j % d;
    const std::int64_t id = id_at(ids, wide, i);
    if (id < 0 || id >= rows) {
      if (k == 0) report_bad(bad, i);
      out[j] = T(0);
    } else {
      out[j] = table[id * d + k];
    }
  }
}

// Keys: the id (rows, past every valid id, for a bad one); values: the position.
__global__ void pairs_kernel(const void* ids, bool wide, std::int64_t n, std::int64_t rows,
                             std::int64_t* keys, std::int64_t* pos, Bad bad) {
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t id = id_at(ids, wide, i);
    const bool ok = id >= 0 && id < rows;
    if (!ok) report_bad(bad, i);
    keys[i] = ok ? id : rows;
    pos[i] = i;
  }
}

template <class T>
__global__ void zero_kernel(T* out, std::int64_t n) {
  for (std::int64_t j = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; j < n;
       j += std::int64_t{gridDim.x} * blockDim.x)
    out[j] = T(0);
}

// One thread per (sorted index j, column k) where j starts a run of one id.
template <class T>
__global__ void runs_kernel(const std::int64_t* keys, const std::int64_t* pos, std::int64_t n,
                            std::int64_t rows, std::int64_t d, const T* g, T* out) {
  const std::int64_t total = n * d;
  for (std::int64_t t = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; t < total;
       t += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t j = t / d, k = t % d;
    const std::int64_t id = keys[j];
    if (id >= rows || (j > 0 && keys[j - 1] == id)) continue;
    double acc = 0;
    for (std::int64_t e = j; e < n && keys[e] == id; ++e)
      acc += static_cast<double>(g[pos[e] * d + k]);
    out[id * d + k] = static_cast<T>(acc);
  }
}

std::size_t sort_bytes(std::int64_t n) {
  std::size_t bytes = 0;
  cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const std::int64_t*>(nullptr),
                                  static_cast<std::int64_t*>(nullptr),
                                  static_cast<const std::int64_t*>(nullptr),
                                  static_cast<std::int64_t*>(nullptr), static_cast<int>(n));
  return (bytes + 255) / 256 * 256;
}

}  // namespace

void embedding(const Launch& l, const Tensor& ids, const Tensor& table, const Tensor& out) {
  const std::int64_t n = numel(ids), rows = table.dims[0], d = table.dims[1];
  const bool wide = ids.dtype == Dt::i64;
  if (out.dtype == Dt::f64)
    STAG_LAUNCH(gather_kernel<double>, blocks_for(n * d), kThreads, 0, stream_of(l))
  (ids.data, wide, n, static_cast<const double*>(table.data), rows, d,
   static_cast<double*>(out.data), bad_of(l));
  else if (out.dtype == Dt::bf16)  // rows copied bit for bit
      STAG_LAUNCH(gather_kernel<std::uint16_t>, blocks_for(n * d), kThreads, 0, stream_of(l))(
          ids.data, wide, n, static_cast<const std::uint16_t*>(table.data), rows, d,
          static_cast<std::uint16_t*>(out.data), bad_of(l));
  else STAG_LAUNCH(gather_kernel<float>, blocks_for(n * d), kThreads, 0, stream_of(l))(
      ids.data, wide, n, static_cast<const float*>(table.data), rows, d,
      static_cast<float*>(out.data), bad_of(l));
}

std::size_t embedding_backward_workspace(std::int64_t positions) {
  // keys and positions, sorted copies of both, then CUB's temporary storage
  return 4 * static_cast<std::size_t>(positions) * sizeof(std::int64_t) + sort_bytes(positions);
}

template <class T>
static void scatter(const Launch& l, const Tensor& ids, const Tensor& g, const Tensor& out,
                    void* workspace, std::size_t workspace_bytes) {
  const std::int64_t n = numel(ids), rows = out.dims[0], d = out.dims[1];
  cudaStream_t s = stream_of(l);
  STAG_LAUNCH(zero_kernel<T>, blocks_for(rows * d), kThreads, 0, s)
  (static_cast<T*>(out.data), rows * d);
  if (n == 0) return;
  auto* keys = static_cast<std::int64_t*>(workspace);
  std::int64_t* pos = keys + n;
  std::int64_t* skeys = pos + n;
  std::int64_t* spos = skeys + n;
  void* temp = spos + n;
  std::size_t temp_bytes = workspace_bytes - 4 * static_cast<std::size_t>(n) * sizeof(std::int64_t);
  STAG_LAUNCH(pairs_kernel, blocks_for(n), kThreads, 0, s)
  (ids.data, ids.dtype == Dt::i64, n, rows, keys, pos, bad_of(l));
  cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys, skeys, pos, spos, static_cast<int>(n), 0,
                                  64, s);
  STAG_LAUNCH(runs_kernel<T>, blocks_for(n * d), kThreads, 0, s)
  (skeys, spos, n, rows, d, static_cast<const T*>(g.data), static_cast<T*>(out.data));
}

void embedding_backward(const Launch& l, const Tensor& ids, const Tensor& g, const Tensor& out,
                        void* workspace, std::size_t workspace_bytes) {
  if (out.dtype == Dt::f64)
    scatter<double>(l, ids, g, out, workspace, workspace_bytes);
  else
    scatter<float>(l, ids, g, out, workspace, workspace_bytes);
}

}  // namespace stag::STAG_CUDA_NAMESPACE
