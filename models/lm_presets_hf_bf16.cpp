// The decode-step graphs of the Hugging Face presets with their matmuls' weights stored in bf16
// (bf16_weights, autodiff/autocast.hpp): GeneratorOptions::weights = bf16. Two units (this and
// lm_presets_hf_bf16_b.cpp) so that each stays near half a gigabyte of compile memory (four graphs
// in one took 1.07 GB).
#include <stag/autodiff/autocast.hpp>
#include <stag/models/generate.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::detail {

extern const GraphView kSmolLm135MDecodeBf16;
extern const GraphView kQwen25_05BDecodeBf16;
namespace {
constexpr auto kSmolLm = bf16_weights<lm_decode_graph<kLmSmolLm135M>>();
constexpr auto kQwen25 = bf16_weights<lm_decode_graph<kLmQwen25_05B>>();
}  // namespace
constinit const GraphView kSmolLm135MDecodeBf16 = kSmolLm;
constinit const GraphView kQwen25_05BDecodeBf16 = kQwen25;

}  // namespace stag::detail
