// The CUDA interpret mode itself (ops/cuda_interpret.hpp): block and grid indices, shared
// memory and __syncthreads, warp shuffles and votes with their masks, atomics, and the errors for
// what a GPU punishes, each shown catching a planted bug: a barrier or a warp operation that not
// every thread reaches, shared-memory races (read-after-write, write-after-read,
// write-after-write, __syncwarp's mask), reads of shared memory the block has not written, shared
// indices out of bounds, a shuffle from a lane outside its mask. Built with STAG_CUDA_INTERPRET
// (tests/CMakeLists.txt); ctest cuda_interpret.emulation. The ops' kernels are checked through
// Device::cuda_interpret by the op harness and the [gpu] cases (cuda_interpret.ops,
// cuda_interpret.gpu).
#include <catch2/catch.hpp>

#include <functional>
#include <numeric>
#include <utility>
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
  STAG_SHARED(float, tile, 32, 33);
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

// ---- planted bugs the shared-memory, warp and launch checks must catch -------------------------

// Each thread reads its left neighbour's element: right with the barrier, a race without.
__global__ void shift_left(const int* in, int* out, bool barrier) {
  STAG_SHARED(int, buf, 64);
  const int t = static_cast<int>(threadIdx.x);
  buf[t] = in[t];
  if (barrier) __syncthreads();
  out[t] = t > 0 ? static_cast<int>(buf[t - 1]) : -1;
}

// block_sum without its first barrier: called twice, the second call's write of the per-warp
// partial sums races with the first call's reads of them.
__device__ double sum_missing_barrier(double v) {
  STAG_SHARED(double, part, 32);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = v;
  __syncthreads();
  const int warps = (blockDim.x + 31) >> 5;
  v = lane < warps ? part[lane] : 0.0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__global__ void two_sums(double* out, bool fixed) {
  const double x = threadIdx.x;
  const double a = fixed ? block_sum(x) : sum_missing_barrier(x);
  const double b = fixed ? block_sum(2 * x) : sum_missing_barrier(2 * x);
  out[threadIdx.x] = a + b;
}

// Every thread sets the same flag.
__global__ void all_set_flag(int* out) {
  STAG_SHARED(int, flag, 1);
  flag[0] = 1;
  __syncthreads();
  out[threadIdx.x] = flag[0];
}

// Threads exchange through shared memory, ordered by a __syncwarp of `mask_lo` (lanes 0-15) and
// `mask_hi` (lanes 16-31) where mask_lo is not 0; thread t reads thread (t & ~bits)'s element.
__global__ void warp_exchange(int* out, unsigned mask_lo, unsigned mask_hi, int bits) {
  STAG_SHARED(int, buf, 64);
  const int t = static_cast<int>(threadIdx.x);
  buf[t] = t * 10;
  if (mask_lo != 0) __syncwarp((t & 31) < 16 ? mask_lo : mask_hi);
  out[t] = buf[t & ~bits];
}

// Block 0 fills the buffer; every block reads it (on a GPU the other blocks read garbage).
__global__ void only_block_zero_writes(int* out) {
  STAG_SHARED(int, buf, 32);
  if (blockIdx.x == 0) buf[threadIdx.x] = static_cast<int>(threadIdx.x);
  __syncthreads();
  out[blockIdx.x * 32 + threadIdx.x] = buf[threadIdx.x];
}

__global__ void index_past_end(int* out, int row, int col) {
  STAG_SHARED(int, tile, 4, 8);
  tile[threadIdx.x / 8][threadIdx.x % 8] = 1;
  __syncthreads();
  out[threadIdx.x] = tile[row][col];
}

// The launch's dynamic shared memory, reversed through it.
__global__ void reverse_dynamic(const float* in, float* out, int n) {
  STAG_DYNAMIC_SHARED(float, buf);
  const int t = static_cast<int>(threadIdx.x);
  buf[t] = in[t];
  __syncthreads();
  out[t] = buf[n - 1 - t];
}

__global__ void votes(unsigned* ballot, int* any, int* all, unsigned* half) {
  const int lane = static_cast<int>(threadIdx.x);
  ballot[lane] = __ballot_sync(0xffffffffu, lane % 3 == 0);
  any[lane] = __any_sync(0xffffffffu, lane == 17);
  all[lane] = __all_sync(0xffffffffu, lane < 31) * 10 + __all_sync(0xffffffffu, lane < 32);
  half[lane] = lane < 16 ? __ballot_sync(0x0000ffffu, lane >= 8) : 0u;
}

// A shuffle among the low half-warp with `mask`, reading lane `src` (mod 16 unless `far`).
__global__ void half_warp_shuffle(int* out, unsigned mask, int src) {
  const int lane = static_cast<int>(threadIdx.x);
  int v = lane * 10;
  if (lane < 16) v = __shfl_sync(mask, v, src);
  out[lane] = v;
}

__global__ void add_one(int* p, int n) {
  for (int i = static_cast<int>(threadIdx.x); i < n; i += static_cast<int>(blockDim.x)) p[i] += 1;
}

__global__ void segment_shuffles(int* xor16, int* idx3, int* up2) {
  const int lane = static_cast<int>(threadIdx.x);
  xor16[lane] = __shfl_xor_sync(0xffffffffu, lane, 16, 16);
  idx3[lane] = __shfl_sync(0xffffffffu, lane * 10, 3, 8);
  up2[lane] = __shfl_up_sync(0xffffffffu, lane, 2, 8);
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
      "a warp shuffle with mask 0xffffffff but block (0, 0, 0) thread (16, 0, 0) has returned (on "
      "a GPU this hangs or is undefined)");
  // The emulation is usable again after a failed launch.
  std::vector<double> sums(256);
  STAG_LAUNCH(block_sums, 1, 256, 0, nullptr)(sums.data());
  CHECK(sums[7] == 255.0 * 256 / 2);
  CHECK_THROWS_WITH(STAG_LAUNCH(block_sums, 1, 2048, 0, nullptr)(sums.data()),
                    Catch::Contains("a launch needs 1 to 1024 threads per block"));
}

TEST_CASE("interpret mode: a shared-memory read of another thread's write needs a barrier",
          "[cuda_interpret]") {
  std::vector<int> in(64), out(64);
  std::iota(in.begin(), in.end(), 100);
  STAG_LAUNCH(shift_left, 1, 64, 0, nullptr)(in.data(), out.data(), true);
  for (int t = 1; t < 64; ++t) REQUIRE(out[static_cast<std::size_t>(t)] == 99 + t);
  CHECK_THROWS_WITH(
      STAG_LAUNCH(shift_left, 1, 64, 0, nullptr)(in.data(), out.data(), false),
      "stag: cuda interpret: kernel shift_left: shared-memory race (read-after-write) in block "
      "(0, 0, 0): thread (1, 0, 0) reads `buf`[0], which thread (0, 0, 0) wrote with no "
      "__syncthreads (or __syncwarp of both) between");
}

TEST_CASE(
    "interpret mode: a write over what another thread read needs a barrier (block_sum's "
    "first __syncthreads)",
    "[cuda_interpret]") {
  std::vector<double> out(64);
  STAG_LAUNCH(two_sums, 1, 64, 0, nullptr)(out.data(), true);
  for (double v : out) REQUIRE(v == 3 * 63.0 * 64 / 2);
  CHECK_THROWS_WITH(
      STAG_LAUNCH(two_sums, 1, 64, 0, nullptr)(out.data(), false),
      "stag: cuda interpret: kernel two_sums: shared-memory race (write-after-read) in block "
      "(0, 0, 0): thread (0, 0, 0) writes `part`[0], which thread (32, 0, 0) read with no "
      "__syncthreads (or __syncwarp of both) between");
}

TEST_CASE("interpret mode: two threads writing one shared element race", "[cuda_interpret]") {
  std::vector<int> out(32);
  CHECK_THROWS_WITH(STAG_LAUNCH(all_set_flag, 1, 32, 0, nullptr)(out.data()),
                    "stag: cuda interpret: kernel all_set_flag: shared-memory race "
                    "(write-after-write) in block (0, 0, 0): thread (1, 0, 0) writes `flag`[0], "
                    "which thread (0, 0, 0) wrote with no __syncthreads (or __syncwarp of both) "
                    "between");
}

TEST_CASE("interpret mode: __syncwarp orders the lanes of its mask, and only those",
          "[cuda_interpret]") {
  std::vector<int> out(64);
  // Every lane synchronised: each reads a neighbour's write.
  STAG_LAUNCH(warp_exchange, 1, 64, 0, nullptr)(out.data(), ~0u, ~0u, 1);
  for (int t = 0; t < 64; ++t) REQUIRE(out[static_cast<std::size_t>(t)] == (t & ~1) * 10);
  // Without the __syncwarp, a race.
  CHECK_THROWS_WITH(
      STAG_LAUNCH(warp_exchange, 1, 32, 0, nullptr)(out.data(), 0u, 0u, 1),
      "stag: cuda interpret: kernel warp_exchange: shared-memory race (read-after-write) in block "
      "(0, 0, 0): thread (1, 0, 0) reads `buf`[0], which thread (0, 0, 0) wrote with no "
      "__syncthreads (or __syncwarp of both) between");
  // Two half-warp syncs: a lane reading within its half is ordered, one reading across is not.
  STAG_LAUNCH(warp_exchange, 1, 32, 0, nullptr)(out.data(), 0x0000ffffu, 0xffff0000u, 1);
  CHECK(out[17] == 160);
  CHECK_THROWS_WITH(
      STAG_LAUNCH(warp_exchange, 1, 32, 0, nullptr)(out.data(), 0x0000ffffu, 0xffff0000u, 16),
      Catch::Contains("thread (16, 0, 0) reads `buf`[0], which thread (0, 0, 0) wrote with no "
                      "__syncthreads"));
  // A __syncwarp does not order two warps.
  CHECK_THROWS_WITH(STAG_LAUNCH(warp_exchange, 1, 64, 0, nullptr)(out.data(), ~0u, ~0u, 32),
                    Catch::Contains("thread (32, 0, 0) reads `buf`[0], which thread (0, 0, 0) "
                                    "wrote with no __syncthreads"));
}

TEST_CASE("interpret mode: shared memory starts unwritten in every block, and is bounds-checked",
          "[cuda_interpret]") {
  std::vector<int> out(3 * 32);
  CHECK_THROWS_WITH(STAG_LAUNCH(only_block_zero_writes, 3, 32, 0, nullptr)(out.data()),
                    "stag: cuda interpret: kernel only_block_zero_writes: block (1, 0, 0) thread "
                    "(0, 0, 0) reads shared `buf`[0], which no thread of this block has written "
                    "(shared memory starts undefined in every block; if another thread writes it "
                    "later, a __syncthreads is missing)");
  STAG_LAUNCH(index_past_end, 1, 32, 0, nullptr)(out.data(), 3, 7);
  CHECK(out[0] == 1);
  CHECK_THROWS_WITH(STAG_LAUNCH(index_past_end, 1, 32, 0, nullptr)(out.data(), 0, 8),
                    "stag: cuda interpret: kernel index_past_end: block (0, 0, 0) thread (0, 0, "
                    "0): index 8 is out of bounds of shared `tile` (a dimension of 8)");
  CHECK_THROWS_WITH(STAG_LAUNCH(index_past_end, 1, 32, 0, nullptr)(out.data(), -1, 0),
                    Catch::Contains("index -1 is out of bounds of shared `tile`"));
}

TEST_CASE("interpret mode: dynamic shared memory is the launch's bytes", "[cuda_interpret]") {
  const int n = 96;
  std::vector<float> in(n), out(n);
  std::iota(in.begin(), in.end(), 0.5f);
  STAG_LAUNCH(reverse_dynamic, 1, n, n * sizeof(float), nullptr)(in.data(), out.data(), n);
  for (int t = 0; t < n; ++t) REQUIRE(out[static_cast<std::size_t>(t)] == n - 1 - t + 0.5f);
  CHECK_THROWS_WITH(
      STAG_LAUNCH(reverse_dynamic, 1, n, 64 * sizeof(float), nullptr)(in.data(), out.data(), n),
      "stag: cuda interpret: kernel reverse_dynamic: block (0, 0, 0) thread (64, 0, 0): index 64 "
      "is out of bounds of shared `buf` (64 elements)");
  CHECK_THROWS_WITH(
      STAG_LAUNCH(reverse_dynamic, 1, n, 300 * 1024, nullptr)(in.data(), out.data(), n),
      Catch::Contains("307200 bytes of dynamic shared memory, over the 232448 a block may have"));
}

TEST_CASE("interpret mode: warp votes", "[cuda_interpret]") {
  std::vector<unsigned> ballot(32), half(32);
  std::vector<int> any(32), all(32);
  STAG_LAUNCH(votes, 1, 32, 0, nullptr)(ballot.data(), any.data(), all.data(), half.data());
  unsigned thirds = 0;
  for (int l = 0; l < 32; l += 3) thirds |= 1u << l;
  for (int l = 0; l < 32; ++l) {
    INFO("lane " << l);
    CHECK(ballot[static_cast<std::size_t>(l)] == thirds);
    CHECK(any[static_cast<std::size_t>(l)] == 1);
    CHECK(all[static_cast<std::size_t>(l)] == 1);  // not all lanes < 31; all < 32
    CHECK(half[static_cast<std::size_t>(l)] == (l < 16 ? 0x0000ff00u : 0u));
  }
}

TEST_CASE("interpret mode: shuffles honour their mask and width", "[cuda_interpret]") {
  std::vector<int> out(32);
  STAG_LAUNCH(half_warp_shuffle, 1, 32, 0, nullptr)(out.data(), 0x0000ffffu, 7);
  CHECK(out[0] == 70);
  CHECK(out[15] == 70);
  CHECK(out[16] == 160);
  CHECK_THROWS_WITH(STAG_LAUNCH(half_warp_shuffle, 1, 32, 0, nullptr)(out.data(), 0x0000ffffu, 20),
                    "stag: cuda interpret: kernel half_warp_shuffle: block (0, 0, 0) thread (0, "
                    "0, 0) shuffles from lane 20, which is not in the mask 0x0000ffff (on a GPU "
                    "the value is undefined)");
  CHECK_THROWS_WITH(STAG_LAUNCH(half_warp_shuffle, 1, 32, 0, nullptr)(out.data(), 0x000000ffu, 1),
                    "stag: cuda interpret: kernel half_warp_shuffle: block (0, 0, 0) thread (8, "
                    "0, 0) calls a warp shuffle with mask 0x000000ff, which does not hold its own "
                    "lane 8 (on a GPU this is undefined)");
  CHECK_THROWS_WITH(STAG_LAUNCH(half_warp_shuffle, 1, 32, 0, nullptr)(out.data(), 0xffffffffu, 1),
                    "stag: cuda interpret: kernel half_warp_shuffle: block (0, 0, 0) thread (0, "
                    "0, 0) waits at a warp shuffle with mask 0xffffffff but block (0, 0, 0) "
                    "thread (16, 0, 0) has returned (on a GPU this hangs or is undefined)");
  std::vector<int> xor16(32), idx3(32), up2(32);
  STAG_LAUNCH(segment_shuffles, 1, 32, 0, nullptr)(xor16.data(), idx3.data(), up2.data());
  for (int l = 0; l < 32; ++l) {
    INFO("lane " << l);
    CHECK(xor16[static_cast<std::size_t>(l)] == (l < 16 ? l : l - 16));  // no later segment
    CHECK(idx3[static_cast<std::size_t>(l)] == ((l & ~7) + 3) * 10);
    CHECK(up2[static_cast<std::size_t>(l)] == (l % 8 < 2 ? l : l - 2));
  }
}

TEST_CASE("interpret mode: a capturing stream records its work, and a graph replays it",
          "[cuda_interpret]") {
  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  std::vector<int> v(64, 0), w(64, -1);
  const std::size_t bytes = v.size() * sizeof(int);
  REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
  STAG_LAUNCH(add_one, 1, 32, 0, s)(v.data(), 64);
  REQUIRE(cudaMemcpyAsync(w.data(), v.data(), bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess);
  CHECK(v[5] == 0);  // nothing runs while the stream captures
  CHECK(w[5] == -1);
  cudaGraph_t graph = nullptr;
  REQUIRE(cudaStreamEndCapture(s, &graph) == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
  cudaGraphDestroy(graph);
  for (int replay = 1; replay <= 3; ++replay) {  // each replay reads the memory as it is then
    REQUIRE(cudaGraphLaunch(exec, s) == cudaSuccess);
    CHECK(v[63] == replay);
    CHECK(w[63] == replay);
  }
  cudaGraphExecDestroy(exec);

  // What a capture cannot hold makes it invalid, as on a GPU: nothing of it survives.
  void* p = nullptr;
  const std::vector<std::pair<const char*, std::function<cudaError_t()>>> illegal = {
      {"a synchronisation", [&] { return cudaStreamSynchronize(s); }},
      {"a host-to-device copy",
       [&] { return cudaMemcpyAsync(v.data(), w.data(), bytes, cudaMemcpyHostToDevice, s); }},
      {"an allocation", [&] { return cudaMalloc(&p, 256); }},
  };
  for (const auto& [what, call] : illegal) {
    INFO(what);
    REQUIRE(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    STAG_LAUNCH(add_one, 1, 32, 0, s)(v.data(), 64);
    CHECK(call() == cudaErrorStreamCaptureUnsupported);
    CHECK(cudaMemsetAsync(v.data(), 0, bytes, s) == cudaErrorStreamCaptureInvalidated);
    CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated);
    CHECK(graph == nullptr);
    CHECK(v[63] == 3);  // the launch before it never ran
  }
  CHECK(p == nullptr);
  CHECK(cudaStreamSynchronize(s) == cudaSuccess);  // not capturing: fine again
  cudaStreamDestroy(s);
}

}  // namespace
}  // namespace stag::cuda_interpret
