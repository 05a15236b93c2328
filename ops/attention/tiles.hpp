// Which tiles of an attention run the kernels compute (tiled.hpp's f32 kernels and
// tiled_bf16.hpp's bf16 ones): the built-in masks' tile classes, a mask_mod's block mask, the
// fraction of tiles computed, and where a row's queries sit among the keys. Scalar code, no
// vector types. A new built-in mask adds a case to builtin_tile_class() and
// tile_math.hpp's mask_scores().
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <stag/ops/attention/problem.hpp>

namespace stag::attn {

// The key position of row b's first query: pos[b] with cache positions, else Sk - Sq.
inline std::int64_t key_offset(const Problem& p, std::int64_t b) {
  return p.pos ? static_cast<std::int64_t>(p.pos[b]) : p.Sk - p.Sq;
}
inline bool row_inactive(const Problem& p, std::int64_t b) {
  return p.pos && p.pos[b] < 0;
}

// Which tiles of row b a built-in mask keeps: 0 = none of the tile, 1 = part of it, 2 = all.
inline int builtin_tile_class(const Problem& p, std::int64_t b, std::int64_t q0, std::int64_t q1,
                              std::int64_t k0, std::int64_t k1) {
  if (row_inactive(p, b)) return 0;
  const std::int64_t off = key_offset(p, b);
  int c = 2;
  if (p.mask != MaskKind::none) {
    // Row q keeps keys [lo(q), hi(q)] with hi(q) = q + off and, for a window, lo = hi - w + 1.
    const std::int64_t hi_first = q0 + off, hi_last = q1 - 1 + off;
    if (k0 > hi_last) return 0;
    if (k1 - 1 > hi_first) c = 1;
    if (p.mask == MaskKind::sliding_window) {
      const std::int64_t lo_first = hi_first - p.window + 1, lo_last = hi_last - p.window + 1;
      if (k1 - 1 < lo_first) return 0;
      if (k0 < lo_last) c = 1;
    }
  }
  if (p.keep != nullptr) c = std::min(c, 1);
  return c;
}
inline std::int64_t query_tiles(const Problem& p) {
  return (p.Sq + kTile - 1) / kTile;
}
// The class of a tile of (b, h): the built-in mask's, or the block mask's with a mask_mod.
inline int tile_class(const Problem& p, std::int64_t b, std::int64_t h, std::int64_t q0,
                      std::int64_t q1, std::int64_t k0, std::int64_t k1) {
  if (p.blocks == nullptr) return builtin_tile_class(p, b, q0, q1, k0, k1);
  const std::int64_t nk = (p.Sk + kTile - 1) / kTile;
  return p.blocks[((b * p.Hq + h) * query_tiles(p) + q0 / kTile) * nk + k0 / kTile];
}

// The number of entries of a mask_mod's block mask: one per (b, h, query tile, key tile).
inline std::int64_t block_count(const Problem& p) {
  return p.B * p.Hq * query_tiles(p) * ((p.Sk + kTile - 1) / kTile);
}
// The block mask of a mask_mod, into blocks[block_count(p)]: for every (b, h, query tile, key
// tile) that the built-in mask keeps, how many of its elements mask_mod keeps (none: class 0,
// all: the built-in class, else 1). Evaluates mask_mod once per element of those tiles.
inline void compute_blocks(const Problem& p, std::uint8_t* blocks) {
  const std::int64_t nq = query_tiles(p), nk = (p.Sk + kTile - 1) / kTile;
#pragma omp parallel for schedule(dynamic)
  for (std::int64_t it = 0; it < p.B * p.Hq * nq; ++it) {
    const std::int64_t qt = it % nq, bh = it / nq, h = bh % p.Hq, b = bh / p.Hq;
    const std::int64_t q0 = qt * kTile, rows = std::min<std::int64_t>(kTile, p.Sq - q0);
    for (std::int64_t kt = 0; kt < nk; ++kt) {
      const std::int64_t k0 = kt * kTile, cols = std::min<std::int64_t>(kTile, p.Sk - k0);
      int c = builtin_tile_class(p, b, q0, q0 + rows, k0, k0 + cols);
      if (c > 0) {
        const std::int64_t n = p.mods->mask_tile(p.run, b, h, q0, rows, k0, cols, nullptr);
        c = n == 0 ? 0 : (n == rows * cols ? c : 1);
      }
      blocks[it * nk + kt] = static_cast<std::uint8_t>(c);
    }
  }
}
// The fraction of a block mask's tiles that are computed.
inline double block_fraction(const std::uint8_t* blocks, std::int64_t n) {
  std::int64_t kept = 0;
  for (std::int64_t i = 0; i < n; ++i) kept += blocks[i] > 0;
  return n > 0 ? static_cast<double>(kept) / static_cast<double>(n) : 1.0;
}

// ALiBi's slope of head h.
inline float alibi_slope(const Problem& p, std::int64_t h) {
  return static_cast<float>(
      std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(p.Hq)));
}

// The fraction of (query tile, key tile) pairs that the built-in mask lets the kernel compute
// (of batch row 0; -1 with cache positions, which are only known when the step runs).
inline double tile_fraction(const Problem& p) {
  if (p.pos) return -1.0;
  std::int64_t all = 0, kept = 0;
  for (std::int64_t q0 = 0; q0 < p.Sq; q0 += kTile)
    for (std::int64_t k0 = 0; k0 < p.Sk; k0 += kTile) {
      ++all;
      kept += builtin_tile_class(p, 0, q0, std::min(p.Sq, q0 + kTile), k0,
                                 std::min(p.Sk, k0 + kTile)) > 0;
    }
  return all ? static_cast<double>(kept) / static_cast<double>(all) : 1.0;
}

inline std::int64_t key_tiles(const Problem& p) {
  return (p.Sk + kTile - 1) / kTile;
}

}  // namespace stag::attn
