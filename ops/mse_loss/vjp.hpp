// Gradient of mse_loss from forward ops: d = (pred - target) * (2 g / numel(pred)), then
// dpred = d and dtarget = -d. numel is computed at run time, so symbolic shapes work.
#pragma once

#include <stag/ops/binary/binary.hpp>
#include <stag/ops/mse_loss/mse_loss.hpp>
#include <stag/ops/numel/numel.hpp>
#include <stag/ops/unary/unary.hpp>

namespace stag {

constexpr void OpDef<OpId::mse_loss>::vjp(VjpCtx& c) {
  const Ref pred = c.x(0), target = c.x(1);
  const std::uint32_t all = (1u << pred.rank()) - 1u;
  const Ref scale = c.g() * 2.0 / numel(pred, all, c.g().dtype());
  const Ref d = (pred - target) * scale;
  c.grads[0] = d;
  c.grads[1] = neg(d);
}

}  // namespace stag
