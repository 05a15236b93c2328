// The value-level graph: nodes refer to their inputs, shape, attributes and scope by index, so a
// whole model (and its training graph) is a flat constexpr array. Add node metadata here only if
// every op needs it; op-specific data goes in Attrs.
#pragma once

#include <cstdint>
#include <string_view>

#include <stag/graph/dims.hpp>
#include <stag/graph/dtype.hpp>

namespace stag {

// An op's index in the registry (ops/registry.hpp). The graph layer only stores it.
struct OpCode {
  std::uint16_t value = 0;
  friend constexpr bool operator==(OpCode, OpCode) = default;
};

inline constexpr int kMaxInputs = 8;
inline constexpr int kMaxIntAttrs = 8;
inline constexpr int kMaxFloatAttrs = 4;

// Per-op attributes; each op documents what its slots mean (axes, flags, eps, p, ...).
struct Attrs {
  std::int64_t i[kMaxIntAttrs] = {};
  double f[kMaxFloatAttrs] = {};
  // Op-specific static data: the address of a constexpr object of static storage, read by the
  // op's kernels (the fused attention's compiled score_mod / mask_mod, ops/attention/mods.hpp).
  const void* ext = nullptr;
};

enum NodeFlag : std::uint8_t {
  kFlagInput = 1,       // a named graph input, bound by the caller
  kFlagParam = 2,       // a trainable parameter, held in the parameter store
  kFlagBackward = 4,    // created by the autodiff pass
  kFlagOptimizer = 8,   // created by the optimizer pass
  kFlagState = 16,      // optimizer state (moments), held with the parameters
  kFlagNoFuse = 32,     // graph passes leave this node as written (keep_unfused)
  kFlagRecompute = 64,  // a forward node computed again in the backward pass (runtime/remat.hpp)
};

struct Node {
  OpCode op;
  DType dtype = DType::f32;
  std::uint8_t nin = 0;
  std::uint8_t flags = 0;
  std::int32_t in[kMaxInputs] = {-1, -1, -1, -1, -1, -1, -1, -1};
  std::int32_t shape = 0;     // index into the graph's shape table
  std::int32_t attr = -1;     // index into the graph's attribute table, -1 when none
  std::int32_t scope = 0;     // index into the scope table; 0 is the root
  std::int32_t grad_of = -1;  // for backward nodes: the forward node they differentiate
  std::string_view leaf;      // last component of the node's name; points to static storage
};

// One component of a hierarchical name such as `enc.3.attn.w_q`: a word or a layer index.
struct ScopeEntry {
  std::int32_t parent = -1;
  std::string_view word;
  std::int32_t index = -1;  // >= 0: a numeric component (layer number)
};

struct SymEntry {
  SymId id = 0;
  std::string_view name;
};

// A named graph output. Gradients are outputs with `grad_of` set to their parameter (or float
// input); their name is `grad/` followed by that node's name.
struct OutputEntry {
  std::int32_t node = -1;
  std::string_view name;
  std::int32_t grad_of = -1;
};

}  // namespace stag
