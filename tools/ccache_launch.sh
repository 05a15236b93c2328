#!/bin/sh
# The compiler launcher of stag's build (CMakeLists.txt): ccache, with three additions. The first
# two make another checkout (CI's pristine root) hit what this machine compiled.
#
# 1. g++'s precompiled headers (stag_tests' <stag/stag.hpp>, tests/CMakeLists.txt). g++ writes a
# different .gch for the same input on every run, and ccache keys a file compiled with a
# precompiled header on the .gch's bytes. A .gch compiled afresh on this machine and one restored
# from the cache in CI's root would then never share the test files' entries. So, for a compile
# whose output is a .gch:
#   - the old .gch goes first (ccache would otherwise hash it into the new one's key, and g++
#     could read it), so that every checkout asks the cache the same question;
#   - after it, <out>.sum holds a hash of what the .gch is made of: the compile's arguments and
#     the content of every header its dependency file (-MF) lists, paths relative to
#     CCACHE_BASEDIR. With CCACHE_PCH_EXTSUM=true ccache hashes that file instead of the .gch.
#
# 2. The locale is pinned: ccache hashes LANG, LC_ALL, LC_CTYPE and LC_MESSAGES (they change the
# compiler's messages), so a shell with LANG=C.UTF-8 and CI's root, which has no LANG, shared no
# entry at all. The build's compiler messages are therefore English, in UTF-8.
#
# 3. With STAG_COMPILE_LOG=<file> in the build's environment, each compile (other than a .gch)
# appends "<seconds> <object> <end, Unix time>" to the file: where a build's time goes, file by
# file, and when (docs/development.md; `sort -rn <file> | head`).
#
# Usage: ccache_launch.sh CCACHE COMPILER ARGS... (CCACHE_BASEDIR and the settings in the
# environment, as CMakeLists.txt sets them).
set -u
LANG=C.UTF-8
export LANG
unset LC_ALL LC_CTYPE LC_MESSAGES
ccache=$1
shift
out=
dep=
prev=
for a in "$@"; do
  case $prev in
    -o) out=$a ;;
    -MF) dep=$a ;;
  esac
  prev=$a
done
case $out in
  *.gch) ;;
  *)
    [ -n "${STAG_COMPILE_LOG:-}" ] || exec "$ccache" "$@"
    # Timing (STAG_COMPILE_LOG set): one line per compile, hit or miss.
    t0=$(date +%s%N)
    "$ccache" "$@"
    rc=$?
    t1=$(date +%s%N)
    printf '%d.%03d %s %d.%03d\n' $(((t1 - t0) / 1000000000)) $(((t1 - t0) / 1000000 % 1000)) \
      "$out" $((t1 / 1000000000)) $((t1 / 1000000 % 1000)) >>"$STAG_COMPILE_LOG"
    exit $rc
    ;;
esac
rm -f "$out" "$out.sum"
"$ccache" "$@" || exit $?
[ -n "$dep" ] && [ -f "$dep" ] || exit 0 # no dependency file: ccache hashes the .gch itself
base=${CCACHE_BASEDIR:-/nonexistent}
{
  printf '%s\n' "$@" | sed "s|$base||g"
  # The dependency file: "target: dep dep \" lines; every dependency's content, in order.
  sed -e 's/^[^:]*://' -e 's/\\$//' "$dep" | tr ' ' '\n' | sed '/^$/d' | sort -u |
    while IFS= read -r f; do
      printf '%s ' "$f" | sed "s|$base||"
      sha256sum <"$f"
    done
} | sha256sum | cut -d' ' -f1 >"$out.sum.tmp"
mv "$out.sum.tmp" "$out.sum"
