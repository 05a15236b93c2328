// The tasks of stag-train, one file each (classify.cpp, lm.cpp, g2p.cpp): each picks its compiled
// preset by --model, trains with stag::Trainer and prints its results as `name: value` lines.
#pragma once

#include "common.hpp"

namespace stag::train_app {

// The whole program: parses the command line, runs the task, prints errors; the exit status
// (77: a data set is not installed; 3: --fail-at-chance and the model learnt nothing).
int train_main(int argc, char** argv);

int run_classify(RunContext& ctx);
int run_lm(RunContext& ctx);
int run_g2p(RunContext& ctx);
int run_seq2seq(RunContext& ctx);

// Preset names and one-line descriptions per task, for --list-models.
std::vector<std::pair<std::string, std::string>> list_presets(Task task);

}  // namespace stag::train_app
