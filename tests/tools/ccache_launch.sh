#!/bin/bash
# ctest ccache_launch (label quick): tools/ccache_launch.sh, the build's compiler launcher, gives
# a precompiled header the same .sum in two checkouts of the same files, a different one when a
# header it reads changes, and a file compiled with that header a cache hit in the second
# checkout although g++ wrote the .gch anew there (its bytes differ from the first's), and
# compiles from shells with and without LANG one entry. Exit 77 (skipped) without ccache.
# Usage: ccache_launch.sh LAUNCHER CXX
set -uo pipefail
unset STAG_COMPILE_LOG # set only where this test checks it
launcher=$1
cxx=$2
command -v ccache >/dev/null || { echo "skipped: ccache is not installed"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CCACHE_DIR=$work/cache CCACHE_SLOPPINESS=pch_defines,time_macros CCACHE_PCH_EXTSUM=true
export CCACHE_COMPILERCHECK=content
fail() { echo "FAILED: $*"; exit 1; }
# One checkout: a header, its precompiled form, and a file compiled with it. The header includes
# enough of the standard library that g++ writes different .gch bytes on each run; the
# precompiling is never a cache hit (CCACHE_RECACHE), as on a machine that compiled it itself.
checkout() {
  local d=$work/$1
  mkdir -p "$d"
  printf '#include <map>\n#include <regex>\n#include <string>\n#include <vector>\n' >"$d/pch.hpp"
  printf 'inline int answer() { return %s; }\n' "$2" >>"$d/pch.hpp"
  printf 'int use() { return answer(); }\n' >"$d/use.cpp"
  (cd "$d" && CCACHE_RECACHE=1 CCACHE_BASEDIR=$d sh "$launcher" ccache "$cxx" -x c++-header \
    -MD -MF pch.hpp.gch.d -o pch.hpp.gch -c pch.hpp) || fail "precompiling in $1"
  (cd "$d" && CCACHE_BASEDIR=$d sh "$launcher" ccache "$cxx" -Winvalid-pch -include pch.hpp \
    -o use.o -c use.cpp) || fail "compiling with the precompiled header in $1"
  [ -s "$d/pch.hpp.gch.sum" ] || fail "no pch.hpp.gch.sum in $1"
}
checkout a 42
ccache -z >/dev/null
checkout b 42
hits=$(ccache --print-stats | awk '$1 == "direct_cache_hit" { print $2 }')
cmp -s "$work/a/pch.hpp.gch" "$work/b/pch.hpp.gch" &&
  echo "note: g++ wrote the same .gch twice; the test shows less than it could"
cmp -s "$work/a/pch.hpp.gch.sum" "$work/b/pch.hpp.gch.sum" ||
  fail "two checkouts of the same header got different .sum files"
# The file that reads b's own .gch hits what a made.
[ "$hits" = 1 ] || fail "the file compiled with b's .gch hit the cache ${hits:-0} times, not once"
checkout c 43
cmp -s "$work/a/pch.hpp.gch.sum" "$work/c/pch.hpp.gch.sum" &&
  fail "a changed header kept the .sum of the old one"
# The locale is pinned: a compile from a shell with LANG=C.UTF-8 and one from a shell without
# LANG (CI's root) share the entry.
printf 'int plain() { return 7; }\n' >"$work/plain.cpp"
(cd "$work" && LANG=C.UTF-8 sh "$launcher" ccache "$cxx" -o plain.o -c plain.cpp) ||
  fail "compiling plain.cpp"
ccache -z >/dev/null
(cd "$work" && env -u LANG -u LC_ALL LC_MESSAGES=POSIX sh "$launcher" ccache "$cxx" -o plain.o \
  -c plain.cpp) || fail "compiling plain.cpp without LANG"
hits=$(ccache --print-stats | awk '$1 == "direct_cache_hit" { print $2 }')
[ "$hits" = 1 ] || fail "a compile without LANG missed the entry made with LANG=C.UTF-8"
# A launch that is not a precompiled header is plain ccache, and a failing compile fails.
printf 'int broken( {\n' >"$work/bad.cpp"
(cd "$work" && sh "$launcher" ccache "$cxx" -o bad.o -c bad.cpp 2>/dev/null) &&
  fail "a compile error did not fail the launcher"
# STAG_COMPILE_LOG: one "<seconds> <object> <end time>" line per compile, failed ones too.
(cd "$work" && STAG_COMPILE_LOG=$work/times.log sh "$launcher" ccache "$cxx" -o plain.o \
  -c plain.cpp) || fail "compiling plain.cpp with STAG_COMPILE_LOG"
(cd "$work" && STAG_COMPILE_LOG=$work/times.log sh "$launcher" ccache "$cxx" -o bad.o \
  -c bad.cpp 2>/dev/null) && fail "a compile error with STAG_COMPILE_LOG did not fail the launcher"
now=$(date +%s)
awk -v now="$now" 'NR == 1 && $2 == "plain.o" || NR == 2 && $2 == "bad.o" {
    if ($1 ~ /^[0-9]+\.[0-9][0-9][0-9]$/ && $3 > now - 600 && $3 <= now + 1) ok++ }
  END { exit !(NR == 2 && ok == 2) }' "$work/times.log" ||
  fail "STAG_COMPILE_LOG did not get one timing line per compile: $(cat "$work/times.log")"
echo "ccache_launch: same .sum in two checkouts, a hit for the file compiled with the second .gch, a new .sum for a changed header, one entry for two locales, a timing line per compile; ok"
