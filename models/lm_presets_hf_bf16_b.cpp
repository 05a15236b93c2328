// The decode-step graphs of the Hugging Face presets with their matmuls' weights stored in bf16
// (bf16_weights, autodiff/autocast.hpp): GeneratorOptions::weights = bf16. Two units (this and
// lm_presets_hf_bf16.cpp) so that each stays near half a gigabyte of compile memory (four graphs in
// one took 1.07 GB).
#include <stag/autodiff/autocast.hpp>
#include <stag/models/generate.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::detail {

extern const GraphView kTinyLlama11BDecodeBf16;
extern const GraphView kGpt2_124MDecodeBf16;
namespace {
constexpr auto kTinyLlama = bf16_weights<lm_decode_graph<kLmTinyLlama11B>>();
constexpr auto kGpt2 = bf16_weights<lm_decode_graph<kLmGpt2_124M>>();
}  // namespace
constinit const GraphView kTinyLlama11BDecodeBf16 = kTinyLlama;
constinit const GraphView kGpt2_124MDecodeBf16 = kGpt2;

}  // namespace stag::detail
