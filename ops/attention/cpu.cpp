// CPU kernels of the fused attention: the tiled kernel of tiled.hpp, parallel over batch x
// heads x query tiles (forward) and batch x key/value heads (backward). The forward saves each
// row's log-sum-exp for the backward (handed over through CpuContext::handoff, 4 bytes a query
// row); the backward computes dq, dk and dv in one pass and attention_backward_kv copies dk or
// dv out. Anything else (f64, a head dim that is not contiguous) runs the reference kernel.
#include <cstdio>
#include <cstring>

#include <stag/ops/attention/attention.hpp>
#include <stag/ops/attention/positions.hpp>
#include <stag/ops/attention/tiled.hpp>
#include <stag/ops/cpu_kernel.hpp>

namespace stag {
namespace {

// Reads (batch, head, seq) strides of a 3-d or 4-d view whose last dim is contiguous.
bool head_strides(const TensorView& v, std::int64_t* st) {
  if (v.dims[v.rank - 1] != 1 && v.strides[v.rank - 1] != 1) return false;
  if (v.rank == 4) {
    st[0] = v.strides[0], st[1] = v.strides[1], st[2] = v.strides[2];
  } else {
    st[0] = v.strides[0], st[1] = 0, st[2] = v.strides[1];
  }
  return true;
}

// The problem of a node whose inputs start with q, k, v; `keep` is the keep mask's input
// index. Returns false when the tiled kernel does not apply.
bool problem_of(const CpuNode& n, int first, int keep, attn::Problem& p) {
  const TensorView &q = n.in[static_cast<std::size_t>(first)],
                   &k = n.in[static_cast<std::size_t>(first + 1)],
                   &v = n.in[static_cast<std::size_t>(first + 2)];
  if (q.dtype != DType::f32) return false;
  const int r = q.rank;
  p.B = q.dims[0];
  p.Hq = r == 4 ? q.dims[1] : 1;
  p.Hkv = r == 4 ? k.dims[1] : 1;
  p.Sq = q.dims[r - 2];
  p.Sk = k.dims[r - 2];
  p.Dk = q.dims[r - 1];
  p.Dv = v.dims[r - 1];
  if (!head_strides(q, p.q_st) || !head_strides(k, p.k_st) || !head_strides(v, p.v_st))
    return false;
  const Attrs& a = n.attr();
  p.mask = static_cast<attn::MaskKind>(a.i[0]);
  p.window = a.i[1];
  p.score_mod = static_cast<attn::ScoreMod>(a.i[6]);
  p.softcap = static_cast<float>(a.f[2]);
  p.scale = a.i[3] ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(p.Dk)))
                   : static_cast<float>(a.f[0]);
  p.q = q.as<const float>();
  p.k = k.as<const float>();
  p.v = v.as<const float>();
  if (a.i[4] != 0) {  // input 3: the cache positions [B] i32, read when the step runs
    p.pos = n.in[3].as<const std::int32_t>();
  } else if (keep < static_cast<int>(n.in.size())) {
    TensorView m = n.in[static_cast<std::size_t>(keep)];
    if (m.rank == 3) {  // [B, Sq, Sk]: insert the head axis
      m.rank = 4;
      m.dims[3] = m.dims[2], m.dims[2] = m.dims[1], m.dims[1] = 1;
      m.strides[3] = m.strides[2], m.strides[2] = m.strides[1], m.strides[1] = 0;
    }
    const std::int64_t sd[4] = {p.B, p.Hq, p.Sq, p.Sk};
    kernel::broadcast_strides(m, 4, sd, p.keep_st);
    p.keep = m.as<const bool>();
  }
  return true;
}

std::string describe_of(const char* what, const attn::Problem& p) {
  static constexpr const char* kMasks[] = {"no mask", "causal", "sliding window"};
  static constexpr const char* kMods[] = {"", ", alibi", ", softcap"};
  char buf[200];
  if (p.pos) {
    std::snprintf(buf, sizeof buf,
                  "own %s (%dx%d tiles, %s at per-row cache positions%s, key tiles past each "
                  "row's position skipped)",
                  what, attn::kTile, attn::kTile, kMasks[static_cast<int>(p.mask)],
                  kMods[static_cast<int>(p.score_mod)]);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "own %s (%dx%d tiles, %s%s%s, %.0f%% of tiles computed)", what,
                attn::kTile, attn::kTile, kMasks[static_cast<int>(p.mask)],
                p.keep ? " + keep mask" : "", kMods[static_cast<int>(p.score_mod)],
                100.0 * attn::tile_fraction(p));
  return buf;
}

// Sets the dropout fields for this step (the state is read when the kernel runs).
void set_dropout(attn::Problem& p, const Attrs& a, const RunState& s) {
  const double drop = a.f[1];
  p.dropout = s.training && drop > 0.0;
  if (!p.dropout) return;
  p.stream = random::stream(s.seed, s.step, static_cast<std::uint64_t>(a.i[2]));
  p.threshold = random::keep_threshold(drop);
  p.drop_scale = static_cast<float>(1.0 / (1.0 - drop));
}

class AttentionKernel final : public OwnKernel {
 public:
  AttentionKernel(const CpuNode& n, const attn::Problem& p, std::shared_ptr<std::vector<float>> lse)
      : OwnKernel(n, &OpDef<OpId::attention>::reference, describe_of("attention", p)),
        p_(p),
        lse_(std::move(lse)) {}
  void run() override {
    if (p_.pos) kernel::check_cache_positions(g_, node_, p_.pos, p_.B, p_.Sq, p_.Sk);
    set_dropout(p_, attr(), state_);
    attn::forward(p_, out_.as<float>(), lse_->data());
  }

 private:
  attn::Problem p_;
  std::shared_ptr<std::vector<float>> lse_;
};

class AttentionBackwardKernel final : public OwnKernel {
 public:
  AttentionBackwardKernel(const CpuNode& n, const attn::Problem& p,
                          std::shared_ptr<std::vector<float>> lse,
                          std::shared_ptr<std::vector<float>> dkv)
      : OwnKernel(n, &OpDef<OpId::attention_backward>::reference,
                  describe_of("attention backward", p)),
        p_(p),
        lse_(std::move(lse)),
        dkv_(std::move(dkv)) {
    head_strides(n.in[3], o_st_);
    head_strides(n.in[4], do_st_);
  }
  void run() override {
    set_dropout(p_, attr(), state_);
    float* dk = dkv_->data();
    float* dv = dk + p_.B * p_.Hkv * p_.Sk * p_.Dk;
    attn::backward(p_, in_[3].as<const float>(), o_st_, in_[4].as<const float>(), do_st_,
                   lse_ ? lse_->data() : nullptr, out_.as<float>(), dk, dv);
  }

 private:
  attn::Problem p_;
  std::shared_ptr<std::vector<float>> lse_, dkv_;
  std::int64_t o_st_[3] = {}, do_st_[3] = {};
};

// Copies dk or dv out of what the backward kernel computed.
class AttentionKvKernel final : public OwnKernel {
 public:
  AttentionKvKernel(const CpuNode& n, std::shared_ptr<std::vector<float>> dkv, std::int64_t offset)
      : OwnKernel(n, &OpDef<OpId::attention_backward_kv>::reference,
                  "own attention backward (dk, dv computed with dq)"),
        dkv_(std::move(dkv)),
        offset_(offset) {}
  void run() override {
    std::memcpy(out_.data, dkv_->data() + offset_,
                static_cast<std::size_t>(out_.numel()) * sizeof(float));
  }

 private:
  std::shared_ptr<std::vector<float>> dkv_;
  std::int64_t offset_;
};

std::pair<const void*, int> key_of(const CpuNode& n, int node) {
  return {&n.g, node};
}

}  // namespace

// NOTE: each factory sets or erases its handoff entry, so that a later kernel of the same
// plan never finds an entry left by another plan (a graph at the same address).
std::unique_ptr<CpuKernel> OpDef<OpId::attention>::cpu(const CpuNode& n) {
  attn::Problem p;
  if (!problem_of(n, 0, 3, p) || !n.out.contiguous()) {
    n.ctx.handoff.erase(key_of(n, n.node));
    return nullptr;
  }
  auto lse = std::make_shared<std::vector<float>>(static_cast<std::size_t>(p.B * p.Hq * p.Sq));
  n.ctx.handoff[key_of(n, n.node)] = lse;
  return std::make_unique<AttentionKernel>(n, p, lse);
}

std::unique_ptr<CpuKernel> OpDef<OpId::attention_backward>::cpu(const CpuNode& n) {
  attn::Problem p;
  std::int64_t st[3];
  if (!problem_of(n, 0, 5, p) || !n.out.contiguous() || !head_strides(n.in[3], st) ||
      !head_strides(n.in[4], st)) {
    n.ctx.handoff.erase(key_of(n, n.node));
    return nullptr;
  }
  // The forward's row statistics when its CPU kernel saved them in this plan (input 3 is the
  // forward node); otherwise the backward recomputes them.
  std::shared_ptr<std::vector<float>> lse;
  const auto it = n.ctx.handoff.find(key_of(n, n.n().in[3]));
  if (it != n.ctx.handoff.end() &&
      it->second->size() == static_cast<std::size_t>(p.B * p.Hq * p.Sq))
    lse = it->second;
  auto dkv = std::make_shared<std::vector<float>>(
      static_cast<std::size_t>(p.B * p.Hkv * p.Sk * (p.Dk + p.Dv)));
  n.ctx.handoff[key_of(n, n.node)] = dkv;
  return std::make_unique<AttentionBackwardKernel>(n, p, lse, dkv);
}

std::unique_ptr<CpuKernel> OpDef<OpId::attention_backward_kv>::cpu(const CpuNode& n) {
  const auto it = n.ctx.handoff.find(key_of(n, n.n().in[0]));
  if (it == n.ctx.handoff.end() || n.out.dtype != DType::f32 || !n.out.contiguous()) return nullptr;
  const TensorView& k = n.in[2];
  const std::int64_t dk_size = k.numel();
  const std::int64_t offset = n.attr().i[5] == 0 ? 0 : dk_size;
  if (offset + n.out.numel() > static_cast<std::int64_t>(it->second->size())) return nullptr;
  return std::make_unique<AttentionKvKernel>(n, it->second, offset);
}

}  // namespace stag
