// The decode-step graphs of the Hugging Face presets (models/lm_presets.hpp). Each is a few
// hundred nodes per layer; kept apart from lm_presets.cpp so that no translation unit needs
// much more than half a gigabyte to compile.
#include <stag/models/generate.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/ops/kernel.hpp>

namespace stag::detail {

extern const GraphView kSmolLm135MDecode;
extern const GraphView kQwen25_05BDecode;
extern const GraphView kTinyLlama11BDecode;
extern const GraphView kGpt2_124MDecode;
constinit const GraphView kSmolLm135MDecode = lm_decode_graph<kLmSmolLm135M>;
constinit const GraphView kQwen25_05BDecode = lm_decode_graph<kLmQwen25_05B>;
constinit const GraphView kTinyLlama11BDecode = lm_decode_graph<kLmTinyLlama11B>;
constinit const GraphView kGpt2_124MDecode = lm_decode_graph<kLmGpt2_124M>;

}  // namespace stag::detail
