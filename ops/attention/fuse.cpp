// The score_mod "bias" and mask_mod "keep" of attention chains fused by the compile-time pass
// (ops/attention/fuse.hpp), compiled here once for every scores rank (3, 4) and bias rank
// (1 to the scores' rank), rather than in every translation unit that builds a model.
#include <stag/ops/attention/fuse.hpp>

#include <utility>

namespace stag::attn {
namespace {

// t at the scores' element (b, h, q, kv), t's dims aligned to the scores' trailing dims
// ([B, H, Sq, Sk], or [B, Sq, Sk] for rank-3 scores), its size-1 dims broadcast.
template <int R, int BR, class C, std::size_t... I>
auto read_broadcast(const C& t, std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t kv,
                    std::index_sequence<I...>) {
  const std::int64_t full[4] = {b, R == 4 ? h : q, R == 4 ? q : kv, kv};
  constexpr int skip = R - BR;
  return t((t.dim(static_cast<int>(I)) == 1 ? std::int64_t{0} : full[skip + I])...);
}

// score + bias, or score - bias (ALiBi as the articles write it).
template <int R, int BR, bool Sub>
struct BiasScore {
  template <class S, class C>
  auto operator()(S s, std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t kv,
                  const C& bias) const {
    const auto x = read_broadcast<R, BR>(bias, b, h, q, kv, std::make_index_sequence<BR>{});
    if constexpr (Sub)
      return s - x;
    else
      return s + x;
  }
};

template <int R>
struct KeepMask {
  template <class C>
  bool operator()(std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t kv,
                  const C& keep) const {
    return read_broadcast<R, R>(keep, b, h, q, kv, std::make_index_sequence<R>{});
  }
};

// Float captures are read in the kernel's type whatever their dtype (f32 or f64, the same as
// q's, which the pass checks), so one descriptor serves both.
template <int R, int BR, bool Keep, bool Sub>
constexpr Mods fused() {
  using Bias = CapList<CapSpec<BR, DType::f32>>;
  if constexpr (BR < 1 || BR > R) {
    return Mods{};
  } else if constexpr (Keep) {
    return kMods<"bias", BiasScore<R, BR, Sub>, Bias, "keep", KeepMask<R>,
                 CapList<CapSpec<R, DType::boolean>>>;
  } else {
    return kMods<"bias", BiasScore<R, BR, Sub>, Bias, "", NoMask, CapList<>>;
  }
}

}  // namespace

const Mods kFusedMods[2][5][2][2] = {
    {
        {{fused<3, 0, false, false>(), fused<3, 0, false, true>()},
         {fused<3, 0, true, false>(), fused<3, 0, true, true>()}},
        {{fused<3, 1, false, false>(), fused<3, 1, false, true>()},
         {fused<3, 1, true, false>(), fused<3, 1, true, true>()}},
        {{fused<3, 2, false, false>(), fused<3, 2, false, true>()},
         {fused<3, 2, true, false>(), fused<3, 2, true, true>()}},
        {{fused<3, 3, false, false>(), fused<3, 3, false, true>()},
         {fused<3, 3, true, false>(), fused<3, 3, true, true>()}},
        {{fused<3, 4, false, false>(), fused<3, 4, false, true>()},
         {fused<3, 4, true, false>(), fused<3, 4, true, true>()}},
    },
    {
        {{fused<4, 0, false, false>(), fused<4, 0, false, true>()},
         {fused<4, 0, true, false>(), fused<4, 0, true, true>()}},
        {{fused<4, 1, false, false>(), fused<4, 1, false, true>()},
         {fused<4, 1, true, false>(), fused<4, 1, true, true>()}},
        {{fused<4, 2, false, false>(), fused<4, 2, false, true>()},
         {fused<4, 2, true, false>(), fused<4, 2, true, true>()}},
        {{fused<4, 3, false, false>(), fused<4, 3, false, true>()},
         {fused<4, 3, true, false>(), fused<4, 3, true, true>()}},
        {{fused<4, 4, false, false>(), fused<4, 4, false, true>()},
         {fused<4, 4, true, false>(), fused<4, 4, true, true>()}},
    },
};

}  // namespace stag::attn
