#!/usr/bin/env bash
# The main job: installs what is missing, builds (Release) and runs stag's default program.
# Arguments are passed on to it.
set -euo pipefail
STAG_ROOT=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tools/deps.sh
source "$STAG_ROOT/tools/deps.sh"
stag_install_debs

BUILD=${STAG_BUILD_DIR:-$STAG_ROOT/build}
stag_configure_build "$BUILD" stag-summary
export OMP_WAIT_POLICY=passive
exec "$BUILD/apps/stag-summary" "$@"
