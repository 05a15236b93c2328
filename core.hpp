// The light umbrella header: what a model definition needs and nothing that runs it. Graph
// building (dims, shapes, tensors, the builder, DOT text), every op, autodiff and the optimizers,
// and the bundled layers and models. Include <stag/stag.hpp> for everything (runtime, training,
// data, pictures); this one compiles faster in headers that only declare models.
#pragma once

#include <stag/autodiff/autocast.hpp>
#include <stag/autodiff/autodiff.hpp>
#include <stag/autodiff/optimizer.hpp>
#include <stag/graph/builder.hpp>
#include <stag/graph/dot.hpp>
#include <stag/graph/shape.hpp>
#include <stag/graph/tensor.hpp>
#include <stag/models/models.hpp>
#include <stag/models/presets.hpp>
#include <stag/ops/registry.hpp>
