// The umbrella header: graph building, every op, autodiff, and the runtime.
#pragma once

#include <stag/autodiff/autodiff.hpp>
#include <stag/autodiff/optimizer.hpp>
#include <stag/graph/builder.hpp>
#include <stag/graph/dot.hpp>
#include <stag/graph/shape.hpp>
#include <stag/graph/tensor.hpp>
#include <stag/models/models.hpp>
#include <stag/ops/registry.hpp>
#include <stag/runtime/annotate.hpp>
#include <stag/runtime/array.hpp>
#include <stag/runtime/bind.hpp>
#include <stag/runtime/checkpoint.hpp>
#include <stag/runtime/curves.hpp>
#include <stag/runtime/heatmap.hpp>
#include <stag/runtime/metrics.hpp>
#include <stag/runtime/params.hpp>
#include <stag/runtime/reference.hpp>
#include <stag/runtime/render.hpp>
#include <stag/runtime/run_guard.hpp>
#include <stag/runtime/safetensors.hpp>
#include <stag/runtime/sample_inputs.hpp>
#include <stag/runtime/schedule.hpp>
#include <stag/runtime/session.hpp>
