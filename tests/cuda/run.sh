#!/usr/bin/env bash
# ctest's CUDA entries: run.sh PROBE TESTS SPEC [VAR=VALUE]. Skipped (77) when PROBE says no
# GPU can run here; otherwise the Catch2 cases SPEC of TESTS, with VAR=VALUE in the environment.
set -uo pipefail
probe=$1 tests=$2 spec=$3
shift 3
"$probe"
rc=$?
if [ "$rc" -ne 0 ]; then exit "$rc"; fi
exec env "$@" "$tests" "$spec"
