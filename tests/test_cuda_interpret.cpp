// The CUDA interpret mode itself (ops/cuda_interpret.hpp): block and grid indices, __shared__
// memory and __syncthreads, warp shuffles, atomics, and the errors for a barrier or a shuffle
// that not every thread reaches. Built with STAG_CUDA_INTERPRET (tests/CMakeLists.txt); ctest
// cuda_interpret.emulation. The ops' kernels are checked through Device::cuda_interpret by the
// op harness and the [gpu] cases (cuda_interpret.ops, cuda_interpret.gpu).
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include <stag/ops/cuda_common.cuh>

namespace stag::cuda_interpret {
namespace {

__global__ void block_sums(double* out) {
  const double total = block_sum(static_cast<double>(threadIdx.x));
  out[blockIdx.x * blockDim.x + threadIdx.x] = total;
}

__global__ void grid_2d(int* out, int width) {
  const unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  out[y * static_cast<unsigned>(width) + x] = static_cast<int>(y * 1000 + x);
}

// A 32x32 tile transposed through shared memory: wrong without the barrier.
__global__ void transpose_tile(const float* in, float* out) {
  __shared__ float tile[32][33];
  tile[threadIdx.y][threadIdx.x] = in[threadIdx.y * 32 + threadIdx.x];
  __syncthreads();
  out[threadIdx.y * 32 + threadIdx.x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void shuffles(int* xor1, int* down2, int* bcast) {
  const int lane = static_cast<int>(threadIdx.x);
  xor1[lane] = __shfl_xor_sync(0xffffffffu, lane, 1);
  down2[lane] = __shfl_down_sync(0xffffffffu, lane * 10, 2);
  bcast[lane] = __shfl_sync(0xffffffffu, lane + 100, 5);
}

__global__ void atomic_min(unsigned long long* word) {
  atomicMin(word, 1000ull - blockIdx.x * blockDim.x - threadIdx.x);
}

__global__ void barrier_in_branch(int* out) {
  if (threadIdx.x < 100) __syncthreads();  // threads 100.. return: a GPU would hang
  out[threadIdx.x] = 1;
}

__global__ void shuffle_in_branch(int* out) {
  int v = static_cast<int>(threadIdx.x);
  if (threadIdx.x % 32 < 16) v = __shfl_xor_sync(0xffffffffu, v, 1);  // half the warp
  out[threadIdx.x] = v;
}

TEST_CASE("interpret mode: block_sum gives every thread the block's total", "[cuda_interpret]") {
  std::vector<double> out(3 * 256, -1);
  STAG_LAUNCH(block_sums, 3, 256, 0, nullptr)(out.data());
  for (double v : out) REQUIRE(v == 255.0 * 256 / 2);
}

TEST_CASE("interpret mode: 2-d grids and blocks number every thread once", "[cuda_interpret]") {
  const int w = 8 * 4, h = 3 * 2;
  std::vector<int> out(static_cast<std::size_t>(w * h), -1);
  STAG_LAUNCH(grid_2d, dim3(4, 3), dim3(8, 2), 0, nullptr)(out.data(), w);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) REQUIRE(out[static_cast<std::size_t>(y * w + x)] == y * 1000 + x);
}

TEST_CASE("interpret mode: __shared__ memory is the block's, and __syncthreads orders it",
          "[cuda_interpret]") {
  std::vector<float> in(32 * 32), out(32 * 32, -1);
  std::iota(in.begin(), in.end(), 0.f);
  STAG_LAUNCH(transpose_tile, 1, dim3(32, 32), 0, nullptr)(in.data(), out.data());
  for (int r = 0; r < 32; ++r)
    for (int c = 0; c < 32; ++c) REQUIRE(out[static_cast<std::size_t>(r * 32 + c)] == c * 32 + r);
}

TEST_CASE("interpret mode: warp shuffles exchange the lanes' values", "[cuda_interpret]") {
  std::vector<int> xor1(32), down2(32), bcast(32);
  STAG_LAUNCH(shuffles, 1, 32, 0, nullptr)(xor1.data(), down2.data(), bcast.data());
  for (int lane = 0; lane < 32; ++lane) {
    INFO("lane " << lane);
    CHECK(xor1[static_cast<std::size_t>(lane)] == (lane ^ 1));
    // A source lane past the warp gives the lane its own value, as on a GPU.
    CHECK(down2[static_cast<std::size_t>(lane)] == (lane + 2 < 32 ? (lane + 2) * 10 : lane * 10));
    CHECK(bcast[static_cast<std::size_t>(lane)] == 105);
  }
}

TEST_CASE("interpret mode: atomics see every thread of every block", "[cuda_interpret]") {
  unsigned long long word = ~0ull;
  STAG_LAUNCH(atomic_min, 4, 128, 0, nullptr)(&word);
  CHECK(word == 1000ull - 511);
}

TEST_CASE("interpret mode: a barrier or a shuffle that not every thread reaches is an error",
          "[cuda_interpret]") {
  std::vector<int> out(256);
  CHECK_THROWS_WITH(
      STAG_LAUNCH(barrier_in_branch, 2, 256, 0, nullptr)(out.data()),
      "stag: cuda interpret: kernel barrier_in_branch: block (0, 0, 0) thread (0, 0, 0) waits at "
      "__syncthreads but block (0, 0, 0) thread (100, 0, 0) has returned (on a GPU this hangs or "
      "is undefined)");
  CHECK_THROWS_WITH(
      STAG_LAUNCH(shuffle_in_branch, 1, 64, 0, nullptr)(out.data()),
      "stag: cuda interpret: kernel shuffle_in_branch: block (0, 0, 0) thread (0, 0, 0) waits at "
      "a warp shuffle but block (0, 0, 0) thread (16, 0, 0) has returned (on a GPU this hangs or "
      "is undefined)");
  // The emulation is usable again after a failed launch.
  std::vector<double> sums(256);
  STAG_LAUNCH(block_sums, 1, 256, 0, nullptr)(sums.data());
  CHECK(sums[7] == 255.0 * 256 / 2);
  CHECK_THROWS_WITH(STAG_LAUNCH(block_sums, 1, 2048, 0, nullptr)(sums.data()),
                    Catch::Contains("a launch needs 1 to 1024 threads per block"));
}

}  // namespace
}  // namespace stag::cuda_interpret
