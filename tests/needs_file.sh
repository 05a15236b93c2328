#!/bin/sh
# Runs a test command that reads a file another test makes (a checkpoint of a smoke training run
# on a data set). Where that file is absent, because the data set is not installed and the run
# was skipped, this test is reported as skipped too (exit 77, ctest's SKIP_RETURN_CODE), not as
# failed.   needs_file.sh FILE COMMAND [ARG...]
f=$1
shift
if [ ! -e "$f" ]; then
  echo "skipped: $f does not exist (the smoke run that writes it was skipped or failed; see tools/data.sh)"
  exit 77
fi
exec "$@"
