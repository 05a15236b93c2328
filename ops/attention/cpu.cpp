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
#include <stag/ops/attention/tiled_bf16.hpp>
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

// bf16 q, k and v (stag::autocast) where the CPU has no AVX512-BF16 (otherwise the kernels of
// tiled_bf16.hpp read them as they are): the tiled kernel is f32 code, so each is widened to f32
// when the kernel runs, keeping its strides, into the running thread's staging buffer
// (thread_staging), and the kernel reads that. The widening is one pass over q, k and v; the
// scores, the softmax and the products are f32 as before, and nothing of q, k or v is rounded
// again.
struct WidenedInputs {
  const std::uint16_t* src[3] = {};
  std::int64_t elems[3] = {};  // the elements each view spans (its strides kept)
  std::size_t floats = 0;
  bool on() const { return src[0] != nullptr; }
  void widen(attn::Problem& p) const {
    if (!on()) return;
    float* dst = thread_staging(floats);
    const float** to[3] = {&p.q, &p.k, &p.v};
    for (int j = 0; j < 3; ++j) {
      widen_bf16(src[j], dst, elems[j]);
      *to[j] = dst;
      dst += staged_floats(elems[j]);
    }
  }
};

// The problem of a node whose inputs start with q, k, v; `keep` is the keep mask's input
// index. Returns false when the tiled kernel does not apply.
bool problem_of(const KernelNode& n, int first, int keep, attn::Problem& p, WidenedInputs& w) {
  const TensorView &q = n.in[static_cast<std::size_t>(first)],
                   &k = n.in[static_cast<std::size_t>(first + 1)],
                   &v = n.in[static_cast<std::size_t>(first + 2)];
  if (q.dtype != DType::f32 && q.dtype != DType::bf16) return false;
  if (q.dtype == DType::bf16) {
    if (n.attr().i[4] != 0) return false;  // a cache or captured tensors: the reference kernel
    const TensorView* qkv[3] = {&q, &k, &v};
    const std::uint16_t** bf16[3] = {&p.qh, &p.kh, &p.vh};
    const bool products = attn::bf16_products();
    for (int j = 0; j < 3; ++j) {
      for (int d = 0; d < qkv[j]->rank; ++d)
        if (qkv[j]->strides[d] < 0) return false;
      if (products) {
        *bf16[j] = qkv[j]->as<const std::uint16_t>();
        continue;
      }
      w.src[j] = qkv[j]->as<const std::uint16_t>();
      w.elems[j] = view_span(*qkv[j]);
      w.floats += staged_floats(w.elems[j]);
    }
  }
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
  if (q.dtype == DType::f32) {
    p.q = q.as<const float>();
    p.k = k.as<const float>();
    p.v = v.as<const float>();
  }
  if (a.i[4] == 2) {  // inputs from `keep` on: the tensors score_mod and mask_mod capture
    p.mods = kernel::mods_of(a);
    p.run = kernel::mod_run(*p.mods, n.in, keep, nullptr);
  } else if (a.i[4] != 0) {  // input 3: the cache positions [B] i32, read when the step runs
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

// ", score_mod alibi, mask_mod document" for a node with user functions.
std::string mods_text(const attn::Problem& p) {
  std::string s;
  if (p.mods == nullptr) return s;
  if (!p.mods->score_name.empty()) s += ", score_mod " + std::string(p.mods->score_name);
  if (!p.mods->mask_name.empty()) s += ", mask_mod " + std::string(p.mods->mask_name);
  return s;
}

// The kernel's name, with what it does to bf16 inputs.
std::string with_inputs(std::string name, const attn::Problem& p, const WidenedInputs& w) {
  if (name.empty() || name.back() != ')') return name;
  if (w.on()) name.insert(name.size() - 1, ", bf16 q k v widened to f32");
  if (p.qh)
    name.insert(name.size() - 1,
                ", bf16 tile products: AVX512-BF16 dot products of bf16 q, k, v, P, dS and dO into "
                "f32");
  return name;
}

std::string describe_of(const char* what, const attn::Problem& p, double block_fraction = -1) {
  static constexpr const char* kMasks[] = {"no mask", "causal", "sliding window"};
  static constexpr const char* kMods[] = {"", ", alibi", ", softcap"};
  char buf[300];
  const std::string mods = mods_text(p);
  if (p.mods != nullptr && p.mods->mask_tile != nullptr) {
    // The block mask is computed when the step runs: report the last step's.
    char frac[64] = "block mask per step, not run yet";
    if (block_fraction >= 0)
      std::snprintf(frac, sizeof frac, "block mask per step: %.0f%% of tiles computed",
                    100.0 * block_fraction);
    std::snprintf(buf, sizeof buf, "own %s (%dx%d tiles, %s%s, %s)", what, attn::kTile, attn::kTile,
                  kMasks[static_cast<int>(p.mask)], mods.c_str(), frac);
    return buf;
  }
  if (p.pos) {
    std::snprintf(buf, sizeof buf,
                  "own %s (%dx%d tiles, %s at per-row cache positions%s, key tiles past each "
                  "row's position skipped)",
                  what, attn::kTile, attn::kTile, kMasks[static_cast<int>(p.mask)],
                  kMods[static_cast<int>(p.score_mod)]);
    return buf;
  }
  std::snprintf(buf, sizeof buf, "own %s (%dx%d tiles, %s%s%s%s, %.0f%% of tiles computed)", what,
                attn::kTile, attn::kTile, kMasks[static_cast<int>(p.mask)],
                p.keep ? " + keep mask" : "", kMods[static_cast<int>(p.score_mod)], mods.c_str(),
                100.0 * attn::tile_fraction(p));
  return buf;
}

// Sets the dropout fields for this step (the state is read when the kernel runs).
void set_dropout(attn::Problem& p, const Attrs& a, const RunState& s) {
  const double drop = a.f[1];
  p.dropout = s.training && drop > 0.0;
  if (!p.dropout) return;
  p.stream = random::stream(s.seed, s.step, static_cast<std::uint64_t>(a.i[2]));
  p.index_offset = global_index_offset(s, p.B * p.Hq * p.Sq * p.Sk);
  p.threshold = random::keep_threshold(drop);
  p.drop_scale = static_cast<float>(1.0 / (1.0 - drop));
}

// The handoff key by which attention_backward_kv says that the plan reads the gradient of
// score_mod's captured tensor j from backward node `node` (dead gradients get no kernel).
std::pair<const void*, int> wanted_key(const GraphView& g, int node, int j) {
  return {&g, -(1 << 24) - node * attn::kMaxCaptures - j};
}

// What the forward and backward kernels share for score_mod / mask_mod: the fault record of
// the captured tensors' reads and the block mask of a mask_mod. The forward kernel computes
// the block mask (each step when the mask reads captured tensors, else once: it depends only
// on the shapes, fixed per plan) and the backward kernel of the same plan reads it; a backward
// kernel without that forward computes its own. The table is bytes in a float vector (the
// type of CpuContext::handoff).
class ModState {
 public:
  using Table = std::shared_ptr<std::vector<float>>;

 protected:
  void bind(attn::Problem& p, Table blocks, bool owner) {
    p.run.fault = &fault_;
    blocks_ = std::move(blocks);
    owner_ = owner;
  }
  void before(attn::Problem& p) {
    if (p.mods == nullptr) return;
    fault_.reset();
    if (p.mods->mask_tile == nullptr || !blocks_) return;
    auto* t = reinterpret_cast<std::uint8_t*>(blocks_->data());
    if (owner_ && (!computed_ || p.mods->n_mask > 0)) {
      p.blocks = nullptr;
      attn::compute_blocks(p, t);
      computed_ = true;
    }
    p.blocks = t;
    ran_ = true;
  }
  void after(const GraphView& g, int node, const attn::Problem& p) {
    if (p.mods != nullptr) kernel::check_mod_fault(g, node, *p.mods, fault_);
  }
  double fraction(const attn::Problem& p) const {
    if (!ran_ || !blocks_) return -1;
    return attn::block_fraction(reinterpret_cast<const std::uint8_t*>(blocks_->data()),
                                attn::block_count(p));
  }
  attn::Fault fault_;
  Table blocks_;
  bool owner_ = true, computed_ = false, ran_ = false;
};

// A block-mask table for a mask_mod problem (null otherwise).
ModState::Table block_table(const attn::Problem& p) {
  if (p.mods == nullptr || p.mods->mask_tile == nullptr) return nullptr;
  return std::make_shared<std::vector<float>>(
      static_cast<std::size_t>((attn::block_count(p) + 3) / 4));
}

class AttentionKernel final : public OwnKernel, ModState {
 public:
  AttentionKernel(const KernelNode& n, const attn::Problem& p, const WidenedInputs& w,
                  std::shared_ptr<std::vector<float>> lse, Table blocks)
      : OwnKernel(n, &OpDef<OpId::attention>::reference,
                  with_inputs(describe_of("attention", p), p, w)),
        p_(p),
        w_(w),
        lse_(std::move(lse)) {
    bind(p_, std::move(blocks), true);
  }
  void run() override {
    if (p_.pos) kernel::check_cache_positions(g_, node_, p_.pos, p_.B, p_.Sq, p_.Sk);
    w_.widen(p_);
    set_dropout(p_, attr(), state_);
    before(p_);
    if (p_.qh)
      attn::forward_bf16(p_, out_.as<float>(), lse_->data());
    else
      attn::forward(p_, out_.as<float>(), lse_->data());
    after(g_, node_, p_);
  }
  std::string describe() const override {
    return p_.mods ? describe_of("attention", p_, fraction(p_)) : OwnKernel::describe();
  }

 private:
  attn::Problem p_;
  WidenedInputs w_;
  std::shared_ptr<std::vector<float>> lse_;
};

class AttentionBackwardKernel final : public OwnKernel, ModState {
 public:
  AttentionBackwardKernel(const KernelNode& n, const attn::Problem& p, const WidenedInputs& w,
                          std::shared_ptr<std::vector<float>> lse,
                          std::shared_ptr<std::vector<float>> dkv, Table blocks, bool owner)
      : OwnKernel(n, &OpDef<OpId::attention_backward>::reference,
                  with_inputs(describe_of("attention backward", p), p, w)),
        p_(p),
        w_(w),
        lse_(std::move(lse)),
        dkv_(std::move(dkv)) {
    head_strides(n.in[3], o_st_);
    head_strides(n.in[4], do_st_);
    bind(p_, std::move(blocks), owner);
    ctx_ = &n.ctx;
  }
  void run() override {
    w_.widen(p_);
    set_dropout(p_, attr(), state_);
    before(p_);
    float* dk = dkv_->data();
    float* dv = dk + p_.B * p_.Hkv * p_.Sk * p_.Dk;
    // The gradients of score_mod's float captures follow dk and dv in the same buffer.
    float* cap_grads[attn::kMaxCaptures] = {};
    if (p_.mods != nullptr) {
      const std::span<const TensorView> caps(in_.data() + 5, in_.size() - 5);
      // Which gradients the plan reads: known once every kernel of the plan exists.
      if (!wanted_known_) {
        for (int j = 0; j < attn::kMaxCaptures; ++j)
          wanted_[j] = ctx_->handoff.count(wanted_key(g_, node_, j)) > 0;
        wanted_known_ = true;
      }
      for (int j = 0; j < p_.mods->n_score; ++j)
        if ((p_.mods->cap_float & (1u << j)) && wanted_[j])
          cap_grads[j] =
              dv + p_.B * p_.Hkv * p_.Sk * p_.Dv + kernel::cap_grad_slot(*p_.mods, caps, j).first;
    }
    if (p_.qh)
      attn::backward_bf16(p_, in_[3].as<const float>(), o_st_, in_[4].as<const float>(), do_st_,
                          lse_ ? lse_->data() : nullptr, out_.as<float>(), dk, dv);
    else
      attn::backward(p_, in_[3].as<const float>(), o_st_, in_[4].as<const float>(), do_st_,
                     lse_ ? lse_->data() : nullptr, out_.as<float>(), dk, dv, cap_grads);
    after(g_, node_, p_);
  }
  std::string describe() const override {
    // Without the forward's saved log-sum-exp (its kernel is not in this plan) the statistics
    // are computed again from q and k: one more pass over the tiles.
    return (p_.mods ? describe_of("attention backward", p_, fraction(p_)) : OwnKernel::describe()) +
           (lse_ ? "" : " (row statistics recomputed)");
  }

 private:
  attn::Problem p_;
  WidenedInputs w_;
  std::shared_ptr<std::vector<float>> lse_, dkv_;
  std::int64_t o_st_[3] = {}, do_st_[3] = {};
  CpuContext* ctx_ = nullptr;
  bool wanted_known_ = false, wanted_[attn::kMaxCaptures] = {};
};

// Copies dk or dv out of what the backward kernel computed.
class AttentionKvKernel final : public OwnKernel {
 public:
  AttentionKvKernel(const KernelNode& n, std::shared_ptr<std::vector<float>> dkv,
                    std::int64_t offset)
      : OwnKernel(n, &OpDef<OpId::attention_backward_kv>::reference,
                  "own attention backward (dk, dv and captured tensors' gradients computed with "
                  "dq)"),
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

std::pair<const void*, int> key_of(const KernelNode& n, int node) {
  return {&n.g, node};
}
// The handoff key of a forward node's block mask.
std::pair<const void*, int> blocks_key(const KernelNode& n, int node) {
  return {&n.g, -2 - node};
}

// A node's handoff buffer of at least `size` floats. Every plan of a session (one per binding)
// shares it, grown to the largest: only one plan runs at a time, and kernels read data() when
// they run. One per plan held a second copy of every attention's dk and dv per sequence length
// outside the arena (docs/runtime.md, "Binding and plans").
std::shared_ptr<std::vector<float>> shared_buffer(const KernelNode& n, int node,
                                                  std::int64_t size) {
  auto& b = n.ctx.handoff[key_of(n, node)];
  if (!b) b = std::make_shared<std::vector<float>>();
  if (b->size() < static_cast<std::size_t>(size)) b->resize(static_cast<std::size_t>(size));
  return b;
}

}  // namespace

// NOTE: each factory sets or erases its handoff entry, so that a later kernel of the same
// plan never finds an entry left by another plan (a graph at the same address).
std::unique_ptr<Kernel> OpDef<OpId::attention>::cpu(const KernelNode& n) {
  attn::Problem p;
  WidenedInputs w;
  if (!problem_of(n, 0, 3, p, w) || !n.out.contiguous()) {
    n.ctx.handoff.erase(key_of(n, n.node));
    n.ctx.handoff.erase(blocks_key(n, n.node));
    return nullptr;
  }
  auto lse = shared_buffer(n, n.node, p.B * p.Hq * p.Sq);
  ModState::Table blocks = block_table(p);
  if (blocks)
    n.ctx.handoff[blocks_key(n, n.node)] = blocks;
  else
    n.ctx.handoff.erase(blocks_key(n, n.node));
  return std::make_unique<AttentionKernel>(n, p, w, lse, blocks);
}

std::unique_ptr<Kernel> OpDef<OpId::attention_backward>::cpu(const KernelNode& n) {
  attn::Problem p;
  WidenedInputs w;
  std::int64_t st[3];
  if (!problem_of(n, 0, 5, p, w) || !n.out.contiguous() || !head_strides(n.in[3], st) ||
      !head_strides(n.in[4], st)) {
    n.ctx.handoff.erase(key_of(n, n.node));
    return nullptr;
  }
  // The forward's row statistics when its CPU kernel saved them in this plan (input 3 is the
  // forward node); otherwise the backward recomputes them.
  std::shared_ptr<std::vector<float>> lse;
  const auto it = n.ctx.handoff.find(key_of(n, n.n().in[3]));
  if (it != n.ctx.handoff.end() &&
      it->second->size() >= static_cast<std::size_t>(p.B * p.Hq * p.Sq))
    lse = it->second;
  std::int64_t cap_size = 0;  // the gradients of score_mod's float captured tensors
  if (p.mods != nullptr) {
    const std::span<const TensorView> caps(n.in.data() + 5, n.in.size() - 5);
    for (int j = 0; j < p.mods->n_score; ++j)
      if (p.mods->cap_float & (1u << j)) cap_size += caps[static_cast<std::size_t>(j)].numel();
  }
  auto dkv = shared_buffer(n, n.node, p.B * p.Hkv * p.Sk * (p.Dk + p.Dv) + cap_size);
  // The forward kernel's block mask when it is in this plan with the same shapes.
  ModState::Table blocks = block_table(p);
  bool owner = true;
  if (blocks) {
    const auto b = n.ctx.handoff.find(blocks_key(n, n.n().in[3]));
    if (b != n.ctx.handoff.end() && b->second->size() == blocks->size()) {
      blocks = b->second;
      owner = false;
    }
  }
  return std::make_unique<AttentionBackwardKernel>(n, p, w, lse, dkv, blocks, owner);
}

std::unique_ptr<Kernel> OpDef<OpId::attention_backward_kv>::cpu(const KernelNode& n) {
  const auto it = n.ctx.handoff.find(key_of(n, n.n().in[0]));
  if (it == n.ctx.handoff.end() || n.out.dtype != DType::f32 || !n.out.contiguous()) return nullptr;
  const TensorView &k = n.in[2], &v = n.in[3];
  const std::int64_t dk_size = k.numel();
  const std::int64_t which = n.attr().i[5];
  std::int64_t offset = which == 0 ? 0 : dk_size;
  if (which >= 2) {  // score_mod's captured tensor which - 2: after dk and dv
    const attn::Mods* m = kernel::mods_of(n.attr());
    if (m == nullptr) return nullptr;
    const std::span<const TensorView> caps(n.in.data() + 6, n.in.size() - 6);
    offset =
        dk_size + v.numel() + kernel::cap_grad_slot(*m, caps, static_cast<int>(which - 2)).first;
    n.ctx.handoff[wanted_key(n.g, n.n().in[0], static_cast<int>(which - 2))] =
        std::make_shared<std::vector<float>>();
  }
  if (offset + n.out.numel() > static_cast<std::int64_t>(it->second->size())) return nullptr;
  return std::make_unique<AttentionKvKernel>(n, it->second, offset);
}

}  // namespace stag
