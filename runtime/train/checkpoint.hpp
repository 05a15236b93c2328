// Training checkpoints: every tensor of a parameter store (parameters and optimizer state) plus
// where training stands and the model's config, in one safetensors file written atomically.
// To save more run state, add a field to TrainState and a key in checkpoint.cpp (and bump
// kCheckpointVersion only when old files can no longer be read).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <stag/runtime/train/safetensors.hpp>

namespace stag {

class Session;

// The checkpoint format this build writes and the newest it reads.
inline constexpr int kCheckpointVersion = 1;

// Where a run stands, so that it resumes exactly.
struct TrainState {
  std::int64_t step = 0;          // optimizer steps taken
  std::int64_t epoch = 0;         // the epoch the next step belongs to
  std::uint64_t seed = 0;         // the run's seed (initialisation, dropout, shuffling)
  std::uint64_t rng_counter = 0;  // position in the run's counter-based random stream
  Metadata extra = {};            // anything else: data position, best validation loss, ...
};

// What a checkpoint says besides its tensors.
struct CheckpointInfo {
  TrainState state;
  std::string config_json = {};  // the model config the caller saved ("{}" when none)
  int format_version = 0;
  std::vector<std::string> tensors = {};  // names, sorted
};

struct CheckpointLoadOptions {
  bool allow_missing = false;     // model tensors the checkpoint lacks keep their values
  bool allow_unexpected = false;  // checkpoint tensors the model lacks are ignored
  // Only the tensors (on both sides) whose name it accepts are checked and copied; empty: all.
  std::function<bool(const std::string&)> select = {};
  // A floating tensor with a NaN or an infinity is an error (the run that wrote it diverged)
  // unless this is set (--allow-nonfinite: to inspect such a file).
  bool allow_nonfinite = false;
  // The config of the model loaded into (JSON, as saved): when shapes differ, the error leads
  // with the config values that differ ("d_model 128 in the file, 192 in the model").
  std::string expected_config = {};
};

// What check_finite found in the floating tensors of a store.
struct FiniteReport {
  std::int64_t nonfinite = 0;  // NaN and infinite elements, in all
  std::string first_name;      // the first tensor (by name) that has one...
  std::int64_t first_index = -1;
  double first_value = 0;  // ...and that element
  double max_abs = 0;      // the largest finite |value|
  std::string max_abs_name;
  // "tensor 'w' has 3 non-finite values (the first: nan at element 17)"; "" when none.
  std::string describe() const;
};
// Scans the floating tensors of `store` (those `select` accepts; empty: all).
FiniteReport check_finite(const NamedArrays& store,
                          const std::function<bool(const std::string&)>& select = {});

// Saves every tensor of `store` with `state` and `config_json` (which must parse as JSON).
// Atomic (see save_safetensors): a crash leaves the previous checkpoint at `path` intact.
void save_checkpoint(const std::string& path, const NamedArrays& store, const TrainState& state,
                     std::string_view config_json = "{}");
void save_checkpoint(const std::string& path, const Session& session, const TrainState& state,
                     std::string_view config_json = "{}");

// Reads the header only: the state, the config and the tensor names (to build the model from
// its saved config before loading the values).
CheckpointInfo read_checkpoint_info(const std::string& path);

// Copies the checkpoint's values into the existing arrays of `store` (so pointers held by
// plans stay valid). The tensor sets and every shape must match; all differences are reported
// in one stag::Error naming each tensor with both shapes, and nothing is copied then. Floating
// dtypes convert (an f32 checkpoint loads into an f64 store); other dtypes must match.
CheckpointInfo load_checkpoint(const std::string& path, NamedArrays& store,
                               const CheckpointLoadOptions& opts = {});
// The same into a session's parameters and optimizer state. The session must have created its
// parameters (it does at construction unless a parameter has a symbolic dim no option gives).
CheckpointInfo load_checkpoint(const std::string& path, Session& session,
                               const CheckpointLoadOptions& opts = {});

}  // namespace stag
