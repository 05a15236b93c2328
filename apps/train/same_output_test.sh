#!/bin/sh
# A program's output must not change with some flags: runs COMMAND, then COMMAND FLAGS..., and
# compares what each printed before its '---' line. Prints the second run's output (for the
# test's MATCH), or both texts and fails.
#   same_output_test.sh "COMMAND" FLAGS...
cmd=$1
shift
a=$(eval "$cmd") || { echo "$a"; exit 1; }
b=$(eval "$cmd" '"$@"') || { echo "$b"; exit 1; }
text_a=$(printf '%s\n' "$a" | sed '/^---$/,$d')
text_b=$(printf '%s\n' "$b" | sed '/^---$/,$d')
printf '%s\n' "$b"
if [ -z "$text_a" ] || [ "$text_a" != "$text_b" ]; then
  printf 'without %s:\n%s\n' "$*" "$text_a"
  exit 1
fi
