// stag-train's command line (train_main; main.cpp calls it, and so does a program that adds
// presets first, as the tests' stag_train_hf_fixtures does). Every run-time setting is a flag
// (see --help of each task); model dims are compiled presets.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <optional>

#include <CLI/CLI.hpp>

#include <stag/ops/attention/tiled_bf16.hpp>
#include <stag/ops/cpu_kernel.hpp>
#include <stag/runtime/cpu/omp_policy.hpp>
#include <stag/runtime/dist/communicator.hpp>
#include <stag/runtime/train/run_guard.hpp>

#include "tasks.hpp"

namespace {

// Started by mpirun as one of several ranks (whether or not this build has MPI).
bool launched_as_ranks() {
  const char* n = std::getenv("OMPI_COMM_WORLD_SIZE");
  return n != nullptr && std::atoi(n) > 1;
}

using namespace stag;
using namespace stag::train_app;

int run(int argc, char** argv) {
  // No task named: classify (so that `stag-train --epochs 3` and ./run.sh work).
  std::vector<std::string> args(argv + 1, argv + argc);
  const bool named = !args.empty() && (args[0] == "classify" || args[0] == "lm" ||
                                       args[0] == "g2p" || args[0] == "seq2seq");
  const bool top_help = !args.empty() && (args[0] == "-h" || args[0] == "--help");
  if (!named && !top_help) args.insert(args.begin(), "classify");

  CLI::App app{"stag-train: trains stag's models on real data (tasks: classify, lm, g2p, seq2seq)"};
  app.require_subcommand(1);
  struct Sub {
    Task task;
    RunOptions opt;
    bool list = false;
  };
  std::vector<Sub> subs = {{Task::classify, defaults_for(Task::classify)},
                           {Task::lm, defaults_for(Task::lm)},
                           {Task::g2p, defaults_for(Task::g2p)},
                           {Task::seq2seq, defaults_for(Task::seq2seq)}};
  const char* about[] = {
      "Train the text classifier (prints val_accuracy, test_accuracy, baseline_accuracy)",
      "Train a language model (prints val_bpc, test_bpc, unigram_bpc)",
      "Train a grapheme-to-phoneme Transformer (prints test_per, test_wer)",
      ("Train a Transformer on your own source<TAB>target pairs (prints test_exact_match, "
       "test_cer, test_chrf and the copy-the-source baseline)")};
  std::vector<CLI::App*> cmds;
  for (std::size_t i = 0; i < subs.size(); ++i) {
    CLI::App* c = app.add_subcommand(task_name(subs[i].task), about[i]);
    add_flags(*c, subs[i].opt, &help_for);
    c->add_flag("--list-models", subs[i].list, "List the compiled presets and exit");
    cmds.push_back(c);
  }
  std::vector<const char*> cargs = {argv[0]};
  for (const std::string& a : args) cargs.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(cargs.size()), const_cast<char**>(cargs.data()));
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (std::size_t i = 0; i < subs.size(); ++i) {
    if (!cmds[i]->parsed()) continue;
    Sub& s = subs[i];
    if (s.list) {
      const auto presets = list_presets(s.task);
      int width = 8;
      for (const auto& [name, text] : presets)
        width = std::max(width, static_cast<int>(name.size()));
      for (const auto& [name, text] : presets)
        std::printf("%-*s %s\n", width, name.c_str(), text.c_str());
      return 0;
    }
    validate(s.opt, s.task);
    // --precision auto (lm --init-hf: once the folder's preset is known, lm.cpp); bf16 on the
    // CPU only (the GPU backend's bf16 speed is not measured yet).
    if (s.opt.init_hf.empty())
      s.opt.precision =
          resolve_precision(s.opt.precision, s.opt.device == "cpu" && attn::cpu_has_bf16_dot(),
                            compiles_bf16(s.task, s.opt.model));
    if (const std::string note = omp_wait_policy_note(); !note.empty())
      std::fprintf(stderr, "stag-train: %s\n", note.c_str());
    if (s.opt.precision == "bf16" && !cpu_has_bf16_matmul())
      std::fprintf(stderr,
                   "stag-train: this CPU has no bf16 matmul (oneDNN needs AVX-512 or AMX): bf16 "
                   "matmuls widen their operands to f32 and run at f32 speed, with bf16's "
                   "rounding\n");
    // Data parallelism (mpirun -np N stag-train ...): every rank runs the same job on its part
    // of each batch; rank 0 prints the results and writes the files.
    const Communicator& world = Communicator::world();
    if (world.rank() != 0 && std::getenv("STAG_ALL_RANKS_PRINT") == nullptr)
      if (std::freopen("/dev/null", "w", stdout) == nullptr) return 1;
    if (world.distributed() && world.rank() == 0)
      std::fprintf(stderr, "stag-train: data-parallel, this is %s\n", world.describe().c_str());
    RunContext ctx = make_context(s.task, s.opt);
    // One run per output folder: a second one would overwrite this one's checkpoints (an
    // evaluation only reads, and atomic saves never show it half a file).
    std::optional<RunLock> lock;
    if (!s.opt.eval_only && world.rank() == 0)
      lock.emplace(s.opt.out, RunLockOptions{.force = s.opt.force});
    switch (s.task) {
      case Task::classify:
        return run_classify(ctx);
      case Task::lm:
        return run_lm(ctx);
      case Task::g2p:
        return run_g2p(ctx);
      case Task::seq2seq:
        return run_seq2seq(ctx);
    }
  }
  return 2;
}

}  // namespace

int stag::train_app::train_main(int argc, char** argv) {
  stag::choose_omp_wait_policy(argv);  // may run the program again with OMP_WAIT_POLICY set
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    const char* msg = e.what();
    std::fprintf(stderr, "%s%s\n", std::strncmp(msg, "stag", 4) == 0 ? "" : "stag-train: ", msg);
    // A data set that is not installed (the loaders' hint names tools/data.sh): 77, which ctest
    // reports as skipped rather than failed.
    // --fail-at-chance: 3, so that a script tells "did not learn" from "did not run".
    const int code = std::strstr(msg, "tools/data.sh") != nullptr                    ? 77
                     : dynamic_cast<const stag::train_app::AtChance*>(&e) != nullptr ? 3
                                                                                     : 1;
    // NOTE: one rank of several that fails must not wait in MPI_Finalize for the others (they
    // wait in a collective this rank left): end the process now, and mpirun stops the rest.
    if (dynamic_cast<const stag::CommError*>(&e) != nullptr || launched_as_ranks()) {
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(code);
    }
    return code;
  }
}
