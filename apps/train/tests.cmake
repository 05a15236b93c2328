# stag-train's tests (included by tests/CMakeLists.txt): unit tests of the app's pieces, the
# single-batch overfit test of the default classifier, and smoke runs of each task on real data.
# Each test that may run at the same time as another has its own --out folder: the run lock
# (runtime/train/run_guard) refuses a second run in a folder that is in use.
# Every program test is a stag_add_checked_test (tests/checked_test.cmake): it passes only when
# the program exits as expected AND its output matches, and the smoke runs check what they
# learnt (an accuracy above chance, bits per character below the unigram model's, a training
# loss that fell), not only that the names of their metrics were printed.
set(STAG_TRAIN_DIR ${PROJECT_SOURCE_DIR}/apps/train)
add_executable(stag_train_tests ${STAG_TRAIN_DIR}/test_train_app.cpp)
target_link_libraries(stag_train_tests PRIVATE stag_train_core stag_catch_main)
target_include_directories(stag_train_tests PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(stag_train_tests PRIVATE -Wall -Wextra
  $<$<CXX_COMPILER_ID:GNU>:-Wno-maybe-uninitialized>)  # g++ 12 false positive, see docs/examples/CMakeLists.txt
add_dependencies(stag_quick stag_train_tests)
catch_discover_tests(stag_train_tests TEST_LIST stag_train_unit_TESTS
  PROPERTIES ENVIRONMENT "OMP_WAIT_POLICY=passive" LABELS unit SKIP_RETURN_CODE 77)

# Smoke tests of the program on real data (seconds each); skipped (exit code 77) when the data
# sets are not installed (tools/data.sh).
set(smoke ${CMAKE_BINARY_DIR}/smoke)
set(quick --threads 2 --progress plain --seed 3)
set(train $<TARGET_FILE:stag-train>)
# The classifier: 1,000 training sentences, 4 epochs (about a second) reach about 0.7 where the
# majority class is about 0.5.
set(classify_run ${quick} --limit 1000 --model small)
set(learnt "train_loss_last < train_loss_first")
stag_add_checked_test(NAME stag_train.classify
  MATCH "val_accuracy: .*test_accuracy: .*baseline_accuracy: "
  VALUES "val_accuracy > 0.6" "test_accuracy > 0.6" ${learnt}
  COMMAND ${train} ${classify_run} --epochs 4 --out ${smoke}/classify)
stag_add_checked_test(NAME stag_train.classify_resume DEPENDS stag_train.classify
  NO_MATCH "\nstep 1/" VALUES "test_accuracy > 0.6" "steps >= 150"
  COMMAND ${train} classify ${classify_run} --epochs 5 --out ${smoke}/classify
    --resume ${smoke}/classify/model.safetensors)
stag_add_checked_test(NAME stag_train.classify_eval_only DEPENDS stag_train.classify_resume
  NO_MATCH "\nstep [0-9]" VALUES "val_accuracy > 0.6" "test_accuracy > 0.6"
  COMMAND ${train} classify ${classify_run} --eval-only --out ${smoke}/classify)
# --export-bf16: the final weights as bf16, then evaluated from that file alone.
stag_add_checked_test(NAME stag_train.export_bf16
  MATCH "val_accuracy: .*export_bf16: .*weights.bf16.safetensors" VALUES "test_accuracy > 0.6"
  COMMAND ${train} classify ${classify_run} --epochs 4 --out ${smoke}/export_bf16
    --export-bf16 ${smoke}/export_bf16/weights.bf16.safetensors)
stag_add_checked_test(NAME stag_train.eval_bf16 DEPENDS stag_train.export_bf16
  MATCH "checkpoint: .*weights.bf16.safetensors" VALUES "test_accuracy > 0.6"
  COMMAND ${train} classify ${classify_run} --eval-only
    --resume ${smoke}/export_bf16/weights.bf16.safetensors --out ${smoke}/export_bf16)

# The language model: 60 steps (about 3 s) go below the unigram model's bits per character.
set(lm_run ${quick} --limit 300 --max-steps 60 --warmup 10 --batch-size 8 --max-len 32 --eval-limit 16
  --eval-every 30 --accumulation 2 --test-limit 64)
stag_add_checked_test(NAME stag_train.lm VALUES "test_bpc < unigram_bpc" "val_bpc < unigram_bpc" ${learnt}
  COMMAND ${train} lm ${lm_run} --out ${smoke}/lm)
# --memory-budget-mib: the LM's step needs 8.3 MiB; within 7.5 it recomputes (runtime/remat.hpp;
# that the values stay bitwise the same is tested in runtime/test_remat.cpp), and 1 MiB is
# refused with the smallest arena found.
stag_add_checked_test(NAME stag_train.lm_memory_budget
  MATCH "train_arena_mib: [0-9.]+\nnatural_arena_mib: 8\\.[0-9]+\nrecomputed_values: [1-9]"
  VALUES "train_arena_mib <= 7.5"
  COMMAND ${train} lm ${quick} --limit 300 --max-steps 4 --batch-size 4 --max-len 32 --eval-limit 16
    --test-limit 64 --memory-budget-mib 7.5 --out ${smoke}/lm_budget)
stag_add_checked_test(NAME stag_train.lm_memory_budget_too_small EXIT error
  MATCH "memory budget of 1.0 MiB \\(1048576 bytes\\) cannot be met: the smallest arena found recomputes [0-9]+ values and needs"
  COMMAND ${train} lm ${quick} --limit 300 --max-steps 4 --batch-size 4 --max-len 32
    --memory-budget-mib 1 --out ${smoke}/lm_budget_small)
# --trace: the timeline of the training step's graphs, read back from the file by stag-train: 4
# steps of 2 micro-batches are 12 runs (2 of the gradient graph and 1 of the update each), with
# every node of each; a folder that does not exist is refused before anything runs.
stag_add_checked_test(NAME stag_train.lm_trace
  MATCH "trace: [^\n]*/lm_trace/trace\\.json\ntrace_events: [0-9]+\ntrace_runs: 12\ntrace_lanes: 1"
  VALUES "trace_events >= 1200"
  COMMAND ${train} lm ${quick} --limit 300 --max-steps 4 --batch-size 4 --max-len 32 --eval-limit 16
    --test-limit 16 --accumulation 2 --out ${smoke}/lm_trace --trace ${smoke}/lm_trace/trace.json)
stag_add_checked_test(NAME stag_train.trace_bad_folder EXIT error
  MATCH "--trace: the folder '/nonexistent-stag-folder' does not exist"
  COMMAND ${train} lm --trace /nonexistent-stag-folder/t.json)
# --device cuda_interpret: the training and evaluation steps through the CUDA backend, its kernels
# run on the CPU (slowly: 4 tiny steps take about 30 s); the checkpoint then goes on on the CPU.
set(device_run ${quick} --limit 100 --batch-size 2 --max-len 8 --eval-limit 2 --test-limit 4
  --out ${smoke}/lm_device)
stag_add_checked_test(NAME stag_train.lm_cuda_interpret LABELS cuda_interpret
  MATCH "val_bpc: .*steps: 4\n" VALUES ${learnt}
  COMMAND ${train} lm ${device_run} --max-steps 4 --device cuda_interpret)
stag_add_checked_test(NAME stag_train.lm_device_checkpoint_on_cpu
  LABELS cuda_interpret DEPENDS stag_train.lm_cuda_interpret
  MATCH "\nstep 5/6 .*steps: 6\n" NO_MATCH "\nstep [1-4]/"
  COMMAND ${train} lm ${device_run} --max-steps 6 --resume ${smoke}/lm_device/model.safetensors)
stag_add_checked_test(NAME stag_train.bad_device EXIT error
  MATCH "--device: 'tpu' is not one of cpu, cuda, cuda_interpret"
  COMMAND ${train} lm --device tpu)
# G2P: 60 steps on 2,000 words (about 3 s) already beat an empty output's error rate of 1.
# Each test word is scored against its first pronunciation and against all of CMUdict's.
stag_add_checked_test(NAME stag_train.g2p
  MATCH "first pronunciations\\), 12387 validation and 12388 test words \\(801 and 804 with more"
    "test_per: .*test_wer: .*test_per_any: .*test_wer_any: "
  VALUES "test_per < 0.95" "test_per_any < 0.95" ${learnt}
  COMMAND ${train} g2p ${quick} --limit 2000 --max-steps 60 --warmup 10 --batch-size 32
    --eval-limit 40 --test-limit 200 --out ${smoke}/g2p)
stag_add_checked_test(NAME stag_train.alternates_not_g2p EXIT error
  MATCH "--alternates: only g2p has alternates"
  COMMAND ${train} lm --alternates)
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
stag_add_checked_test(NAME stag_train.seq2seq
  MATCH "test_cer: .*test_exact_match: .*test_chrf: .*test_copy_cer: .*beam: 2"
  VALUES "test_cer < test_copy_cer" "test_chrf > test_copy_chrf" ${learnt}
  COMMAND ${train} seq2seq ${quick} --data ${smoke}/digits.tsv --max-steps 60 --warmup 10
    --batch-size 16 --eval-every 30 --beam 2 --out ${smoke}/seq2seq)
stag_add_checked_test(NAME stag_train.seq2seq_missing_file EXIT error
  MATCH "the text-pair file: file not found: .*no-such.tsv\n"
  COMMAND ${train} seq2seq --data ${smoke}/no-such.tsv --out ${smoke}/seq2seq_missing)
stag_add_checked_test(NAME stag_train.bad_flag EXIT error MATCH "--lr-schedule: 'wavy' is not one of"
  COMMAND ${train} --lr-schedule wavy)
# --precision bf16 (stag::autocast): the LM with gradient accumulation (grad<> and update<> of
# the autocast graph), and a preset it is not compiled for.
stag_add_checked_test(NAME stag_train.lm_bf16 VALUES "test_bpc < unigram_bpc" ${learnt}
  COMMAND ${train} lm ${lm_run} --precision bf16 --out ${smoke}/lm_bf16)
# --precision auto (what ./run.sh g2p and lm pass): a preset without bf16 graphs trains in f32 whatever the
# CPU (which of bf16 and f32 it picks otherwise is the [train_app] case's).
stag_add_checked_test(NAME stag_train.precision_auto_f32
  MATCH "stag-train classify: .*M parameters, .*, f32\n"
  COMMAND ${train} classify ${classify_run} --max-steps 2 --precision auto
    --out ${smoke}/precision_auto)
stag_add_checked_test(NAME stag_train.bf16_preset EXIT error
  MATCH "--precision bf16 is compiled for the presets classify's 'pre'; lm's 'small'; g2p's 'small' and 'base'; seq2seq's 'small' only, not for 'base' of classify"
  COMMAND ${train} classify --precision bf16 --model base --out ${smoke}/bf16_preset)
# --fail-at-chance (./run.sh's): a run too short to learn fails with status 3 and says why.
stag_add_checked_test(NAME stag_train.fail_at_chance EXIT 3
  MATCH "--fail-at-chance: test_bpc [0-9.]+ is not below the unigram model's"
  COMMAND ${train} lm ${quick} --limit 100 --max-steps 2 --batch-size 2 --max-len 16 --test-limit 32
    --fail-at-chance --out ${smoke}/at_chance)

# Fine-tuning a Hugging Face model from the command line (--init-hf, --data FILE, --export-hf):
# stag-train with the presets of the tiny folders of tests/hf/ added (hf_fixtures_main.cpp), on
# a text file of this repository (docs/training.md, its paragraphs). The models are random, so
# what is checked is that the run starts from the folder's weights (pretrained_val_loss is
# theirs), learns (the validation loss falls), and writes a folder that loads back
# (stag_train.lm_init_hf_export_check).
add_executable(stag_train_hf_fixtures ${STAG_TRAIN_DIR}/hf_fixtures_main.cpp)
target_link_libraries(stag_train_hf_fixtures PRIVATE stag_train_app)
target_include_directories(stag_train_hf_fixtures PRIVATE ${PROJECT_SOURCE_DIR}/tests)
target_compile_options(stag_train_hf_fixtures PRIVATE -Wall -Wextra)
set(train_hf $<TARGET_FILE:stag_train_hf_fixtures>)
set(hf_base ${quick} --data ${PROJECT_SOURCE_DIR}/docs/training.md --warmup 4 --batch-size 8
  --max-len 16 --lr 3e-3 --eval-every 20 --eval-limit 16 --test-limit 32)
set(hf_run ${hf_base} --max-steps 40)
stag_add_checked_test(NAME stag_train.lm_init_hf_llama
  MATCH "stag-train lm: preset tiny-llama .*pretrained_val_loss: .*val_bpc: .*export_hf: .*export_hf_dtype: BF16"
  VALUES "val_loss < pretrained_val_loss" ${learnt}
  COMMAND ${train_hf} lm ${hf_run} --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/llama
    --out ${smoke}/hf_llama --export-hf ${smoke}/hf_llama/hf)
# --resume of a fine-tuning run (the folder again for the tokenizer; weights and AdamW's moments
# from the checkpoint): it goes on from step 40 to 60; --eval-only --resume --export-hf converts
# the checkpoint to a Hugging Face folder; a checkpoint of another folder is refused by name.
stag_add_checked_test(NAME stag_train.lm_init_hf_resume DEPENDS stag_train.lm_init_hf_llama
  NO_MATCH "\nstep 1/" "pretrained_val_loss" VALUES "steps >= 60"
  COMMAND ${train_hf} lm ${hf_base} --max-steps 60 --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/llama
    --out ${smoke}/hf_llama --resume ${smoke}/hf_llama/model.safetensors)
stag_add_checked_test(NAME stag_train.lm_init_hf_checkpoint_export DEPENDS stag_train.lm_init_hf_resume
  MATCH "checkpoint: .*hf_llama/model.safetensors\n.*export_hf: .*hf_llama/from_checkpoint"
  COMMAND ${train_hf} lm ${hf_run} --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/llama --eval-only
    --resume ${smoke}/hf_llama/model.safetensors --export-hf ${smoke}/hf_llama/from_checkpoint)
stag_add_checked_test(NAME stag_train.lm_init_hf_resume_other_folder DEPENDS stag_train.lm_init_hf_resume
  EXIT error MATCH "fine-tuned .*tests/hf/llama, not --init-hf .*tests/hf/gpt2: pass --init-hf "
  COMMAND ${train_hf} lm ${hf_base} --max-steps 60 --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/gpt2
    --out ${smoke}/hf_llama_other --resume ${smoke}/hf_llama/model.safetensors)
# --precision bf16: the same run with autocast's training graphs (bf16 matmuls, f32 weights and
# AdamW) learns as well; a preset whose bf16 graphs the program does not compile (the tests'
# tiny-gpt2) is refused by name.
stag_add_checked_test(NAME stag_train.lm_init_hf_llama_bf16
  MATCH "preset tiny-llama .*, bf16 matmuls \\(f32 weights\\)\n.*pretrained_val_loss: "
  VALUES "val_loss < pretrained_val_loss" ${learnt}
  COMMAND ${train_hf} lm ${hf_run} --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/llama --precision bf16
    --out ${smoke}/hf_llama_bf16)
stag_add_checked_test(NAME stag_train.lm_init_hf_auto_f32
  MATCH "preset tiny-gpt2 .*, f32\n.*pretrained_val_loss: "
  COMMAND ${train_hf} lm ${hf_base} --max-steps 4 --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/gpt2
    --precision auto --out ${smoke}/hf_gpt2_auto)
stag_add_checked_test(NAME stag_train.lm_init_hf_bf16_not_compiled EXIT error
  MATCH "--precision bf16: the bf16 training graphs of preset 'tiny-gpt2' are not compiled into this program"
  COMMAND ${train_hf} lm ${hf_run} --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/gpt2 --precision bf16
    --out ${smoke}/hf_gpt2_bf16)
# GPT-2 (F32): fine-tuned, exported, and the export evaluated alone gives the same figures.
stag_add_checked_test(NAME stag_train.lm_init_hf_gpt2_roundtrip
  MATCH "val_loss: fine-tuned [0-9.]+, exported and loaded back [0-9.]+\n.*export_hf_dtype: F32"
  VALUES "train_loss_last < train_loss_first"
  COMMAND sh ${STAG_TRAIN_DIR}/hf_roundtrip_test.sh ${train_hf} ${PROJECT_SOURCE_DIR}/tests/hf/gpt2
    ${smoke}/hf_gpt2 ${hf_run})
# stag-generate with the same tiny presets (apps/generate_hf_fixtures_main.cpp): the folder
# itself, with its tokenizer.json; and the GPT-2 run's checkpoint, which names its folder, gives
# the greedy text of the folder the run exported (the checkpoint's tokeniser and <eos> are the
# folder's).
if(TARGET stag_generate_app)
  add_executable(stag_generate_hf_fixtures ${PROJECT_SOURCE_DIR}/apps/generate_hf_fixtures_main.cpp)
  target_link_libraries(stag_generate_hf_fixtures PRIVATE stag_generate_app)
  target_include_directories(stag_generate_hf_fixtures PRIVATE ${PROJECT_SOURCE_DIR}/tests
    ${PROJECT_SOURCE_DIR}/apps)
  target_compile_options(stag_generate_hf_fixtures PRIVATE -Wall -Wextra)
  set(generate_hf $<TARGET_FILE:stag_generate_hf_fixtures>)
  stag_add_checked_test(NAME stag_generate.hf_folder
    MATCH "^Once upon a time.*\n---\nmodel: tiny-llama \\(hugging-face tokeniser, f32 weights\\).*\nnew_tokens: 6 "
    COMMAND ${generate_hf} --hf ${PROJECT_SOURCE_DIR}/tests/hf/llama --prompt "Once upon a time"
      --max-new-tokens 6 --temperature 0 --ignore-eos --threads 1)
  # --weights bf16: the same greedy text from the folder with its weights kept in bf16 (the
  # BF16 file's values as they are; bf16 matmuls with f32 sums).
  stag_add_checked_test(NAME stag_generate.hf_folder_bf16_weights
    MATCH "^Once upon a time.*\n---\nmodel: tiny-llama \\(hugging-face tokeniser, bf16 weights, bf16 matmuls\\).*\nnew_tokens: 6 "
    COMMAND sh ${STAG_TRAIN_DIR}/same_output_test.sh
      "${generate_hf} --hf ${PROJECT_SOURCE_DIR}/tests/hf/llama --prompt 'Once upon a time' --max-new-tokens 6 --temperature 0 --ignore-eos --threads 1"
      --weights bf16)
  stag_add_checked_test(NAME stag_generate.bf16_weights_not_compiled EXIT error
    MATCH "preset small has no decode graph for bf16 weights in this program"
    COMMAND ${generate_hf} --random-weights small --prompt-tokens 4 --max-new-tokens 2
      --weights bf16 --threads 1)
  stag_add_checked_test(NAME stag_generate.hf_finetuned_checkpoint
    DEPENDS stag_train.lm_init_hf_gpt2_roundtrip
    MATCH "model: tiny-gpt2, beam 4, f32 weights\n1\t-[0-9.]+\tOnce upon a time.*\nthe exported folder gives the same"
    COMMAND sh ${STAG_TRAIN_DIR}/hf_generate_test.sh ${generate_hf}
      ${smoke}/hf_gpt2/tune/model.safetensors ${smoke}/hf_gpt2/hf --prompt "Once upon a time"
      --beam 4 --n-best 4 --max-new-tokens 6 --threads 1)
endif()
stag_add_checked_test(NAME stag_train.lm_init_hf_no_tokenizer EXIT error
  MATCH "no tokenizer.json, and no vocab.json with merges.txt"
  COMMAND ${train_hf} lm ${hf_run} --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/qwen2
    --out ${smoke}/hf_qwen2)
stag_add_checked_test(NAME stag_train.lm_init_hf_positions EXIT error
  MATCH "--max-len 64 is longer than the 24 learned positions of .*tests/hf/gpt2 \\(n_positions\\)"
  COMMAND ${train_hf} lm ${quick} --data ${PROJECT_SOURCE_DIR}/docs/training.md --max-len 64
    --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/gpt2 --out ${smoke}/hf_positions)
# stag-train itself has no tiny-gpt2: the error names the nearest preset and each field.
stag_add_checked_test(NAME stag_train.lm_init_hf_no_preset EXIT error
  MATCH "no compiled-in preset has this gpt2 config; the nearest is gpt2 .*\n  n_embd is 32 in config.json, 768 in preset gpt2\n"
  COMMAND ${train} lm ${quick} --data ${PROJECT_SOURCE_DIR}/docs/training.md --max-len 16
    --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/gpt2 --out ${smoke}/hf_not_compiled)
# stag-train fine-tunes the library's Hugging Face presets (main.cpp adds them).
stag_add_checked_test(NAME stag_train.lm_list_models
  MATCH "\nsmollm-135m +--init-hf: Hugging Face SmolLM-135M" "\nqwen2.5-0.5b +--init-hf: "
    "\ntinyllama-1.1b +--init-hf: " "\ngpt2 +--init-hf: Hugging Face gpt2"
  COMMAND ${train} lm --list-models)
stag_add_checked_test(NAME stag_train.lm_missing_data EXIT error
  MATCH "--data '.*no-such.txt' is neither a data set \\(fortunes, pydoc\\) nor a text file"
  COMMAND ${train} lm --data ${smoke}/no-such.txt --out ${smoke}/lm_missing_data)
stag_add_checked_test(NAME stag_train.export_hf_into_out EXIT error
  MATCH "--export-hf: '.*hf_same/' is --out's folder: its config.json and model.safetensors would replace the run's own"
  COMMAND ${train_hf} lm ${hf_run} --init-hf ${PROJECT_SOURCE_DIR}/tests/hf/gpt2
    --out ${smoke}/hf_same --export-hf ${smoke}/hf_same/)
stag_add_checked_test(NAME stag_train.export_hf_alone EXIT error
  MATCH "--export-hf: writes a fine-tuned Hugging Face model: give the model to start from with --init-hf"
  COMMAND ${train} lm --export-hf ${smoke}/nowhere --out ${smoke}/export_hf_alone)

# Masked-LM pretraining on the fortunes, then the classifier from it; a second run starts from
# that checkpoint (--init-from); a preset that differs is refused by name. The masked-LM loss
# starts near ln(8000) = 8.99 (a uniform guess over the vocabulary).
stag_add_checked_test(NAME stag_train.classify_pretrain
  MATCH "pretrain_mlm_accuracy: .*val_accuracy: .*baseline_accuracy: " VALUES "pretrain_mlm_loss < 8.7"
  COMMAND ${train} classify ${quick} --limit 300 --epochs 1 --model small --pretrain-steps 30
    --test-limit 100 --out ${smoke}/pretrain)
stag_add_checked_test(NAME stag_train.classify_init_from DEPENDS stag_train.classify_pretrain
  MATCH "initialised [1-9][0-9]* parameters from .*pretrain.safetensors.*val_accuracy: "
  COMMAND ${train} classify ${quick} --limit 300 --epochs 1 --model small --test-limit 100
    --init-from ${smoke}/pretrain/pretrain.safetensors --out ${smoke}/init_from)
stag_add_checked_test(NAME stag_train.classify_init_from_other_preset DEPENDS stag_train.classify_pretrain
  EXIT error MATCH "holds preset 'small'; pass --model small"
  NEEDS ${smoke}/pretrain/pretrain.safetensors
  COMMAND ${train} classify ${quick} --limit 300 --epochs 1 --model pre
    --init-from ${smoke}/pretrain/pretrain.safetensors --out ${smoke}/init_other)

# A data set that is not installed: status 77 and a message naming what is missing and how to
# install it (these two expect 77, so it is not read as a skip).
stag_add_checked_test(NAME stag_train.missing_data EXIT 77
  ENVIRONMENT "STAG_DATA_DIR=${CMAKE_BINARY_DIR}/no-such-data;OMP_WAIT_POLICY=passive"
  MATCH "STAG_DATA_DIR=.*no-such-data has no npm/ folder \\(run tools/data.sh\\)"
  COMMAND ${train} classify --threads 1 --out ${smoke}/missing_data)
stag_add_checked_test(NAME stag_train.missing_fortunes EXIT 77
  ENVIRONMENT "STAG_FORTUNES_DIR=${CMAKE_BINARY_DIR}/no-such-fortunes;OMP_WAIT_POLICY=passive"
  MATCH "no-such-fortunes.*run tools/data.sh"
  COMMAND ${train} lm --threads 1 --out ${smoke}/missing_fortunes)

# stag-generate samples from the checkpoint that stag_train.lm wrote (its preset and tokenizer).
# Where that run was skipped (no data set), these report skipped too (NEEDS).
if(TARGET stag-generate)
  set(generate $<TARGET_FILE:stag-generate>)
  set(lm_ckpt ${smoke}/lm/model.safetensors)
  stag_add_checked_test(NAME stag_train.lm_generate DEPENDS stag_train.lm NEEDS ${lm_ckpt}
    MATCH "model: small \\(char tokeniser, f32 weights\\).*tokens_per_s: " VALUES "new_tokens >= 1"
    COMMAND ${generate} --checkpoint ${lm_ckpt} --prompt "The " --max-new-tokens 16 --threads 1 --seed 2)
  # It translates with the encoder-decoder checkpoints of stag_train.g2p and stag_train.seq2seq,
  # and runs a beam search with the language model's.
  stag_add_checked_test(NAME stag_train.g2p_translate DEPENDS stag_train.g2p
    NEEDS ${smoke}/g2p/model.safetensors
    MATCH "1\t1\t-?[0-9.]+\t[A-Z].*1\t2\t.*model: g2p small, beam 3; 1 lines"
    COMMAND ${generate} --checkpoint ${smoke}/g2p/model.safetensors --prompt "stag" --beam 3
      --n-best 2 --threads 1)
  stag_add_checked_test(NAME stag_train.seq2seq_translate DEPENDS stag_train.seq2seq
    NEEDS ${smoke}/seq2seq/model.safetensors MATCH "model: seq2seq small, beam 1; 500 lines"
    COMMAND ${generate} --checkpoint ${smoke}/seq2seq/model.safetensors
      --prompt-file ${smoke}/digits.tsv --threads 1)
  # stag-export turns each task's checkpoint into ONNX models (checked by ONNX's checker).
  if(TARGET stag-export)
    foreach(task classify lm g2p seq2seq)
      set(out ${smoke}/onnx/${task}.onnx)
      set(wrote "wrote .*${task}\\.onnx")
      if(task STREQUAL "g2p" OR task STREQUAL "seq2seq")
        set(out ${smoke}/onnx/${task})
        set(wrote "wrote .*${task}/encoder\\.onnx.*wrote .*${task}/decoder\\.onnx")
      endif()
      stag_add_checked_test(NAME stag_export.${task} DEPENDS stag_train.${task}
        NEEDS ${smoke}/${task}/model.safetensors MATCH "${wrote}"
        COMMAND $<TARGET_FILE:stag-export> --checkpoint ${smoke}/${task}/model.safetensors
          --out ${out})
    endforeach()
    stag_add_checked_test(NAME stag_export.g2p_attention_op DEPENDS stag_train.g2p
      NEEDS ${smoke}/g2p/model.safetensors MATCH "wrote .*g2p_attn/decoder\\.onnx"
      COMMAND $<TARGET_FILE:stag-export> --checkpoint ${smoke}/g2p/model.safetensors
        --out ${smoke}/onnx/g2p_attn --attention-op)
    stag_add_checked_test(NAME stag_export.not_a_task EXIT error
      MATCH "not a stag checkpoint"
      COMMAND $<TARGET_FILE:stag-export> --checkpoint ${PROJECT_SOURCE_DIR}/tests/hf/gpt2/model.safetensors
        --out ${smoke}/onnx/none.onnx)
  endif()
  stag_add_checked_test(NAME stag_train.lm_beam DEPENDS stag_train.lm NEEDS ${lm_ckpt}
    MATCH "1\t-?[0-9.]+\tThe .*2\t-?[0-9.]+\tThe .*model: small, beam 3"
    COMMAND ${generate} --checkpoint ${lm_ckpt} --beam 3 --n-best 2 --max-new-tokens 8
      --prompt "The " --threads 1)
  stag_add_checked_test(NAME stag_train.lm_n_best_needs_beam DEPENDS stag_train.lm NEEDS ${lm_ckpt}
    EXIT error MATCH "--n-best needs --beam"
    COMMAND ${generate} --checkpoint ${lm_ckpt} --n-best 2 --prompt "The ")
  # A tokeniser file with a field of the wrong JSON type: an error naming the file and the field
  # (it was nlohmann's type_error, uncaught: SIGABRT).
  file(WRITE ${smoke}/type5_tokenizer.json "{\"type\": 5}\n")
  stag_add_checked_test(NAME stag_train.generate_bad_tokenizer DEPENDS stag_train.lm NEEDS ${lm_ckpt}
    EXIT error
    MATCH "stag-generate: tokenizer: \"type\" is 5, not a string .*\\(in .*type5_tokenizer.json\\)"
    COMMAND ${generate} --checkpoint ${lm_ckpt} --tokenizer ${smoke}/type5_tokenizer.json
      --max-new-tokens 4)
  # A cache that cannot fit in memory is refused by its size (it said "weight ... is not a parameter").
  stag_add_checked_test(NAME stag_train.generate_huge_max_len DEPENDS stag_train.lm NEEDS ${lm_ckpt}
    EXIT error
    MATCH "a cache of 100000000 positions \\(max_len\\) needs [0-9.]+ GiB of key/value cache"
    COMMAND ${generate} --checkpoint ${lm_ckpt} --max-len 100000000 --max-new-tokens 4)
endif()

# A picture that cannot be written (model.svg is a folder here) is reported; the run goes on.
add_test(NAME stag_train.svg_fail_setup COMMAND ${CMAKE_COMMAND} -E make_directory ${smoke}/svgfail/model.svg)
set_tests_properties(stag_train.svg_fail_setup PROPERTIES LABELS unit FIXTURES_SETUP svgfail)
stag_add_checked_test(NAME stag_train.svg_fail FIXTURES_REQUIRED svgfail
  MATCH "could not draw the model graph .*training is unaffected.*val_accuracy: "
  COMMAND ${train} classify ${quick} --limit 100 --epochs 1 --model small --test-limit 50
    --out ${smoke}/svgfail)

# Runs users can trust: each of these was accepted, hung or crashed before.
# A second run in a folder that a running one holds is refused, naming it; --force goes on
# (the script exits with the refused run's status).
stag_add_checked_test(NAME stag_train.run_lock EXIT error TIMEOUT 300
  MATCH "is in use by another run \\(pid [0-9]+, started [^)]*stag-train lm.*pass --force.*going on anyway \\(--force\\)"
  COMMAND sh ${STAG_TRAIN_DIR}/run_lock_test.sh ${train} ${smoke}/lock)
# Resuming with another batch size would replay other batches (and used to spin forever when the
# saved position lay past the new epoch's end): refused, naming both values.
stag_add_checked_test(NAME stag_train.resume_other_batch_size DEPENDS stag_train.lm TIMEOUT 120
  NEEDS ${smoke}/lm/model.safetensors EXIT error
  MATCH "--batch-size 64 \\(the checkpoint's run had 8\\): a resumed run must see the same batches"
  COMMAND ${train} lm ${quick} --limit 300 --max-steps 8 --batch-size 64 --max-len 32 --accumulation 2
    --out ${smoke}/lm --resume ${smoke}/lm/model.safetensors)
# Flags that used to be accepted (or silently clamped).
stag_add_checked_test(NAME stag_train.negative_max_steps EXIT error MATCH "--max-steps: -5 is negative"
  COMMAND ${train} lm --max-steps -5 --out ${smoke}/neg_steps)
stag_add_checked_test(NAME stag_train.negative_checkpoint_every EXIT error
  MATCH "--checkpoint-every: -3 is negative"
  COMMAND ${train} --checkpoint-every -3 --out ${smoke}/neg_checkpoint)
stag_add_checked_test(NAME stag_train.negative_eval_every EXIT error MATCH "--eval-every: -1 is negative"
  COMMAND ${train} g2p --eval-every -1 --out ${smoke}/neg_eval)
stag_add_checked_test(NAME stag_train.bpe_vocab_above_preset EXIT error
  MATCH "--bpe-vocab 100000 is above the 2048 ids of the preset's vocabulary"
  COMMAND ${train} lm ${quick} --model small-bpe --tokenizer bpe --bpe-vocab 100000 --limit 50
    --max-steps 1 --out ${smoke}/bpe_vocab)
stag_add_checked_test(NAME stag_train.classify_max_len_above_preset EXIT error
  MATCH "--max-len 1000 is above the 128 positions of preset 'small'"
  COMMAND ${train} classify ${quick} --model small --max-len 1000 --limit 50 --epochs 1 --out ${smoke}/max_len)
# An unwritable checkpoint location is found before step 1, not at the end of the run.
file(WRITE ${smoke}/not_a_folder "a file where the checkpoint's folder should be\n")
stag_add_checked_test(NAME stag_train.unwritable_checkpoint EXIT error
  MATCH "not_a_folder/model.safetensors: cannot create its folder"
  COMMAND ${train} lm ${quick} --limit 50 --max-steps 3 --batch-size 2 --max-len 16 --out ${smoke}/unwritable
    --save ${smoke}/not_a_folder/model.safetensors)
