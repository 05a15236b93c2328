#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ (clang, ASan + UBSan) in build-fuzz/ and runs each
# for N seconds, one at a time, starting from the committed corpus (new inputs go to
# build-fuzz/fuzz-corpus/<target>/, crashes to build-fuzz/fuzz-findings/<target>/).
#   tools/fuzz.sh [SECONDS_PER_TARGET (default 60)] [TARGET...]
# Installs what is missing first (tools/deps.sh: the build's packages, clang, libclang-rt-14-dev).
# A finding: copy the crash file to tests/fuzz/reproducers/<target>/, fix the reader, and the
# replay ctest (fuzz.replay.<target>) keeps it fixed.
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=tools/deps.sh
source "$STAG_ROOT/tools/deps.sh"
stag_install_debs "${STAG_FUZZ_DEBS[@]}"  # clang and its libFuzzer runtime, when missing
seconds=${1:-60}
shift || true
build=${STAG_FUZZ_BUILD:-$STAG_ROOT/build-fuzz}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(safetensors char_tokenizer bpe_tokenizer text_tokenizer metrics sentiment spam fortunes
           python_doc tsv_pairs gettext cmudict lm_config)
fi
if [ ! -f "$build/CMakeCache.txt" ]; then
  CXX=clang++ cmake -S "$STAG_ROOT" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTAG_FUZZ=ON \
    -DSTAG_BUILD_TESTS=OFF -DSTAG_BUILD_APPS=OFF -DSTAG_NATIVE=OFF >/dev/null
else
  cmake "$build" >/dev/null  # a target added since the last configure needs its rules
fi
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}")
status=0
for t in "${targets[@]}"; do
  corpus=$build/fuzz-corpus/$t findings=$build/fuzz-findings/$t
  mkdir -p "$corpus" "$findings"
  seeds=("$STAG_ROOT/tests/fuzz/corpus/$t")
  [ -d "$STAG_ROOT/tests/fuzz/reproducers/$t" ] && seeds+=("$STAG_ROOT/tests/fuzz/reproducers/$t")
  echo "== fuzz_$t: $seconds s"
  # -rss_limit_mb: a reader must not allocate without bound on small inputs.
  if ! (cd "$findings" && OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive \
        "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 "$corpus" "${seeds[@]}" 2>&1 |
        grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|==[0-9]+==ERROR|SUMMARY|.*deadly signal|.*Test unit written)'); then
    :
  fi
  if compgen -G "$findings/crash-*" >/dev/null || compgen -G "$findings/timeout-*" >/dev/null ||
     compgen -G "$findings/oom-*" >/dev/null || compgen -G "$findings/leak-*" >/dev/null; then
    echo "fuzz_$t: FINDINGS in $findings" >&2
    status=1
  fi
done
exit $status
