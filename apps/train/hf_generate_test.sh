#!/bin/sh
# stag-generate --checkpoint of a fine-tuning run's checkpoint (stag-train lm --init-hf) against
# --hf of the F32 folder the same run exported (--export-hf): the checkpoint must encode the
# prompt with the folder's own tokeniser and end hypotheses at its <eos>, so both give the same
# output (with --beam: the same n-best list and scores).
#   hf_generate_test.sh STAG_GENERATE CHECKPOINT EXPORTED_FOLDER FLAGS...
gen=$1
ckpt=$2
folder=$3
shift 3
a=$("$gen" --checkpoint "$ckpt" "$@") || { echo "$a"; exit 1; }
b=$("$gen" --hf "$folder" "$@") || { echo "$b"; exit 1; }
text_a=$(printf '%s\n' "$a" | sed '/^---$/,$d')
text_b=$(printf '%s\n' "$b" | sed '/^---$/,$d')
printf '%s\n' "$a" | grep '^model: '
printf '%s\n' "$text_a"
if [ -n "$text_a" ] && [ "$text_a" = "$text_b" ]; then
  echo "the exported folder gives the same"
else
  printf 'the exported folder gives instead:\n%s\n' "$text_b"
  exit 1
fi
