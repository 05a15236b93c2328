// The tiled attention kernel with bf16 tile products (ops/attention/cpu_bf16.cpp): the same
// tiles, masks, online softmax and recomputation as tiled.hpp, with every one of the seven
// products taken by AVX512-BF16 dot products (vdpbf16ps) of bf16 operands into f32 sums.
// q, k and v are read as the bf16 they are (Problem::qh, kh, vh); what the products need in
// bf16 besides (the probabilities P, the score gradients dS and the incoming gradient dO) is
// rounded once, to nearest even, as FlashAttention-2 does on a GPU. Scores, the softmax's
// statistics, the output and dq, dk, dv stay f32.
//
// Chosen at run time: the functions are compiled for AVX512-BF16 whatever the build's target
// and are called only where cpu_has_bf16_dot() says the CPU runs them.
#pragma once

#include <cstdint>

#include <stag/ops/attention/problem.hpp>

namespace stag::attn {

// Whether this CPU has AVX512-BF16 (and AVX512F/BW/VL, which the kernels also use).
bool cpu_has_bf16_dot();

// Whether the fused attention takes bf16 q, k and v with bf16 tile products: cpu_has_bf16_dot()
// unless turned off, by the environment (STAG_ATTENTION_BF16_PRODUCTS=0) or by
// set_bf16_products(false). Off, new plans widen q, k and v to f32 and run tiled.hpp's f32
// kernel (for comparisons: the tests, stag-bench-attn, stag-bench's models).
bool bf16_products();
bool set_bf16_products(bool on);  // returns the setting it replaces

// As forward() and backward() in tiled.hpp, reading p.qh, p.kh and p.vh. No user score_mod or
// mask_mod and no cache positions (bf16 inputs with those run the reference kernel).
void forward_bf16(const Problem& p, float* o, float* lse);
void backward_bf16(const Problem& p, const float* o, const std::int64_t* o_st, const float* dout,
                   const std::int64_t* do_st, const float* lse_saved, float* dq, float* dk,
                   float* dv);

}  // namespace stag::attn
