// All bundled models and building blocks.
#pragma once

#include <stag/models/attention.hpp>
#include <stag/models/attention_variants.hpp>
#include <stag/models/blocks.hpp>
#include <stag/models/classifier.hpp>
#include <stag/models/layers.hpp>
#include <stag/models/linear_attention.hpp>
#include <stag/models/lm.hpp>
#include <stag/models/transformer.hpp>
