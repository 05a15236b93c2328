// input has no kernel of its own: evaluators copy the caller's tensor. This one reports misuse.
#include <stag/ops/input/input.hpp>
#include <stag/ops/kernel.hpp>

namespace stag {

void OpDef<OpId::input>::reference(const KernelArgs& a) {
  throw Error("stag: internal error: input '" + a.name() +
              "' is bound by the evaluator, not computed");
}

}  // namespace stag
