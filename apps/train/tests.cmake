# stag-train's tests (included by tests/CMakeLists.txt): unit tests of the app's pieces, the
# single-batch overfit test of the default classifier, and smoke runs of each task on real data.
# Each test that may run at the same time as another has its own --out folder: the run lock
# (runtime/train/run_guard) refuses a second run in a folder that is in use.
set(STAG_TRAIN_DIR ${PROJECT_SOURCE_DIR}/apps/train)
add_executable(stag_train_tests ${STAG_TRAIN_DIR}/test_train_app.cpp)
target_link_libraries(stag_train_tests PRIVATE stag_train_app Catch2::Catch2WithMain)
target_include_directories(stag_train_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(stag_train_tests PRIVATE -Wall -Wextra
  $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)  # g++ 12 false positive, see docs/examples/CMakeLists.txt
catch_discover_tests(stag_train_tests PROPERTIES ENVIRONMENT "OMP_WAIT_POLICY=passive" LABELS unit)

# Smoke tests of the program on real data (seconds each); exit code 77 (skipped) when the
# data sets are not installed (tools/data.sh).
set(smoke ${CMAKE_BINARY_DIR}/smoke)
set(quick --threads 2 --progress plain --seed 3)
add_test(NAME stag_train.classify COMMAND stag-train ${quick} --limit 300 --epochs 2 --model small --out ${smoke}/classify)
add_test(NAME stag_train.classify_resume COMMAND stag-train classify ${quick} --limit 300 --epochs 3 --model small
         --out ${smoke}/classify --resume ${smoke}/classify/model.safetensors)
add_test(NAME stag_train.classify_eval_only COMMAND stag-train classify ${quick} --model small --eval-only
         --out ${smoke}/classify)
# --export-bf16: the final weights as bf16, then evaluated from that file alone.
add_test(NAME stag_train.export_bf16 COMMAND stag-train classify ${quick} --limit 300 --epochs 1 --model small
         --out ${smoke}/export_bf16 --export-bf16 ${smoke}/export_bf16/weights.bf16.safetensors)
add_test(NAME stag_train.eval_bf16 COMMAND stag-train classify ${quick} --limit 300 --model small --eval-only
         --resume ${smoke}/export_bf16/weights.bf16.safetensors --out ${smoke}/export_bf16)
set_tests_properties(stag_train.eval_bf16 PROPERTIES DEPENDS stag_train.export_bf16)
set_tests_properties(stag_train.export_bf16 PROPERTIES PASS_REGULAR_EXPRESSION "val_accuracy: .*export_bf16: .*weights.bf16.safetensors")
set_tests_properties(stag_train.eval_bf16 PROPERTIES PASS_REGULAR_EXPRESSION "val_accuracy: .*checkpoint: .*weights.bf16.safetensors")
set_tests_properties(stag_train.export_bf16 stag_train.eval_bf16 PROPERTIES
  LABELS unit ENVIRONMENT "OMP_WAIT_POLICY=passive" SKIP_RETURN_CODE 77)
set_tests_properties(stag_train.classify_resume PROPERTIES DEPENDS stag_train.classify)
set_tests_properties(stag_train.classify_eval_only PROPERTIES DEPENDS stag_train.classify_resume)
set_tests_properties(stag_train.classify stag_train.classify_resume stag_train.classify_eval_only PROPERTIES
  PASS_REGULAR_EXPRESSION "val_accuracy: .*test_accuracy: .*baseline_accuracy: ")
add_test(NAME stag_train.lm COMMAND stag-train lm ${quick} --limit 300 --max-steps 6 --batch-size 4 --max-len 32
         --eval-limit 16 --eval-every 3 --accumulation 2 --test-limit 64 --out ${smoke}/lm)
set_tests_properties(stag_train.lm PROPERTIES PASS_REGULAR_EXPRESSION "val_bpc: .*unigram_bpc: ")
# --memory-budget-mib: the LM's step needs 8.3 MiB; within 7.5 it recomputes (runtime/remat.hpp;
# that the values stay bitwise the same is tested in runtime/test_remat.cpp), and 1 MiB is
# refused with the smallest arena found.
add_test(NAME stag_train.lm_memory_budget COMMAND stag-train lm ${quick} --limit 300 --max-steps 4 --batch-size 4
         --max-len 32 --eval-limit 16 --test-limit 64 --memory-budget-mib 7.5 --out ${smoke}/lm_budget)
set_tests_properties(stag_train.lm_memory_budget PROPERTIES
  PASS_REGULAR_EXPRESSION "train_arena_mib: [0-9.]+\nnatural_arena_mib: 8\\.[0-9]+\nrecomputed_values: [1-9]")
add_test(NAME stag_train.lm_memory_budget_too_small COMMAND stag-train lm ${quick} --limit 300 --max-steps 4
         --batch-size 4 --max-len 32 --memory-budget-mib 1 --out ${smoke}/lm_budget_small)
set_tests_properties(stag_train.lm_memory_budget_too_small PROPERTIES PASS_REGULAR_EXPRESSION
  "memory budget of 1.0 MiB \\(1048576 bytes\\) cannot be met: the smallest arena found recomputes [0-9]+ values and needs")
set_tests_properties(stag_train.lm_memory_budget stag_train.lm_memory_budget_too_small PROPERTIES
  LABELS unit ENVIRONMENT "OMP_WAIT_POLICY=passive" SKIP_RETURN_CODE 77)
add_test(NAME stag_train.g2p COMMAND stag-train g2p ${quick} --limit 400 --max-steps 5 --batch-size 16
         --eval-limit 40 --test-limit 200 --out ${smoke}/g2p)
set_tests_properties(stag_train.g2p PROPERTIES PASS_REGULAR_EXPRESSION "test_per: .*test_wer: ")
# seq2seq on a user's file: a synthetic one written here (numbers to their digits' names,
# "305<TAB>three zero five"), 500 pairs.
set(digit_names zero one two three four five six seven eight nine)
set(digits_tsv "")
foreach(i RANGE 0 499)
  math(EXPR n "(${i} * 7919 + 13) % 100000")
  string(LENGTH "${n}" len)
  math(EXPR last "${len} - 1")
  set(spelled "")
  foreach(k RANGE 0 ${last})
    string(SUBSTRING "${n}" ${k} 1 d)
    list(GET digit_names ${d} w)
    string(APPEND spelled " ${w}")
  endforeach()
  string(STRIP "${spelled}" spelled)
  string(APPEND digits_tsv "${n}\t${spelled}\n")
endforeach()
file(WRITE ${smoke}/digits.tsv "${digits_tsv}")
add_test(NAME stag_train.seq2seq COMMAND stag-train seq2seq ${quick} --data ${smoke}/digits.tsv
         --max-steps 6 --batch-size 16 --eval-every 3 --beam 2 --out ${smoke}/seq2seq)
set_tests_properties(stag_train.seq2seq PROPERTIES
  PASS_REGULAR_EXPRESSION "test_cer: .*test_exact_match: .*test_chrf: .*test_copy_cer: .*beam: 2")
add_test(NAME stag_train.seq2seq_missing_file COMMAND stag-train seq2seq --data ${smoke}/no-such.tsv
         --out ${smoke}/seq2seq_missing)
set_tests_properties(stag_train.seq2seq_missing_file PROPERTIES
  PASS_REGULAR_EXPRESSION "the text-pair file: file not found: .*no-such.tsv\n")
add_test(NAME stag_train.bad_flag COMMAND stag-train --lr-schedule wavy)
set_tests_properties(stag_train.bad_flag PROPERTIES PASS_REGULAR_EXPRESSION "--lr-schedule: 'wavy' is not one of")
# --precision bf16 (stag::autocast): the LM with gradient accumulation (grad<> and update<> of
# the autocast graph), and a preset it is not compiled for.
add_test(NAME stag_train.lm_bf16 COMMAND stag-train lm ${quick} --precision bf16 --limit 300 --max-steps 6
         --batch-size 4 --max-len 32 --eval-limit 16 --eval-every 3 --accumulation 2 --test-limit 64
         --out ${smoke}/lm_bf16)
set_tests_properties(stag_train.lm_bf16 PROPERTIES PASS_REGULAR_EXPRESSION "val_bpc: .*unigram_bpc: ")
add_test(NAME stag_train.bf16_preset COMMAND stag-train classify --precision bf16 --model base
         --out ${smoke}/bf16_preset)
set_tests_properties(stag_train.bf16_preset PROPERTIES
  PASS_REGULAR_EXPRESSION "--precision bf16 is compiled for classify's 'pre', lm's 'small' and g2p's 'small' presets only, not for 'base'")
set_tests_properties(stag_train.classify stag_train.classify_resume stag_train.classify_eval_only stag_train.lm
  stag_train.g2p stag_train.seq2seq stag_train.seq2seq_missing_file stag_train.bad_flag stag_train.lm_bf16
  stag_train.bf16_preset PROPERTIES LABELS unit ENVIRONMENT "OMP_WAIT_POLICY=passive" SKIP_RETURN_CODE 77)

# Masked-LM pretraining on the fortunes, then the classifier from it; a second run starts from
# that checkpoint (--init-from); a preset that differs is refused by name.
add_test(NAME stag_train.classify_pretrain COMMAND stag-train classify ${quick} --limit 300 --epochs 1
         --model small --pretrain-steps 4 --test-limit 100 --out ${smoke}/pretrain)
set_tests_properties(stag_train.classify_pretrain PROPERTIES
  PASS_REGULAR_EXPRESSION "pretrain_mlm_accuracy: .*val_accuracy: .*baseline_accuracy: ")
add_test(NAME stag_train.classify_init_from COMMAND stag-train classify ${quick} --limit 300 --epochs 1
         --model small --test-limit 100 --init-from ${smoke}/pretrain/pretrain.safetensors
         --out ${smoke}/init_from)
set_tests_properties(stag_train.classify_init_from PROPERTIES DEPENDS stag_train.classify_pretrain
  PASS_REGULAR_EXPRESSION "initialised [1-9][0-9]* parameters from .*pretrain.safetensors.*val_accuracy: ")
add_test(NAME stag_train.classify_init_from_other_preset COMMAND stag-train classify ${quick} --limit 300
         --epochs 1 --model pre --init-from ${smoke}/pretrain/pretrain.safetensors --out ${smoke}/init_other)
set_tests_properties(stag_train.classify_init_from_other_preset PROPERTIES DEPENDS stag_train.classify_pretrain
  PASS_REGULAR_EXPRESSION "holds preset 'small'; pass --model small")
set_tests_properties(stag_train.classify_pretrain stag_train.classify_init_from
  stag_train.classify_init_from_other_preset PROPERTIES LABELS unit ENVIRONMENT "OMP_WAIT_POLICY=passive"
  SKIP_RETURN_CODE 77)

# A data set that is not installed: a message naming what is missing and how to install it.
add_test(NAME stag_train.missing_data COMMAND stag-train classify --threads 1 --out ${smoke}/missing_data)
set_tests_properties(stag_train.missing_data PROPERTIES LABELS unit
  ENVIRONMENT "STAG_DATA_DIR=${CMAKE_BINARY_DIR}/no-such-data;OMP_WAIT_POLICY=passive"
  PASS_REGULAR_EXPRESSION "STAG_DATA_DIR=.*no-such-data has no npm/ folder \\(run tools/data.sh\\)")
add_test(NAME stag_train.missing_fortunes COMMAND stag-train lm --threads 1 --out ${smoke}/missing_fortunes)
set_tests_properties(stag_train.missing_fortunes PROPERTIES LABELS unit
  ENVIRONMENT "STAG_FORTUNES_DIR=${CMAKE_BINARY_DIR}/no-such-fortunes;OMP_WAIT_POLICY=passive"
  PASS_REGULAR_EXPRESSION "no-such-fortunes.*run tools/data.sh")

# stag-generate samples from the checkpoint that stag_train.lm wrote (its preset and tokenizer).
# Where that run was skipped (no data set), these report skipped too (tests/needs_file.sh).
set(STAG_NEEDS_FILE ${PROJECT_SOURCE_DIR}/tests/needs_file.sh)
if(TARGET stag-generate)
  add_test(NAME stag_train.lm_generate COMMAND ${STAG_NEEDS_FILE} ${smoke}/lm/model.safetensors $<TARGET_FILE:stag-generate> --checkpoint ${smoke}/lm/model.safetensors
           --prompt "The " --max-new-tokens 16 --threads 1 --seed 2)
  set_tests_properties(stag_train.lm_generate PROPERTIES LABELS unit DEPENDS stag_train.lm
    ENVIRONMENT "OMP_WAIT_POLICY=passive" PASS_REGULAR_EXPRESSION "model: small \\(char tokeniser\\).*tokens_per_s: ")
  # It translates with the encoder-decoder checkpoints of stag_train.g2p and stag_train.seq2seq,
  # and runs a beam search with the language model's.
  add_test(NAME stag_train.g2p_translate COMMAND ${STAG_NEEDS_FILE} ${smoke}/g2p/model.safetensors $<TARGET_FILE:stag-generate> --checkpoint ${smoke}/g2p/model.safetensors
           --prompt "stag" --beam 3 --n-best 2 --threads 1)
  set_tests_properties(stag_train.g2p_translate PROPERTIES DEPENDS stag_train.g2p
    PASS_REGULAR_EXPRESSION "1\t1\t-?[0-9.]+\t[A-Z].*1\t2\t.*model: g2p small, beam 3; 1 lines")
  add_test(NAME stag_train.seq2seq_translate COMMAND ${STAG_NEEDS_FILE} ${smoke}/seq2seq/model.safetensors $<TARGET_FILE:stag-generate> --checkpoint
           ${smoke}/seq2seq/model.safetensors --prompt-file ${smoke}/digits.tsv --threads 1)
  set_tests_properties(stag_train.seq2seq_translate PROPERTIES DEPENDS stag_train.seq2seq
    PASS_REGULAR_EXPRESSION "model: seq2seq small, beam 1; 500 lines")
  add_test(NAME stag_train.lm_beam COMMAND ${STAG_NEEDS_FILE} ${smoke}/lm/model.safetensors $<TARGET_FILE:stag-generate> --checkpoint ${smoke}/lm/model.safetensors
           --beam 3 --n-best 2 --max-new-tokens 8 --prompt "The " --threads 1)
  set_tests_properties(stag_train.lm_beam PROPERTIES DEPENDS stag_train.lm
    PASS_REGULAR_EXPRESSION "1\t-?[0-9.]+\tThe .*2\t-?[0-9.]+\tThe .*model: small, beam 3")
  add_test(NAME stag_train.lm_n_best_needs_beam COMMAND ${STAG_NEEDS_FILE} ${smoke}/lm/model.safetensors $<TARGET_FILE:stag-generate> --checkpoint
           ${smoke}/lm/model.safetensors --n-best 2 --prompt "The ")
  set_tests_properties(stag_train.lm_n_best_needs_beam PROPERTIES DEPENDS stag_train.lm
    PASS_REGULAR_EXPRESSION "--n-best needs --beam")
  set_tests_properties(stag_train.lm_generate stag_train.g2p_translate stag_train.seq2seq_translate
    stag_train.lm_beam stag_train.lm_n_best_needs_beam
    PROPERTIES LABELS unit ENVIRONMENT "OMP_WAIT_POLICY=passive" SKIP_RETURN_CODE 77)
endif()

# A picture that cannot be written (model.svg is a folder here) is reported; the run goes on.
add_test(NAME stag_train.svg_fail_setup COMMAND ${CMAKE_COMMAND} -E make_directory ${smoke}/svgfail/model.svg)
set_tests_properties(stag_train.svg_fail_setup PROPERTIES LABELS unit FIXTURES_SETUP svgfail)
add_test(NAME stag_train.svg_fail COMMAND stag-train classify ${quick} --limit 100 --epochs 1 --model small
         --test-limit 50 --out ${smoke}/svgfail)
set_tests_properties(stag_train.svg_fail PROPERTIES LABELS unit FIXTURES_REQUIRED svgfail
  ENVIRONMENT "OMP_WAIT_POLICY=passive" SKIP_RETURN_CODE 77
  PASS_REGULAR_EXPRESSION "could not draw the model graph .*training is unaffected.*val_accuracy: ")

# Runs users can trust (issue 14): each of these was accepted, hung or crashed before.
# A second run in a folder that a running one holds is refused, naming it; --force goes on.
add_test(NAME stag_train.run_lock COMMAND sh ${STAG_TRAIN_DIR}/run_lock_test.sh $<TARGET_FILE:stag-train>
         ${smoke}/lock)
set_tests_properties(stag_train.run_lock PROPERTIES LABELS unit ENVIRONMENT "OMP_WAIT_POLICY=passive"
  SKIP_RETURN_CODE 77 TIMEOUT 300
  PASS_REGULAR_EXPRESSION "is in use by another run \\(pid [0-9]+, started [^)]*stag-train lm.*pass --force.*going on anyway \\(--force\\)")
# Resuming with another batch size would replay other batches (and used to spin forever when the
# saved position lay past the new epoch's end): refused, naming both values.
add_test(NAME stag_train.resume_other_batch_size COMMAND stag-train lm ${quick} --limit 300 --max-steps 8
         --batch-size 64 --max-len 32 --accumulation 2 --out ${smoke}/lm --resume ${smoke}/lm/model.safetensors)
set_tests_properties(stag_train.resume_other_batch_size PROPERTIES DEPENDS stag_train.lm TIMEOUT 120
  SKIP_RETURN_CODE 77
  PASS_REGULAR_EXPRESSION "--batch-size 64 \\(the checkpoint's run had 4\\): a resumed run must see the same batches")
# Flags that used to be accepted (or silently clamped).
add_test(NAME stag_train.negative_max_steps COMMAND stag-train lm --max-steps -5 --out ${smoke}/neg_steps)
set_tests_properties(stag_train.negative_max_steps PROPERTIES PASS_REGULAR_EXPRESSION "--max-steps: -5 is negative")
add_test(NAME stag_train.negative_checkpoint_every COMMAND stag-train --checkpoint-every -3 --out ${smoke}/neg_checkpoint)
set_tests_properties(stag_train.negative_checkpoint_every PROPERTIES PASS_REGULAR_EXPRESSION "--checkpoint-every: -3 is negative")
add_test(NAME stag_train.negative_eval_every COMMAND stag-train g2p --eval-every -1 --out ${smoke}/neg_eval)
set_tests_properties(stag_train.negative_eval_every PROPERTIES PASS_REGULAR_EXPRESSION "--eval-every: -1 is negative")
add_test(NAME stag_train.bpe_vocab_above_preset COMMAND stag-train lm ${quick} --model small-bpe --tokenizer bpe
         --bpe-vocab 100000 --limit 50 --max-steps 1 --out ${smoke}/bpe_vocab)
set_tests_properties(stag_train.bpe_vocab_above_preset PROPERTIES SKIP_RETURN_CODE 77
  PASS_REGULAR_EXPRESSION "--bpe-vocab 100000 is above the 2048 ids of the preset's vocabulary")
add_test(NAME stag_train.classify_max_len_above_preset COMMAND stag-train classify ${quick} --model small
         --max-len 1000 --limit 50 --epochs 1 --out ${smoke}/max_len)
set_tests_properties(stag_train.classify_max_len_above_preset PROPERTIES SKIP_RETURN_CODE 77
  PASS_REGULAR_EXPRESSION "--max-len 1000 is above the 128 positions of preset 'small'")
# An unwritable checkpoint location is found before step 1, not at the end of the run.
file(WRITE ${smoke}/not_a_folder "a file where the checkpoint's folder should be\n")
add_test(NAME stag_train.unwritable_checkpoint COMMAND stag-train lm ${quick} --limit 50 --max-steps 3
         --batch-size 2 --max-len 16 --out ${smoke}/unwritable --save ${smoke}/not_a_folder/model.safetensors)
set_tests_properties(stag_train.unwritable_checkpoint PROPERTIES SKIP_RETURN_CODE 77
  PASS_REGULAR_EXPRESSION "not_a_folder/model.safetensors: cannot create its folder")
set_tests_properties(stag_train.resume_other_batch_size stag_train.negative_max_steps
  stag_train.negative_checkpoint_every stag_train.negative_eval_every stag_train.bpe_vocab_above_preset
  stag_train.classify_max_len_above_preset stag_train.unwritable_checkpoint PROPERTIES LABELS unit
  ENVIRONMENT "OMP_WAIT_POLICY=passive")
if(TARGET stag-generate)
  # A tokeniser file with a field of the wrong JSON type: an error naming the file and the field
  # (it was nlohmann's type_error, uncaught: SIGABRT).
  file(WRITE ${smoke}/type5_tokenizer.json "{\"type\": 5}\n")
  add_test(NAME stag_train.generate_bad_tokenizer COMMAND ${STAG_NEEDS_FILE} ${smoke}/lm/model.safetensors $<TARGET_FILE:stag-generate> --checkpoint ${smoke}/lm/model.safetensors
           --tokenizer ${smoke}/type5_tokenizer.json --max-new-tokens 4)
  set_tests_properties(stag_train.generate_bad_tokenizer PROPERTIES DEPENDS stag_train.lm
    PASS_REGULAR_EXPRESSION "stag-generate: tokenizer: \"type\" is 5, not a string .*\\(in .*type5_tokenizer.json\\)")
  # A cache that cannot fit in memory is refused by its size (it said "weight ... is not a parameter").
  add_test(NAME stag_train.generate_huge_max_len COMMAND ${STAG_NEEDS_FILE} ${smoke}/lm/model.safetensors $<TARGET_FILE:stag-generate> --checkpoint ${smoke}/lm/model.safetensors
           --max-len 100000000 --max-new-tokens 4)
  set_tests_properties(stag_train.generate_huge_max_len PROPERTIES DEPENDS stag_train.lm
    PASS_REGULAR_EXPRESSION "a cache of 100000000 positions \\(max_len\\) needs [0-9.]+ GiB of key/value cache")
  set_tests_properties(stag_train.generate_bad_tokenizer stag_train.generate_huge_max_len PROPERTIES
    LABELS unit ENVIRONMENT "OMP_WAIT_POLICY=passive" SKIP_RETURN_CODE 77)
endif()
