// Reference kernels of the fused attention: plain loops over one query row at a time, in the
// element type (f32 or f64), computing the full row of scores. The backward computes all three
// gradients; attention_backward keeps dq and attention_backward_kv keeps dk or dv.
#include <cmath>
#include <limits>
#include <vector>

#include <stag/ops/attention/attention.hpp>
#include <stag/ops/attention/positions.hpp>
#include <stag/ops/kernel.hpp>
#include <stag/ops/random.hpp>

namespace stag {
namespace {

// The problem's dims and element strides, with a 3-d (one head) problem read as H = 1.
struct Dims : kernel::AttentionDims {
  std::int64_t keep_st[4] = {};  // broadcast strides of the keep mask over [B, Hq, Sq, Sk]
  bool has_keep = false;
  const std::int32_t* pos = nullptr;  // cache positions [B] (attrs i[4]), or null
  const attn::Mods* mods = nullptr;   // score_mod / mask_mod (attrs i[4] == 2), or null
  attn::ModRun run;
  bool f64 = false;
};

Dims dims_of(const KernelArgs& a, int keep_input, attn::Fault* fault) {
  Dims d;
  static_cast<kernel::AttentionDims&>(d) = kernel::attention_dims(a.in[0], a.in[1], a.in[2]);
  d.f64 = a.in[0].dtype == DType::f64;
  if (a.attr().i[4] == 2) {
    d.mods = kernel::mods_of(a.attr());
    d.run = kernel::mod_run(*d.mods, a.in, keep_input, fault);
  } else if (a.attr().i[4] != 0) {
    d.pos = a.in[3].as<const std::int32_t>();
    kernel::check_cache_positions(a.g, a.node, d.pos, d.B, d.Sq, d.Sk);
  } else if (keep_input < static_cast<int>(a.in.size())) {
    d.has_keep = true;
    kernel::keep_strides(a.in[static_cast<std::size_t>(keep_input)], d, d.keep_st);
  }
  return d;
}

// The key position of row b's first query.
std::int64_t key_offset(const Dims& d, std::int64_t b) {
  return d.pos ? static_cast<std::int64_t>(d.pos[b]) : d.Sk - d.Sq;
}

bool kept(const Attrs& at, const Dims& d, const bool* keep, std::int64_t b, std::int64_t h,
          std::int64_t q, std::int64_t k) {
  if (d.pos && d.pos[b] < 0) return false;  // an inactive row
  const std::int64_t hi = q + key_offset(d, b);
  const auto kind = static_cast<AttnMask>(at.i[0]);
  if (kind != AttnMask::none && k > hi) return false;
  if (kind == AttnMask::sliding_window && k <= hi - at.i[1]) return false;
  if (d.has_keep &&
      !keep[b * d.keep_st[0] + h * d.keep_st[1] + q * d.keep_st[2] + k * d.keep_st[3]])
    return false;
  if (d.mods != nullptr && d.mods->mask_f != nullptr &&
      !(d.f64 ? d.mods->mask_d : d.mods->mask_f)(d.run, b, h, q, k))
    return false;
  return true;
}

// score_mod of the scaled score s in the kernel's precision; `ds` gets its derivative, and with
// cap_grad, dy times the partials of the captured tensors it read are added there.
double user_score(const Dims& d, std::int64_t b, std::int64_t h, std::int64_t q, std::int64_t k,
                  double s, double& ds, double dy = 0.0, double* const* cap_grad = nullptr) {
  if (d.f64) return d.mods->score_d(d.run, b, h, q, k, s, &ds, dy, cap_grad);
  float dsf = 1.f;
  const float r = d.mods->score_f(d.run, b, h, q, k, static_cast<float>(s), &dsf, dy, cap_grad);
  ds = dsf;
  return r;
}

double scale_of(const Attrs& at, const Dims& d) {
  return at.i[3] ? 1.0 / std::sqrt(static_cast<double>(d.Dk)) : at.f[0];
}

// The built-in score modification of the scaled score s (attrs i[6]: 1 ALiBi, 2 soft-capping
// with cap f[2]); `ds` gets d(modified) / d(s).
double modify_score(const Attrs& at, const Dims& d, std::int64_t b, std::int64_t h, std::int64_t q,
                    std::int64_t k, double s, double& ds) {
  ds = 1.0;
  if (d.mods != nullptr && d.mods->score_f != nullptr) return user_score(d, b, h, q, k, s, ds);
  if (at.i[6] == 1) {
    const double slope = std::exp2(-8.0 * static_cast<double>(h + 1) / static_cast<double>(d.Hq));
    return s - slope * static_cast<double>(q + key_offset(d, b) - k);
  }
  if (at.i[6] == 2) {
    const double t = std::tanh(s / at.f[2]);
    ds = 1.0 - t * t;
    return at.f[2] * t;
  }
  return s;
}

// For row (b, h, i): the probabilities p[j] (0 where masked; all 0 for a fully masked row) and
// the dropout factors z[j] (1 / (1 - p) where kept, 0 where dropped; 1 without dropout).
template <class T>
void row_probs(const KernelArgs& a, const Dims& d, const bool* keep, std::int64_t b, std::int64_t h,
               std::int64_t i, std::vector<double>& p, std::vector<double>& z,
               std::vector<double>& dmod, std::vector<double>* raw = nullptr) {
  const Attrs& at = a.attr();
  const T* q = a.in[0].as<const T>();
  const T* k = a.in[1].as<const T>();
  const std::int64_t kh = h / (d.Hq / d.Hkv);
  const double scale = scale_of(at, d);
  double mx = -std::numeric_limits<double>::infinity();
  for (std::int64_t j = 0; j < d.Sk; ++j) {
    if (!kept(at, d, keep, b, h, i, j)) {
      p[static_cast<std::size_t>(j)] = -std::numeric_limits<double>::infinity();
      continue;
    }
    double s = 0;
    for (std::int64_t x = 0; x < d.Dk; ++x)
      s += static_cast<double>(q[((b * d.Hq + h) * d.Sq + i) * d.Dk + x]) *
           static_cast<double>(k[((b * d.Hkv + kh) * d.Sk + j) * d.Dk + x]);
    if (raw) (*raw)[static_cast<std::size_t>(j)] = s * scale;
    const double m = modify_score(at, d, b, h, i, j, s * scale, dmod[static_cast<std::size_t>(j)]);
    p[static_cast<std::size_t>(j)] = m;
    mx = std::max(mx, m);
  }
  double sum = 0;
  for (double& e : p) {
    // NOTE: a fully masked row has mx = -inf; exp(-inf - -inf) would be NaN, so it stays 0.
    e = std::isinf(mx) ? 0.0 : std::exp(e - mx);
    sum += e;
  }
  for (double& e : p) e = sum > 0 ? e / sum : 0.0;
  const double drop = a.state.training ? at.f[1] : 0.0;
  for (std::int64_t j = 0; j < d.Sk; ++j) {
    double f = 1.0;
    if (drop > 0) {
      const auto idx = global_index_offset(a.state, d.B * d.Hq * d.Sq * d.Sk) +
                       static_cast<std::uint64_t>(((b * d.Hq + h) * d.Sq + i) * d.Sk + j);
      f = random::uniform(a.state.seed, a.state.step, static_cast<std::uint64_t>(at.i[2]), idx) >=
                  drop
              ? 1.0 / (1.0 - drop)
              : 0.0;
    }
    z[static_cast<std::size_t>(j)] = f;
  }
}

const bool* keep_data(const KernelArgs& a, int keep_input) {
  return a.attr().i[4] == 0 && keep_input < static_cast<int>(a.in.size())
             ? a.in[static_cast<std::size_t>(keep_input)].as<const bool>()
             : nullptr;
}

// All gradients from q, k, v, do (inputs 0, 1, 2 and 4); `which` selects the one written to
// a.out (0: dq, 1: dk, 2: dv, 3 + j: score_mod's captured tensor j).
template <class T>
void backward(const KernelArgs& a0, int which) {
  // attention_backward_kv's inputs start with the dq node: view them without it.
  const bool kv = op_id(a0.n().op) == OpId::attention_backward_kv;
  const KernelArgs a{a0.g, a0.node, kv ? a0.in.subspan(1) : a0.in, a0.out, a0.state};
  attn::Fault fault;
  const Dims d = dims_of(a, 5, &fault);
  const bool* keep = keep_data(a, 5);
  const T* q = a.in[0].as<const T>();
  const T* k = a.in[1].as<const T>();
  const T* v = a.in[2].as<const T>();
  const T* g = a.in[4].as<const T>();
  const double scale = scale_of(a.attr(), d);
  std::vector<double> dq(static_cast<std::size_t>(d.B * d.Hq * d.Sq * d.Dk)),
      dk(static_cast<std::size_t>(d.B * d.Hkv * d.Sk * d.Dk)),
      dv(static_cast<std::size_t>(d.B * d.Hkv * d.Sk * d.Dv));
  std::vector<double> p(static_cast<std::size_t>(d.Sk)), z(p.size()), dp(p.size()), dm(p.size()),
      raw(p.size());
  // Gradients of score_mod's float captured tensors, when this node hands one out.
  std::vector<double> capg[attn::kMaxCaptures];
  double* capg_ptr[attn::kMaxCaptures] = {};
  const bool mod_grads = d.mods != nullptr && d.mods->score_f != nullptr;
  if (mod_grads)
    for (int j = 0; j < d.mods->n_score; ++j)
      if (d.mods->cap_float & (1u << j)) {
        capg[j].assign(static_cast<std::size_t>(a.in[static_cast<std::size_t>(5 + j)].numel()),
                       0.0);
        capg_ptr[j] = capg[j].data();
      }
  for (std::int64_t b = 0; b < d.B; ++b)
    for (std::int64_t h = 0; h < d.Hq; ++h)
      for (std::int64_t i = 0; i < d.Sq; ++i) {
        row_probs<T>(a, d, keep, b, h, i, p, z, dm, &raw);
        const std::int64_t kh = h / (d.Hq / d.Hkv);
        const T* gi = g + ((b * d.Hq + h) * d.Sq + i) * d.Dv;
        double delta = 0;  // sum_j p_j dp_j
        for (std::int64_t j = 0; j < d.Sk; ++j) {
          const auto js = static_cast<std::size_t>(j);
          double s = 0;
          for (std::int64_t x = 0; x < d.Dv; ++x) {
            const std::int64_t vo = ((b * d.Hkv + kh) * d.Sk + j) * d.Dv + x;
            s += static_cast<double>(gi[x]) * static_cast<double>(v[vo]);
            dv[static_cast<std::size_t>(vo)] += p[js] * z[js] * static_cast<double>(gi[x]);
          }
          dp[js] = s * z[js];
          delta += p[js] * dp[js];
        }
        for (std::int64_t j = 0; j < d.Sk; ++j) {
          const auto js = static_cast<std::size_t>(j);
          const double dsm = p[js] * (dp[js] - delta);  // dL / d(modified score)
          if (mod_grads && dsm != 0) {
            double unused = 0;
            user_score(d, b, h, i, j, raw[js], unused, dsm, capg_ptr);
          }
          const double ds = dsm * scale * dm[js];
          if (ds == 0) continue;
          for (std::int64_t x = 0; x < d.Dk; ++x) {
            const std::int64_t qo = ((b * d.Hq + h) * d.Sq + i) * d.Dk + x;
            const std::int64_t ko = ((b * d.Hkv + kh) * d.Sk + j) * d.Dk + x;
            dq[static_cast<std::size_t>(qo)] += ds * static_cast<double>(k[ko]);
            dk[static_cast<std::size_t>(ko)] += ds * static_cast<double>(q[qo]);
          }
        }
      }
  if (d.mods != nullptr) kernel::check_mod_fault(a.g, a.node, *d.mods, fault);
  const std::vector<double>& r =
      which == 0 ? dq : (which == 1 ? dk : (which == 2 ? dv : capg[which - 3]));
  if (r.size() != static_cast<std::size_t>(a.out.numel()))
    throw Error("stag: " + a.g.name(a.node) + ": attention backward: no gradient of input " +
                std::to_string(which));
  T* out = a.out.as<T>();
  for (std::size_t n = 0; n < r.size(); ++n) out[n] = static_cast<T>(r[n]);
}

}  // namespace

void kernel::check_cache_positions(const GraphView& g, int node, const std::int32_t* pos,
                                   std::int64_t batch, std::int64_t sq, std::int64_t sk) {
  for (std::int64_t b = 0; b < batch; ++b)
    if (pos[b] < -1 || pos[b] > sk - sq)
      throw Error("stag: " + g.name(node) + ": sdpa over a cache of " + std::to_string(sk) +
                  " positions with " + std::to_string(sq) +
                  " new queries per row: cache position " + std::to_string(pos[b]) +
                  " of batch row " + std::to_string(b) + " is outside [-1, " +
                  std::to_string(sk - sq) + "] (-1: an inactive row)");
}

attn::ModRun kernel::mod_run(const attn::Mods& m, std::span<const TensorView> in, int first,
                             attn::Fault* fault) {
  attn::ModRun r;
  r.fault = fault;
  for (int j = 0; j < m.n_score + m.n_mask; ++j) {
    const TensorView& t = in[static_cast<std::size_t>(first + j)];
    attn::CapView& c = r.caps[j];
    c.data = t.data;
    c.rank = t.rank;
    for (int d = 0; d < t.rank; ++d) c.dims[d] = t.dims[d], c.strides[d] = t.strides[d];
  }
  return r;
}

void kernel::check_mod_fault(const GraphView& g, int node, const attn::Mods& m,
                             attn::Fault& fault) {
  if (fault.hit.load()) {
    const bool score = fault.cap < m.n_score;
    auto list = [](const std::int64_t* x, int n) {
      std::string s = "[";
      for (int d = 0; d < n; ++d) s += (d ? ", " : "") + std::to_string(x[d]);
      return s + "]";
    };
    const std::string what =
        "stag: " + g.name(node) + ": " + std::string(score ? m.score_name : m.mask_name) +
        " read its captured tensor " + std::to_string(score ? fault.cap : fault.cap - m.n_score) +
        " (shape " + list(fault.dims, fault.rank) + ") at " + list(fault.idx, fault.rank) +
        ", outside its shape";
    fault.reset();
    throw Error(what);
  }
  if (fault.overflow.load()) {
    fault.reset();
    throw Error("stag: " + g.name(node) + ": " + std::string(m.score_name) +
                " reads float captured tensors more than " + std::to_string(attn::kMaxLoads) +
                " times per score; its gradient records at most that many reads");
  }
}

std::pair<std::int64_t, std::int64_t> kernel::cap_grad_slot(const attn::Mods& m,
                                                            std::span<const TensorView> caps,
                                                            int j) {
  std::int64_t off = 0;
  for (int i = 0; i < j; ++i)
    if (m.cap_float & (1u << i)) off += caps[static_cast<std::size_t>(i)].numel();
  return {off, caps[static_cast<std::size_t>(j)].numel()};
}

namespace {
// bf16 q, k and v (stag::autocast) are read as the f32 values they hold: `f` runs on a copy of
// the arguments whose inputs first..first+2 are widened to f32 (the output is f32 already).
template <class F>
void with_f32_qkv(const KernelArgs& a, std::size_t first, F&& f) {
  if (a.in[first].dtype != DType::bf16) return f(a);
  std::vector<TensorView> in(a.in.begin(), a.in.end());
  std::vector<float> wide[3];
  for (std::size_t j = 0; j < 3; ++j) {
    TensorView& t = in[first + j];
    wide[j].resize(static_cast<std::size_t>(t.numel()));
    for (std::int64_t i = 0; i < t.numel(); ++i)
      wide[j][static_cast<std::size_t>(i)] = static_cast<float>(kernel::load(t, i));
    t.dtype = DType::f32;
    t.data = wide[j].data();
  }
  f(KernelArgs{a.g, a.node, in, a.out, a.state});
}

void forward_reference(const KernelArgs& a) {
  attn::Fault fault;
  const Dims d = dims_of(a, 3, &fault);
  const bool* keep = keep_data(a, 3);
  kernel::with_float(a.out.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* v = a.in[2].as<const T>();
    T* o = a.out.as<T>();
    std::vector<double> p(static_cast<std::size_t>(d.Sk)), z(p.size()), dm(p.size()),
        acc(static_cast<std::size_t>(d.Dv));
    for (std::int64_t b = 0; b < d.B; ++b)
      for (std::int64_t h = 0; h < d.Hq; ++h)
        for (std::int64_t i = 0; i < d.Sq; ++i) {
          row_probs<T>(a, d, keep, b, h, i, p, z, dm);
          const std::int64_t kh = h / (d.Hq / d.Hkv);
          std::fill(acc.begin(), acc.end(), 0.0);
          for (std::int64_t j = 0; j < d.Sk; ++j) {
            const double w = p[static_cast<std::size_t>(j)] * z[static_cast<std::size_t>(j)];
            if (w == 0) continue;
            for (std::int64_t x = 0; x < d.Dv; ++x)
              acc[static_cast<std::size_t>(x)] +=
                  w * static_cast<double>(v[((b * d.Hkv + kh) * d.Sk + j) * d.Dv + x]);
          }
          for (std::int64_t x = 0; x < d.Dv; ++x)
            o[((b * d.Hq + h) * d.Sq + i) * d.Dv + x] =
                static_cast<T>(acc[static_cast<std::size_t>(x)]);
        }
  });
  if (d.mods != nullptr) kernel::check_mod_fault(a.g, a.node, *d.mods, fault);
}
}  // namespace

void OpDef<OpId::attention>::reference(const KernelArgs& a) {
  with_f32_qkv(a, 0, [](const KernelArgs& w) { forward_reference(w); });
}

void OpDef<OpId::attention_backward>::reference(const KernelArgs& a) {
  with_f32_qkv(a, 0, [](const KernelArgs& w) {
    kernel::with_float(w.out.dtype, [&](auto zero) { backward<decltype(zero)>(w, 0); });
  });
}

void OpDef<OpId::attention_backward_kv>::reference(const KernelArgs& a) {
  const int which = static_cast<int>(a.attr().i[5]) + 1;
  with_f32_qkv(a, 1, [which](const KernelArgs& w) {  // input 0 is dq
    kernel::with_float(w.out.dtype, [&](auto zero) { backward<decltype(zero)>(w, which); });
  });
}

}  // namespace stag
