// parameter has no kernel of its own: evaluators read the parameter store.
#include <stag/ops/kernel.hpp>
#include <stag/ops/parameter/parameter.hpp>

namespace stag {

void OpDef<OpId::parameter>::reference(const KernelArgs& a) {
  throw Error("stag: internal error: parameter '" + a.name() +
              "' is read from the store, not computed");
}

}  // namespace stag
