#!/bin/sh
# Fine-tune a Hugging Face folder, export it (--export-hf), and evaluate the export alone
# (--init-hf EXPORT --eval-only) on the same text: the exported F32 folder must give the same
# validation loss and bits per character as the weights the first run reported, to the printed
# digit (a name, a layout or a transpose lost on the way would change them).
#   hf_roundtrip_test.sh STAG_TRAIN FOLDER OUT_FOLDER FLAGS...
train=$1
folder=$2
out=$3
shift 3
rm -rf "$out"
mkdir -p "$out"
"$train" lm "$@" --init-hf "$folder" --out "$out/tune" --export-hf "$out/hf" >"$out/tune.log" 2>&1 ||
  { cat "$out/tune.log"; exit 1; }
"$train" lm "$@" --init-hf "$out/hf" --eval-only --out "$out/back" >"$out/back.log" 2>&1 ||
  { cat "$out/back.log"; exit 1; }
status=0
for metric in val_loss val_bpc test_bpc; do
  tuned=$(sed -n "s/^$metric: //p" "$out/tune.log")
  back=$(sed -n "s/^$metric: //p" "$out/back.log")
  echo "$metric: fine-tuned $tuned, exported and loaded back $back"
  if [ -z "$tuned" ] || [ "$tuned" != "$back" ]; then status=1; fi
done
grep -E "^(pretrained_val_loss|export_hf_dtype|train_loss_first|train_loss_last):" "$out/tune.log"
exit $status
