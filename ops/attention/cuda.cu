// CUDA kernels of the fused attention and its gradients: the reference's formulas
// (ops/attention/reference.cpp) row by row, one warp per row, scores recomputed in double where
// they are needed and never stored. Correct, deterministic and simple, not fast: a
// FlashAttention-2 kernel with tiles in shared memory and tensor-core products (issue 35) is to
// replace it. Masks: causal, sliding window, a dense keep mask, cache positions; scores: the
// default or given scale, ALiBi, soft-capping; dropout with the CPU's counter-based masks;
// grouped-query attention without repeating k and v. score_mod / mask_mod are refused at plan
// time (they are host code).
//
// Per row, the lanes split the keys for the max and the sum of the softmax (warp reductions),
// then take the keys 32 at a time: each lane writes one key's weight to shared memory, and
// after a barrier each lane accumulates its own output dims over those 32 keys.
#include <stag/ops/cuda_common.cuh>
#include <stag/ops/random.hpp>

namespace stag::STAG_CUDA_NAMESPACE {
namespace {

constexpr int kLanes = 32;

__device__ inline double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ inline double warp_max(double v) {
  for (int o = 16; o > 0; o >>= 1) v = fmax(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Row r of the [B, Hq, Sq] queries.
struct Row {
  std::int64_t b, h, i, kh;
};
__device__ inline Row row_of(const AttentionArgs& a, std::int64_t r) {
  Row w;
  w.i = r % a.Sq;
  w.h = r / a.Sq % a.Hq;
  w.b = r / (a.Sq * a.Hq);
  w.kh = w.h / (a.Hq / a.Hkv);
  return w;
}

__device__ inline std::int64_t key_offset(const AttentionArgs& a, std::int64_t b) {
  return a.pos != nullptr ? static_cast<std::int64_t>(a.pos[b]) : a.Sk - a.Sq;
}

__device__ inline bool kept(const AttentionArgs& a, const Row& w, std::int64_t j) {
  if (a.pos != nullptr && a.pos[w.b] < 0) return false;  // an inactive row
  const std::int64_t hi = w.i + key_offset(a, w.b);
  if (a.mask_kind != 0 && j > hi) return false;
  if (a.mask_kind == 2 && j <= hi - a.window) return false;
  if (a.keep != nullptr &&
      !a.keep[w.b * a.keep_st[0] + w.h * a.keep_st[1] + w.i * a.keep_st[2] + j * a.keep_st[3]])
    return false;
  return true;
}

// The modified scaled score of (row, key j); `dmod` gets d(modified) / d(scaled).
__device__ inline double score(const AttentionArgs& a, const Row& w, std::int64_t j, double& dmod) {
  const std::int64_t qo = ((w.b * a.Hq + w.h) * a.Sq + w.i) * a.Dk;
  const std::int64_t ko = ((w.b * a.Hkv + w.kh) * a.Sk + j) * a.Dk;
  double s = 0;
  for (std::int64_t x = 0; x < a.Dk; ++x) s += load(a.q, a.qt, qo + x) * load(a.k, a.qt, ko + x);
  s *= a.scale;
  dmod = 1.0;
  if (a.score_kind == 1) {
    const double slope = exp2(-8.0 * static_cast<double>(w.h + 1) / static_cast<double>(a.Hq));
    return s - slope * static_cast<double>(w.i + key_offset(a, w.b) - j);
  }
  if (a.score_kind == 2) {
    const double t = tanh(s / a.softcap);
    dmod = 1.0 - t * t;
    return a.softcap * t;
  }
  return s;
}

__device__ inline double drop_factor(const AttentionArgs& a, const Row& w, std::int64_t j) {
  if (!(a.drop > 0)) return 1.0;
  const auto idx =
      a.index_offset + static_cast<std::uint64_t>(((w.b * a.Hq + w.h) * a.Sq + w.i) * a.Sk + j);
  return random::uniform(a.rng[0], a.rng[1], a.salt, idx) >= a.drop ? 1.0 / (1.0 - a.drop) : 0.0;
}

// The softmax's max and sum over the row's kept keys (every lane gets both; max = -inf for a
// fully masked row).
struct Stats {
  double mx, sum;
};
__device__ inline Stats row_stats(const AttentionArgs& a, const Row& w) {
  const int lane = static_cast<int>(threadIdx.x);
  double mx = -INFINITY;
  for (std::int64_t j = lane; j < a.Sk; j += kLanes)
    if (kept(a, w, j)) {
      double dm;
      mx = fmax(mx, score(a, w, j, dm));
    }
  mx = warp_max(mx);
  double sum = 0;
  if (mx != -INFINITY)
    for (std::int64_t j = lane; j < a.Sk; j += kLanes)
      if (kept(a, w, j)) {
        double dm;
        sum += exp(score(a, w, j, dm) - mx);
      }
  return {mx, warp_sum(sum)};
}

__device__ inline double prob(const AttentionArgs& a, const Row& w, const Stats& st, std::int64_t j,
                              double& dmod) {
  dmod = 1.0;
  if (st.mx == -INFINITY || !(st.sum > 0) || !kept(a, w, j)) return 0.0;
  return exp(score(a, w, j, dmod) - st.mx) / st.sum;
}

// dp_j = (do_i . v_j) z_j, the gradient of the dropped-out probability.
__device__ inline double dprob(const AttentionArgs& a, const Row& w, std::int64_t j) {
  const std::int64_t go = ((w.b * a.Hq + w.h) * a.Sq + w.i) * a.Dv;
  const std::int64_t vo = ((w.b * a.Hkv + w.kh) * a.Sk + j) * a.Dv;
  double s = 0;
  for (std::int64_t x = 0; x < a.Dv; ++x) s += load(a.g, a.gt, go + x) * load(a.v, a.qt, vo + x);
  return s * drop_factor(a, w, j);
}

__global__ void forward_kernel(AttentionArgs a, void* out, Dt ot) {
  STAG_SHARED(double, weight, kLanes);
  const std::int64_t r = blockIdx.x;
  const Row w = row_of(a, r);
  const Stats st = row_stats(a, w);
  const int lane = static_cast<int>(threadIdx.x);
  double acc[kMaxHeadDim];
  for (std::int64_t x = 0; x < a.Dv; ++x) acc[x] = 0;
  for (std::int64_t j0 = 0; j0 < a.Sk; j0 += kLanes) {
    const std::int64_t j = j0 + lane;
    double dm;
    weight[lane] = j < a.Sk ? prob(a, w, st, j, dm) * drop_factor(a, w, j) : 0.0;
    __syncthreads();
    for (std::int64_t x = lane; x < a.Dv; x += kLanes)
      for (int t = 0; t < kLanes && j0 + t < a.Sk; ++t)
        if (weight[t] != 0)
          acc[x] += weight[t] * load(a.v, a.qt, ((w.b * a.Hkv + w.kh) * a.Sk + j0 + t) * a.Dv + x);
    __syncthreads();
  }
  for (std::int64_t x = lane; x < a.Dv; x += kLanes) store(out, ot, r * a.Dv + x, acc[x]);
}

// Per row: max, sum and delta = sum_j p_j dp_j, for the gradients.
__global__ void stats_kernel(AttentionArgs a, double* stats) {
  const std::int64_t r = blockIdx.x;
  const Row w = row_of(a, r);
  const Stats st = row_stats(a, w);
  double delta = 0;
  for (std::int64_t j = threadIdx.x; j < a.Sk; j += kLanes) {
    double dm;
    const double p = prob(a, w, st, j, dm);
    if (p != 0) delta += p * dprob(a, w, j);
  }
  delta = warp_sum(delta);
  if (threadIdx.x == 0) {
    stats[3 * r] = st.mx;
    stats[3 * r + 1] = st.sum;
    stats[3 * r + 2] = delta;
  }
}

__device__ inline Stats saved(const double* stats, std::int64_t r) {
  return {stats[3 * r], stats[3 * r + 1]};
}

// dL / d(scaled score) of (row, key j).
__device__ inline double dscore(const AttentionArgs& a, const Row& w, const double* stats,
                                std::int64_t r, std::int64_t j) {
  double dm;
  const double p = prob(a, w, saved(stats, r), j, dm);
  if (p == 0) return 0.0;
  return p * (dprob(a, w, j) - stats[3 * r + 2]) * a.scale * dm;
}

__global__ void dq_kernel(AttentionArgs a, const double* stats, void* out, Dt ot) {
  STAG_SHARED(double, coef, kLanes);
  const std::int64_t r = blockIdx.x;
  const Row w = row_of(a, r);
  const int lane = static_cast<int>(threadIdx.x);
  double acc[kMaxHeadDim];
  for (std::int64_t x = 0; x < a.Dk; ++x) acc[x] = 0;
  for (std::int64_t j0 = 0; j0 < a.Sk; j0 += kLanes) {
    const std::int64_t j = j0 + lane;
    coef[lane] = j < a.Sk ? dscore(a, w, stats, r, j) : 0.0;
    __syncthreads();
    for (std::int64_t x = lane; x < a.Dk; x += kLanes)
      for (int t = 0; t < kLanes && j0 + t < a.Sk; ++t)
        if (coef[t] != 0)
          acc[x] += coef[t] * load(a.k, a.qt, ((w.b * a.Hkv + w.kh) * a.Sk + j0 + t) * a.Dk + x);
    __syncthreads();
  }
  for (std::int64_t x = lane; x < a.Dk; x += kLanes) store(out, ot, r * a.Dk + x, acc[x]);
}

// Key row (b, kh, j): dk_j = sum over its query rows of ds q_i, dv_j = sum of p z do_i.
__global__ void dkv_kernel(AttentionArgs a, bool dv, const double* stats, void* out, Dt ot) {
  STAG_SHARED(double, coef, kLanes);
  const std::int64_t j = blockIdx.x % a.Sk, kh = blockIdx.x / a.Sk % a.Hkv,
                     b = blockIdx.x / (a.Sk * a.Hkv);
  const std::int64_t group = a.Hq / a.Hkv, rows = group * a.Sq;  // (h in the group, i)
  const int lane = static_cast<int>(threadIdx.x);
  const std::int64_t width = dv ? a.Dv : a.Dk;
  double acc[kMaxHeadDim];
  for (std::int64_t x = 0; x < width; ++x) acc[x] = 0;
  for (std::int64_t t0 = 0; t0 < rows; t0 += kLanes) {
    const std::int64_t t = t0 + lane;
    double c = 0;
    if (t < rows) {
      const Row w{b, kh * group + t / a.Sq, t % a.Sq, kh};
      const std::int64_t r = (w.b * a.Hq + w.h) * a.Sq + w.i;
      if (dv) {
        double dm;
        const double p = prob(a, w, saved(stats, r), j, dm);
        c = p != 0 ? p * drop_factor(a, w, j) : 0.0;
      } else {
        c = dscore(a, w, stats, r, j);
      }
    }
    coef[lane] = c;
    __syncthreads();
    for (std::int64_t x = lane; x < width; x += kLanes)
      for (int u = 0; u < kLanes && t0 + u < rows; ++u) {
        if (coef[u] == 0) continue;
        const std::int64_t h = kh * group + (t0 + u) / a.Sq, i = (t0 + u) % a.Sq;
        const std::int64_t ro = (b * a.Hq + h) * a.Sq + i;
        acc[x] += coef[u] * (dv ? load(a.g, a.gt, ro * a.Dv + x) : load(a.q, a.qt, ro * a.Dk + x));
      }
    __syncthreads();
  }
  const std::int64_t base = ((b * a.Hkv + kh) * a.Sk + j) * width;
  for (std::int64_t x = lane; x < width; x += kLanes) store(out, ot, base + x, acc[x]);
}

// A position outside [-1, Sk - Sq] records its batch row (the host then throws the CPU's error).
__global__ void check_positions(AttentionArgs a, Bad bad) {
  for (std::int64_t b = threadIdx.x; b < a.B; b += blockDim.x)
    if (a.pos[b] < -1 || a.pos[b] > a.Sk - a.Sq) report_bad(bad, b);
}

unsigned rows_of(const AttentionArgs& a) {
  return static_cast<unsigned>(a.B * a.Hq * a.Sq);
}

// Positions are checked first; with a bad one the kernels still run, but on clamped positions
// (the step throws afterwards).
AttentionArgs checked(const Launch& l, const AttentionArgs& a) {
  if (a.pos != nullptr) STAG_LAUNCH(check_positions, 1, kLanes, 0, stream_of(l))(a, bad_of(l));
  return a;
}

}  // namespace

std::size_t attention_workspace(const AttentionArgs& a) {
  return static_cast<std::size_t>(a.B * a.Hq * a.Sq) * 3 * sizeof(double);
}

void attention_forward(const Launch& l, const AttentionArgs& a, const Tensor& out) {
  if (rows_of(a) == 0) return;
  STAG_LAUNCH(forward_kernel, rows_of(a), kLanes, 0, stream_of(l))
  (checked(l, a), out.data, out.dtype);
}

void attention_backward_dq(const Launch& l, const AttentionArgs& a, const Tensor& out,
                           void* workspace) {
  if (rows_of(a) == 0) return;
  auto* stats = static_cast<double*>(workspace);
  STAG_LAUNCH(stats_kernel, rows_of(a), kLanes, 0, stream_of(l))(checked(l, a), stats);
  STAG_LAUNCH(dq_kernel, rows_of(a), kLanes, 0, stream_of(l))(a, stats, out.data, out.dtype);
}

void attention_backward_kv(const Launch& l, const AttentionArgs& a, bool dv, const Tensor& out,
                           void* workspace) {
  if (rows_of(a) == 0 || a.Sk == 0) return;
  auto* stats = static_cast<double*>(workspace);
  STAG_LAUNCH(stats_kernel, rows_of(a), kLanes, 0, stream_of(l))(checked(l, a), stats);
  STAG_LAUNCH(dkv_kernel, static_cast<unsigned>(a.B * a.Hkv * a.Sk), kLanes, 0, stream_of(l))
  (a, dv, stats, out.data, out.dtype);
}

}  // namespace stag::STAG_CUDA_NAMESPACE
