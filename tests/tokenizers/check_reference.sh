#!/usr/bin/env bash
# Checks stag-tokenize against an outside reference encoder on every line of the fortunes:
# the ids must be equal line for line, and decoding stag's ids must give back each line exactly.
#   check_reference.sh gpt2|llama3 STAG_TOKENIZE NPM_DIR WORK_DIR   (STAG_DATA_DIR/npm, when set, wins)
# gpt2: GPT-2's vocab.json + merges.txt, reference gpt-3-encoder (GPT-2's own encoder in JS).
# llama3: a tokenizer.json made from llama3-tokenizer-js's vocabulary (Llama 3's Split regex,
# ignore_merges, 256 added tokens), reference that package's encoder.
# llama2: a tokenizer.json in Llama 2's layout made from llama-tokenizer-js's vocabulary
# (SentencePiece-style BPE: "▁" for spaces, byte fallback), reference that package's encoder.
# A line that spells one of Llama 2's added tokens (<s>) cannot come back exactly: the text
# after it gets its own "▁", decoded as a space (as in Hugging Face's tokenizers); such lines
# are counted and left out of the round trip.
# Reports skipped (77) where node, the npm packages or the fortunes are not installed.
set -euo pipefail
kind=$1 tokenize=$2 npm=${STAG_DATA_DIR:+$STAG_DATA_DIR/npm} work=$4
npm=${npm:-$3}
here=$(cd "$(dirname "$0")" && pwd)
fortunes=/usr/share/games/fortunes
skip() { echo "skipped: $*"; exit 77; }
command -v node >/dev/null || skip "node is not installed (apt-get install nodejs)"
[ -d "$fortunes" ] || skip "$fortunes is missing (tools/data.sh --only fortunes)"
case $kind in
  gpt2) pkg=$npm/gpt-3-encoder@1.1.4 ;;
  llama3) pkg=$npm/llama3-tokenizer-js@1.2.0 ;;
  llama2) pkg=$npm/llama-tokenizer-js@1.2.2 ;;
  *) echo "unknown kind $kind" >&2; exit 2 ;;
esac
[ -f "$pkg/.complete" ] || skip "$pkg is missing (tools/data.sh --only tokenizers)"
mkdir -p "$work"
mapfile -t files < <(find "$fortunes" -type f ! -name '*.dat' ! -name '*.u8' | sort)
[ ${#files[@]} -gt 100 ] || { echo "FAIL: only ${#files[@]} fortune files under $fortunes"; exit 1; }
if [ "$kind" = gpt2 ]; then
  node "$here/gpt2_reference.js" "$pkg" "$work/text.txt" "$work/ref.ids" "${files[@]}"
  args=(--vocab "$pkg/encoder.json" --merges "$pkg/vocab.bpe")
else
  node "$here/${kind}_reference.js" "$pkg" "$work/tokenizer.json" "$work/text.txt" "$work/ref.ids" \
    "${files[@]}"
  args=(--tokenizer "$work/tokenizer.json")
fi
lines=$(wc -l <"$work/text.txt")
[ "$lines" -gt 100000 ] || { echo "FAIL: the reference wrote only $lines lines"; exit 1; }
"$tokenize" "${args[@]}" --input "$work/text.txt" >"$work/stag.ids"
if ! cmp -s "$work/stag.ids" "$work/ref.ids"; then
  echo "FAIL: stag's ids differ from the reference's; first differing lines (line: stag | reference):"
  paste -d'|' "$work/stag.ids" "$work/ref.ids" | awk -F'|' '$1 != $2 { print NR ": " $1 " | " $2; if (++n == 5) exit }'
  exit 1
fi
"$tokenize" "${args[@]}" --decode --input "$work/stag.ids" >"$work/decoded.txt"
kept=""
if [ "$kind" = llama2 ]; then
  # Lines that spell an added token are left out of the round trip (see the top).
  paste -d'\n' "$work/text.txt" "$work/decoded.txt" | awk 'NR % 2 == 1 { t = $0; next }
    { if (index(t, "<s>") || index(t, "</s>") || index(t, "<unk>")) skipped++; else if (t != $0) bad++ }
    END { print skipped + 0 > "/dev/stderr"; exit bad > 0 }' 2>"$work/skipped" ||
    { echo "FAIL: decoding stag's ids does not give back the text"; exit 1; }
  kept=" ($(cat "$work/skipped") lines with an added token left out of it)"
else
  cmp -s "$work/decoded.txt" "$work/text.txt" || { echo "FAIL: decoding stag's ids does not give back the text"; exit 1; }
fi
tokens=$(wc -w <"$work/stag.ids")
echo "ok: $lines lines, $tokens tokens: the same ids as the reference, and an exact round trip$kept"
