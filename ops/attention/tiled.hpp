// The tiled CPU attention kernel (flash-attention-2 style): queries and keys in 64-row tiles,
// an online softmax in the forward pass, and a backward pass that recomputes the probabilities
// from the saved log-sum-exp. Plain C++ over GCC/clang vector types (tile_math.hpp), so it has
// no dependency on the rest of stag. Which tiles run: tiles.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include <stag/ops/attention/tile_math.hpp>
#include <stag/ops/attention/tiles.hpp>

namespace stag::attn {

namespace detail {

// Per-thread tile buffers.
struct Scratch {
  std::vector<float> qp, kt, kp, vp, vt, s, pt, acc, dop, dq, dmod, raw;
  void ensure(std::int64_t dkp, std::int64_t dvp, std::int64_t dk, std::int64_t dv) {
    const auto t = static_cast<std::size_t>(kTile);
    qp.resize(t * static_cast<std::size_t>(dkp));
    kt.resize(t * static_cast<std::size_t>(dk));
    kp.resize(t * static_cast<std::size_t>(dkp));
    vp.resize(t * static_cast<std::size_t>(dvp));
    vt.resize(t * static_cast<std::size_t>(dv));
    s.resize(t * t);
    pt.resize(t * t);
    dmod.resize(t * t);
    raw.resize(t * t);
    acc.resize(t * static_cast<std::size_t>(dvp));
    dop.resize(t * static_cast<std::size_t>(dvp));
    dq.resize(t * static_cast<std::size_t>(dkp));
  }
};

// The forward pass's tile buffers (grown, never shrunk).
struct ForwardScratch {
  std::vector<float> qp, kt, vp, s, acc;
  void ensure(std::int64_t dkp, std::int64_t dvp, std::int64_t dk) {
    const auto t = static_cast<std::size_t>(kTile);
    const auto grow = [](std::vector<float>& v, std::size_t n) {
      if (v.size() < n) v.resize(n);
    };
    grow(qp, t * static_cast<std::size_t>(dkp));
    grow(kt, t * static_cast<std::size_t>(dk));
    grow(vp, t * static_cast<std::size_t>(dvp));
    grow(s, t * t);
    grow(acc, t * static_cast<std::size_t>(dvp));
  }
};

}  // namespace detail

// Forward: o [B, Hq, Sq, Dv] (contiguous) and, when lse is not null, the log-sum-exp of each
// row's scaled, masked scores [B, Hq, Sq] (-inf for a fully masked row).
// NOTE: a fully masked row has l = 0: its output is 0 (not 0/0) and its lse -inf, which the
// backward pass reads as "no probabilities".
inline void forward(const Problem& p, float* o, float* lse) {
  using namespace detail;
  const std::int64_t dkp = round_up(p.Dk, 16), dvp = round_up(p.Dv, 16);
  const std::int64_t nq = (p.Sq + kTile - 1) / kTile, nk = key_tiles(p);
  const std::int64_t group = p.Hq / p.Hkv;
  const std::int64_t items = p.B * p.Hq * nq;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
#pragma omp parallel
  {
    // The tile buffers of this thread, kept across calls: every buffer read is packed or
    // cleared before its use, so nothing carries over (a decode step calls this per layer, and
    // allocating and zeroing them each time cost more than the tiles of one query row).
    thread_local ForwardScratch w;
    w.ensure(dkp, dvp, p.Dk);
    float m[kTile], l[kTile];
#pragma omp for schedule(dynamic)
    for (std::int64_t it = 0; it < items; ++it) {
      const std::int64_t qt = it % nq, bh = it / nq, h = bh % p.Hq, b = bh / p.Hq;
      const std::int64_t kvh = h / group;
      const std::int64_t q0 = qt * kTile, rows = std::min<std::int64_t>(kTile, p.Sq - q0);
      const std::int64_t rows4 = round_up(rows, 4);
      const float* qb = p.q + b * p.q_st[0] + h * p.q_st[1];
      const float* kb = p.k + b * p.k_st[0] + kvh * p.k_st[1];
      const float* vb = p.v + b * p.v_st[0] + kvh * p.v_st[1];
      pack_rows(qb, p.q_st[2], q0, rows, p.Dk, dkp, w.qp.data(), p.scale);
      std::fill_n(w.acc.begin(), kTile * dvp, 0.f);
      for (int r = 0; r < kTile; ++r) m[r] = ninf, l[r] = 0.f;
      // With a built-in mask no key after the tile's last query's position is kept: the loop
      // stops there (with cache positions, the cost follows pos + Sq rather than Sk).
      const std::int64_t nk_row =
          row_inactive(p, b) ? 0
          : p.mask == MaskKind::none
              ? nk
              : std::clamp<std::int64_t>((q0 + rows - 1 + key_offset(p, b)) / kTile + 1, 0, nk);
      for (std::int64_t kt = 0; kt < nk_row; ++kt) {
        const std::int64_t k0 = kt * kTile, cols = std::min<std::int64_t>(kTile, p.Sk - k0);
        const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
        if (cls == 0) continue;
        pack_cols(kb, p.k_st[2], k0, cols, p.Dk, w.kt.data());
        pack_rows(vb, p.v_st[2], k0, cols, p.Dv, dvp, w.vp.data());
        float* s = w.s.data();
        gemm_nt(w.qp.data(), dkp, w.kt.data(), p.Dk, s, rows4, cols);
        mask_scores(p, cls, b, h, q0, rows, k0, cols, s);
        online_softmax_tile(p, b, h, q0, k0, rows, s, m, l, w.acc.data(), dvp);
        // Keys past `cols` have P = 0 and zero rows of V: they add nothing.
        gemm_nn(s, kTile, w.vp.data(), dvp, cols, w.acc.data(), rows4);
      }
      float* ob = o + ((b * p.Hq + h) * p.Sq + q0) * p.Dv;
      for (std::int64_t r = 0; r < rows; ++r) {
        const float inv = l[r] > 0.f ? 1.f / l[r] : 0.f;
        const float* a = w.acc.data() + r * dvp;
        for (std::int64_t x = 0; x < p.Dv; ++x) ob[r * p.Dv + x] = a[x] * inv;
        if (lse) lse[(b * p.Hq + h) * p.Sq + q0 + r] = l[r] > 0.f ? m[r] + std::log(l[r]) : ninf;
      }
    }
  }
}

// Backward (with the query tile pre-scaled, dk = dS^T (scale q) needs no further scaling):
// dq [B, Hq, Sq, Dk], dk [B, Hkv, Sk, Dk], dv [B, Hkv, Sk, Dv] (contiguous, written,
// not accumulated) from o and do (strides as q's in `o_st`/`do_st`) and the forward's lse.
// When lse is null the row statistics are recomputed first (one more pass of q k^T).
// Parallel over (batch, key/value head): each work item owns its dk and dv rows.
// cap_grads[j] (or null): the gradient of score_mod's captured tensor j, contiguous in its
// shape. Each work item accumulates its own copy, summed in item order afterwards, so the
// result does not depend on the thread count or the schedule.
inline void backward(const Problem& p, const float* o, const std::int64_t* o_st, const float* dout,
                     const std::int64_t* do_st, const float* lse_saved, float* dq, float* dk,
                     float* dv, float* const* cap_grads = nullptr) {
  using namespace detail;
  const std::int64_t dkp = round_up(p.Dk, 16), dvp = round_up(p.Dv, 16);
  const std::int64_t nq = (p.Sq + kTile - 1) / kTile, nk = key_tiles(p);
  const std::int64_t skp = nk * kTile;
  const std::int64_t group = p.Hq / p.Hkv;
  const std::int64_t items = p.B * p.Hkv;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  const bool user_score = p.mods != nullptr && p.mods->score_grad_tile != nullptr;
  std::int64_t cap_n[kMaxCaptures] = {}, cap_off[kMaxCaptures] = {}, cap_total = 0;
  if (user_score && cap_grads != nullptr)
    for (int j = 0; j < p.mods->n_score; ++j)
      if (cap_grads[j] != nullptr) {
        const CapView& c = p.run.caps[j];
        cap_n[j] = 1;
        for (int d = 0; d < c.rank; ++d) cap_n[j] *= c.dims[d];
        cap_off[j] = cap_total;
        cap_total += cap_n[j];
      }
  std::vector<float> cap_acc(static_cast<std::size_t>(items * cap_total));
  // Without wanted capture gradients, the cheaper d/d(score)-only pass.
  const auto grad_tile =
      user_score ? (cap_total > 0 ? p.mods->score_grad_tile : p.mods->score_dtile) : nullptr;
#pragma omp parallel
  {
    Scratch w;
    w.ensure(dkp, dvp, p.Dk, p.Dv);
    std::vector<float> dk_acc(static_cast<std::size_t>(skp * dkp)),
        dv_acc(static_cast<std::size_t>(skp * dvp));
    float lse[kTile], di[kTile];
#pragma omp for schedule(dynamic)
    for (std::int64_t it = 0; it < items; ++it) {
      const std::int64_t kvh = it % p.Hkv, b = it / p.Hkv;
      float* cg[kMaxCaptures] = {};
      for (int j = 0; j < kMaxCaptures; ++j)
        if (cap_n[j] > 0) cg[j] = cap_acc.data() + it * cap_total + cap_off[j];
      std::fill(dk_acc.begin(), dk_acc.end(), 0.f);
      std::fill(dv_acc.begin(), dv_acc.end(), 0.f);
      const float* kb = p.k + b * p.k_st[0] + kvh * p.k_st[1];
      const float* vb = p.v + b * p.v_st[0] + kvh * p.v_st[1];
      for (std::int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
        const float* qb = p.q + b * p.q_st[0] + h * p.q_st[1];
        const float* obh = o + b * o_st[0] + h * o_st[1];
        const float* dob = dout + b * do_st[0] + h * do_st[1];
        for (std::int64_t qt = 0; qt < nq; ++qt) {
          const std::int64_t q0 = qt * kTile, rows = std::min<std::int64_t>(kTile, p.Sq - q0);
          const std::int64_t rows4 = round_up(rows, 4);
          pack_rows(qb, p.q_st[2], q0, rows, p.Dk, dkp, w.qp.data(), p.scale);
          pack_rows(dob, do_st[2], q0, rows, p.Dv, dvp, w.dop.data());
          for (std::int64_t r = 0; r < kTile; ++r) {
            float d = 0.f;
            if (r < rows) {
              const float* orow = obh + (q0 + r) * o_st[2];
              const float* grow = w.dop.data() + r * dvp;
              for (std::int64_t x = 0; x < p.Dv; ++x) d += orow[x] * grow[x];
            }
            di[r] = d;
            lse[r] = ninf;
          }
          if (lse_saved) {
            for (std::int64_t r = 0; r < rows; ++r)
              lse[r] = lse_saved[(b * p.Hq + h) * p.Sq + q0 + r];
          } else {
            float m[kTile], l[kTile];
            for (int r = 0; r < kTile; ++r) m[r] = ninf, l[r] = 0.f;
            for (std::int64_t kt = 0; kt < nk; ++kt) {
              const std::int64_t k0 = kt * kTile, cols = std::min<std::int64_t>(kTile, p.Sk - k0);
              const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
              if (cls == 0) continue;
              pack_cols(kb, p.k_st[2], k0, cols, p.Dk, w.kt.data());
              gemm_nt(w.qp.data(), dkp, w.kt.data(), p.Dk, w.s.data(), rows4, cols);
              mask_scores(p, cls, b, h, q0, rows, k0, cols, w.s.data());
              row_statistics_tile(rows, w.s.data(), m, l);
            }
            for (std::int64_t r = 0; r < rows; ++r)
              lse[r] = l[r] > 0.f ? m[r] + std::log(l[r]) : ninf;
          }
          std::fill(w.dq.begin(), w.dq.end(), 0.f);
          for (std::int64_t kt = 0; kt < nk; ++kt) {
            const std::int64_t k0 = kt * kTile, cols = std::min<std::int64_t>(kTile, p.Sk - k0);
            const int cls = tile_class(p, b, h, q0, q0 + rows, k0, k0 + cols);
            if (cls == 0) continue;
            pack_cols(kb, p.k_st[2], k0, cols, p.Dk, w.kt.data());
            pack_rows(kb, p.k_st[2], k0, cols, p.Dk, dkp, w.kp.data());
            pack_cols(vb, p.v_st[2], k0, cols, p.Dv, w.vt.data());
            float* s = w.s.data();    // scores, then probabilities P
            float* dp = w.pt.data();  // dP, then dS
            gemm_nt(w.qp.data(), dkp, w.kt.data(), p.Dk, s, rows4, cols);
            if (user_score) std::copy(s, s + kTile * kTile, w.raw.data());
            const bool capped = p.score_mod == ScoreMod::softcap;
            mask_scores(p, cls, b, h, q0, rows, k0, cols, s, capped ? w.dmod.data() : nullptr);
            gemm_nt(w.dop.data(), dvp, w.vt.data(), p.Dv, dp, rows4, cols);
            softmax_backward_tile(p, b, h, q0, k0, rows, lse, di, capped ? w.dmod.data() : nullptr,
                                  s, dp);
            // Through score_mod: dS of the raw score, and its captured tensors' gradients.
            if (user_score) grad_tile(p.run, b, h, q0, rows, k0, cols, w.raw.data(), dp, cg);
            // dV += P^T dO, dK += dS^T Q (scaled at the end), dQ += dS K.
            float t[kTile * kTile];
            // Key rows past `cols` (padding: P and dS are 0 there) are neither accumulated into
            // dV and dK (never read) nor summed into dQ (they would add zeros).
            const std::int64_t cols4 = round_up(cols, 4);
            transpose_tile(s, t);
            gemm_nn(t, kTile, w.dop.data(), dvp, rows4, dv_acc.data() + k0 * dvp, cols4);
            transpose_tile(dp, t);
            gemm_nn(t, kTile, w.qp.data(), dkp, rows4, dk_acc.data() + k0 * dkp, cols4);
            gemm_nn(dp, kTile, w.kp.data(), dkp, cols, w.dq.data(), rows4);
          }
          float* dqb = dq + ((b * p.Hq + h) * p.Sq + q0) * p.Dk;
          for (std::int64_t r = 0; r < rows; ++r)
            for (std::int64_t x = 0; x < p.Dk; ++x)
              dqb[r * p.Dk + x] = w.dq[static_cast<std::size_t>(r * dkp + x)] * p.scale;
        }
      }
      float* dkb = dk + (b * p.Hkv + kvh) * p.Sk * p.Dk;
      float* dvb = dv + (b * p.Hkv + kvh) * p.Sk * p.Dv;
      for (std::int64_t r = 0; r < p.Sk; ++r) {
        for (std::int64_t x = 0; x < p.Dk; ++x)
          dkb[r * p.Dk + x] = dk_acc[static_cast<std::size_t>(r * dkp + x)];
        for (std::int64_t x = 0; x < p.Dv; ++x)
          dvb[r * p.Dv + x] = dv_acc[static_cast<std::size_t>(r * dvp + x)];
      }
    }
  }
  for (int j = 0; j < kMaxCaptures; ++j) {
    if (cap_n[j] == 0) continue;
    std::fill(cap_grads[j], cap_grads[j] + cap_n[j], 0.f);
    for (std::int64_t it = 0; it < items; ++it) {
      const float* a = cap_acc.data() + it * cap_total + cap_off[j];
      for (std::int64_t e = 0; e < cap_n[j]; ++e) cap_grads[j][e] += a[e];
    }
  }
}

}  // namespace stag::attn
