// The op registry's one list: every op of stag, one line each. Adding an op is one line here
// plus a folder ops/<name>/ with its definition (see docs/adding-an-op.md).
#pragma once

#include <cstdint>

#include <stag/graph/node.hpp>

// clang-format off
#define STAG_OP_LIST(X)                                                                         \
  /* sources */      X(input) X(parameter) X(constant) X(positions) X(numel)                     \
  /* binary */       X(add) X(sub) X(mul) X(div)                                                 \
  /* unary */        X(neg) X(exp) X(log) X(sqrt) X(rsqrt) X(pow_scalar) X(abs)                  \
  /* activations */  X(relu) X(gelu) X(gelu_tanh) X(silu) X(sigmoid) X(tanh) X(sin) X(cos) X(unary_backward)   \
  /* linear alg. */  X(matmul)                                                                   \
  /* layout */       X(permute) X(reshape) X(unsqueeze) X(squeeze) X(expand) X(slice) X(concat)  \
  /* layout bwd */   X(slice_backward)                                                           \
  /* layout bwd */   X(concat_backward)                                                          \
  /* reductions */   X(sum) X(mean) X(max) X(argmax)                                             \
  /* softmax */      X(softmax) X(log_softmax) X(softmax_backward) X(log_softmax_backward)       \
  /* logic */        X(lt) X(le) X(eq) X(logical_and) X(logical_or) X(logical_not)               \
  /* select */       X(where) X(masked_fill)                                                     \
  /* masks */        X(causal_mask) X(padding_mask)                                              \
  /* norms */        X(layer_norm) X(layer_norm_backward) X(rms_norm) X(rms_norm_backward)       \
  /* lookup */       X(embedding) X(embedding_backward)                                          \
  /* losses */       X(cross_entropy) X(cross_entropy_backward) X(mse_loss)                      \
  /* position */     X(rope)                                                                     \
  /* kv cache */     X(cache_write)                                                              \
  /* attention */    X(attention) X(attention_backward) X(attention_backward_kv)                 \
  /* misc */         X(dropout) X(cast) X(stop_gradient)                                         \
  /* optimizers */   X(sgd_update) X(adam_update)                                              \
  /* piecewise */    X(elu) X(floor) X(clamp) X(mod) X(minimum) X(maximum)                       \
  /* scans */        X(cumsum)
// clang-format on

namespace stag {

enum class OpId : std::uint16_t {
#define STAG_X(name) name,
  STAG_OP_LIST(STAG_X)
#undef STAG_X
      count
};

inline constexpr int kOpCount = static_cast<int>(OpId::count);

constexpr OpCode code(OpId id) {
  return OpCode{static_cast<std::uint16_t>(id)};
}
constexpr OpId op_id(OpCode c) {
  return static_cast<OpId>(c.value);
}

// `stag::op::softmax` and friends: op codes for graph queries such as g.count(op::softmax).
namespace op {
#define STAG_X(name) inline constexpr OpCode name = code(OpId::name);
STAG_OP_LIST(STAG_X)
#undef STAG_X
}  // namespace op

}  // namespace stag
