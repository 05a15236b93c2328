#!/usr/bin/env bash
# The main job: installs what is missing (Debian packages and the data set the task needs), builds
# stag-train (Release) and trains. With no arguments it trains the articles' text classifier on
# the UCI sentiment sentences, shows a progress line, reports validation and test accuracy next to
# a bag-of-words baseline and saves the checkpoint under runs/classify/. Arguments go to
# stag-train: ./run.sh lm, ./run.sh g2p, ./run.sh classify --data spam,
# ./run.sh seq2seq --data your-pairs.tsv, ./run.sh --help. It fails (status 3) when the trained
# model does no better than chance (--fail-at-chance).
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/deps.sh
source "$STAG_ROOT/tools/deps.sh"
stag_install_debs

# The data set of this run: the task (first argument) and --data pick it.
task=classify
data=
prev=
pretrain=0
for a in "$@"; do
  case $a in lm | g2p | classify | seq2seq) [ -z "$prev" ] && task=$a ;; esac
  [ "$prev" = --data ] && data=$a
  case $a in --data=*) data=${a#--data=} ;; esac
  # Masked-LM pretraining (classify --pretrain-steps N) reads the English fortunes.
  [ "$prev" = --pretrain-steps ] && [ "$a" != 0 ] && pretrain=1
  case $a in --pretrain-steps=0) ;; --pretrain-steps=*) pretrain=1 ;; esac
  prev=$a
done
case $task:$data in
  classify:spam) set_name=spam ;;
  classify:langid | classify:zh | lm:* ) set_name=fortunes ;;
  g2p:*) set_name=cmudict ;;
  seq2seq:*) set_name= ;;  # the user's own file
  *) set_name=sentiment ;;
esac
[ "$task:$pretrain" = classify:1 ] && [ "$set_name" != fortunes ] && set_name=$set_name,fortunes
if [ -n "$set_name" ] && ! "$STAG_ROOT/tools/data.sh" --check --only "$set_name" >/dev/null 2>&1; then
  case $set_name in sentiment* | spam* | cmudict) command -v npm >/dev/null || stag_install_debs npm ;; esac
  "$STAG_ROOT/tools/data.sh" --only "$set_name"
fi

BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
stag_configure_build "$BUILD" stag-train
# OMP_WAIT_POLICY: stag-train chooses by the machine's load unless it is set (runtime/cpu/omp_policy.hpp).
# A relative --data file (seq2seq) is the caller's, not the repository's: made absolute before
# the cd below.
args=()
prev=
for a in "$@"; do
  if [ "$prev" = --data ] && [ -e "$a" ]; then
    a=$(cd "$(dirname "$a")" && pwd)/$(basename "$a")
  elif [[ $a == --data=* ]] && [ -e "${a#--data=}" ]; then
    f=${a#--data=}
    a=--data=$(cd "$(dirname "$f")" && pwd)/$(basename "$f")
  fi
  args+=("$a")
  prev=$a
done
cd "$STAG_ROOT"
# Run folders (checkpoint, metrics, config) go to runs/<task>/ (ignored by git).
# --fail-at-chance: the main job fails (status 3) when the model it trained does no better than
# chance (classify: the majority class; lm: a unigram model), so a run that learnt nothing is
# never reported as a success.
# g2p and lm: --precision auto, bf16 matmuls where the CPU multiplies bf16 natively (AVX512-BF16,
# AMX) and the preset has bf16 graphs (the defaults do), f32 elsewhere, unless the arguments
# choose. Measured (docs/training.md): g2p, the same error per step at 1.45x the steps per
# minute; lm's default run, test bpc 2.210 against f32's 2.208 in 290 s against 457 s. Not for
# classify, whose test accuracy moved by more than its seed-to-seed spread in one of two seeds.
precision=()
if [ "$task" = g2p ] || [ "$task" = lm ]; then
  precision=(--precision auto)
  for a in "$@"; do
    case $a in --precision | --precision=*) precision=() ;; esac
  done
fi
exec "$BUILD/apps/train/stag-train" "${args[@]}" "${precision[@]}" --fail-at-chance
