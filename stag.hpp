// The umbrella header: everything documented. The graph layer and models (<stag/core.hpp>), the
// runtime (sessions, arrays, binding, the reference evaluator, gradcheck), training (the trainer,
// LR schedules, checkpoints, safetensors, metrics), data sets, tokenizers and batching, sequence
// metrics, generation and decoding, and pictures. A header added to the library is added here.
#pragma once

#include <stag/core.hpp>
// Runtime.
#include <stag/runtime/array.hpp>
#include <stag/runtime/bind.hpp>
#include <stag/runtime/dist/communicator.hpp>
#include <stag/runtime/dist/gradient_sync.hpp>
#include <stag/runtime/gradcheck.hpp>
#include <stag/runtime/params.hpp>
#include <stag/runtime/reference.hpp>
#include <stag/runtime/sample_inputs.hpp>
#include <stag/runtime/session.hpp>
// Training.
#include <stag/runtime/train/checkpoint.hpp>
#include <stag/runtime/train/lr_schedule.hpp>
#include <stag/runtime/train/metrics.hpp>
#include <stag/runtime/train/run_guard.hpp>
#include <stag/runtime/train/safetensors.hpp>
#include <stag/runtime/train/trainer.hpp>
// Pictures.
#include <stag/runtime/viz/annotate.hpp>
#include <stag/runtime/viz/curves.hpp>
#include <stag/runtime/viz/heatmap.hpp>
#include <stag/runtime/viz/render.hpp>
// Data sets, tokenizers, batching.
#include <stag/models/data/batch.hpp>
#include <stag/models/data/bpe_tokenizer.hpp>
#include <stag/models/data/hf_tokenizer.hpp>
#include <stag/models/data/char_tokenizer.hpp>
#include <stag/models/data/datasets.hpp>
#include <stag/models/data/pairs.hpp>
#include <stag/models/data/split.hpp>
#include <stag/models/data/text.hpp>
// Evaluation, generation and decoding.
#include <stag/models/beam_search.hpp>
#include <stag/models/eval/seq_metrics.hpp>
#include <stag/models/generate.hpp>
#include <stag/models/generator.hpp>
#include <stag/models/lm_presets.hpp>
#include <stag/models/sampling.hpp>
#include <stag/models/seq2seq_decode.hpp>
#include <stag/models/seq2seq_generate.hpp>
#include <stag/models/seq2seq_generator.hpp>
#include <stag/models/translator.hpp>
