#!/usr/bin/env bash
# Runs the README's quick start on a pristine Debian 12 root, as a new user's machine sees it: a
# `debootstrap --variant=minbase bookworm` root with only git and ca-certificates added (cached as a
# tarball, so later runs start in seconds), the current commit cloned into it, then ./test.sh and/or
# ./run.sh inside it as root. Logs are copied out; test.sh's count and the run's accuracy lines are
# printed; whatever was mounted is unmounted, also on failure or Ctrl-C.
#
# Usage: tools/fresh-machine.sh [--test] [--clang-quick] [--run] [--run-args "ARGS"]...
#                               [--bench "ARGS"] [--logs DIR] [--keep] [--cache DIR] [--refresh]
#                               [--lang L] [--ccache DIR | --no-ccache]
#   --test          run ./test.sh (the default when nothing else is asked for)
#   --clang-quick   then build with clang 14 (and libomp) and run ./test.sh --quick with it
#   --run           run ./run.sh (the classifier)
#   --run-args A    run ./run.sh A (e.g. "lm --max-steps 50"); may be repeated, each runs in turn
#   --bench A       run ./bench.sh A (e.g. "--steps 2"); the commands run in the order test, run,
#                   bench, all in the same root
#   --logs DIR      where the logs go (default: out/fresh-machine/)
#   --keep          keep the root afterwards (its path is printed) instead of deleting it
#   --cache DIR     where the root's tarball is cached (default: $STAG_FRESH_CACHE or
#                   /var/cache/stag-fresh)
#   --refresh       make the cached root anew
#   --lang L        run the commands with LANG=L (default: no LANG, the POSIX locale)
#   --ccache DIR    the compiler cache the root's builds use, bind-mounted (default: the host's
#                   own, `ccache -k cache_dir`, when the host has ccache); --no-ccache: none, a
#                   cold build. The cache holds compiler outputs only: a package the root lacks
#                   still fails its build (CMakeLists.txt, "compiler cache").
# It prints each phase's seconds (root, packages, data, configure, build, ctest, clang-quick, run.sh,
# bench) at the end.
# Needs root and a reachable Debian mirror (and npm's registry for the data sets). It never falls
# back to the host: if the root cannot be made, it fails and says why.
set -euo pipefail

STAG_ROOT=$(cd "$(dirname "$0")/.." && pwd)
do_test=0
clang_quick=0
ccache_dir=${STAG_CCACHE_DIR:-}
runs=()
bench=
do_bench=0
logs=$STAG_ROOT/out/fresh-machine
keep=0
cache=${STAG_FRESH_CACHE:-/var/cache/stag-fresh}
refresh=0
lang=
while [ $# -gt 0 ]; do
  case $1 in
    --test) do_test=1 ;;
    --clang-quick) clang_quick=1 ;;
    --ccache) ccache_dir=${2:?--ccache needs a folder}; shift ;;
    --no-ccache) ccache_dir=none ;;
    --run) runs+=("") ;;
    --run-args) runs+=("${2:?--run-args needs a value}"); shift ;;
    --bench) do_bench=1; bench=${2:?--bench needs a value (\"\" for the defaults)}; shift ;;
    --logs) logs=${2:?--logs needs a folder}; shift ;;
    --keep) keep=1 ;;
    --cache) cache=${2:?--cache needs a folder}; shift ;;
    --refresh) refresh=1 ;;
    --lang) lang=${2:?--lang needs a locale name}; shift ;;
    -h | --help) sed -n '2,30p' "$0" | cut -c3-; exit 0 ;;
    *) echo "fresh-machine: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ $do_test = 0 ] && [ $clang_quick = 0 ] && [ ${#runs[@]} = 0 ] && [ $do_bench = 0 ] && do_test=1
if [ -z "$ccache_dir" ] && command -v ccache >/dev/null; then
  ccache_dir=$(ccache -k cache_dir)
fi
[ "$ccache_dir" = none ] && ccache_dir=
phase_start=$(date +%s)

say() { echo "fresh-machine: $*"; }
die() { echo "fresh-machine: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mounts)"
commit=$(git -C "$STAG_ROOT" rev-parse HEAD) || die "$STAG_ROOT is not a git checkout"
if [ -n "$(git -C "$STAG_ROOT" status --porcelain --untracked-files=no)" ]; then
  say "note: uncommitted changes are not tested; the root gets commit ${commit:0:12}"
fi

# The host needs debootstrap (and nothing else the project needs).
if ! command -v debootstrap >/dev/null; then
  say "installing debootstrap on the host"
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends debootstrap; } >/dev/null ||
    die "could not install debootstrap on the host (is a Debian mirror reachable?)"
fi

# The Debian mirror: the host's own (first Debian archive in its apt sources), else debootstrap's
# default. STAG_DEBIAN_MIRROR overrides both.
mirror=${STAG_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ && $2 ~ /\/debian\/?$/ { print $2; exit }')
fi
if [ -z "$mirror" ] && [ -f /etc/apt/sources.list ]; then
  mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list)
fi

tarball=$cache/bookworm-minbase-git.tar
mkdir -p "$cache" "$logs"
if [ $refresh = 1 ] || [ ! -s "$tarball" ]; then
  start=$(date +%s)
  staging=$(mktemp -d /var/tmp/stag-debootstrap.XXXXXX)
  say "making a pristine bookworm root (minbase + git + ca-certificates) ${mirror:+from $mirror}"
  # shellcheck disable=SC2086
  if ! debootstrap --variant=minbase --include=git,ca-certificates bookworm "$staging" $mirror \
      >"$logs/debootstrap.log" 2>&1; then
    tail -n 20 "$logs/debootstrap.log" >&2
    rm -rf "$staging"
    die "debootstrap failed (log: $logs/debootstrap.log); not falling back to the host"
  fi
  tar -C "$staging" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
  rm -rf "$staging"
  say "root made in $(($(date +%s) - start)) s, cached as $tarball ($(du -h "$tarball" | cut -f1))"
fi

root=$(mktemp -d /var/tmp/stag-fresh.XXXXXX)
mounted=()
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  # Unmount in reverse order; lazily if something inside still holds a mount.
  for ((i = ${#mounted[@]} - 1; i >= 0; --i)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
  done
  if [ $keep = 1 ]; then
    say "kept the root at $root"
  else
    # Only delete once nothing is mounted below it any more.
    if ! grep -q " $root/" /proc/mounts; then rm -rf "$root"; else say "left $root (still mounted)"; fi
  fi
  exit $rc
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM

tar -C "$root" -xf "$tarball"
# What a new machine has that the root lacks: its DNS settings and the certificate authorities
# its network's TLS goes through (on a user's own machine these are the distribution's).
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
for m in proc sys dev dev/pts; do
  mkdir -p "$root/$m"
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    dev) mount --bind /dev "$root/dev" ;;
    dev/pts) mount --bind /dev/pts "$root/dev/pts" ;;
  esac
  mounted+=("$root/$m")
done
# /dev/shm is a tmpfs of the root's own (OpenMP and TBB may use it).
mkdir -p "$root/dev/shm"
mount -t tmpfs shm "$root/dev/shm" && mounted+=("$root/dev/shm")
# The compiler cache, shared with the host: a commit built there before builds in minutes here.
root_ccache=
if [ -n "$ccache_dir" ]; then
  mkdir -p "$ccache_dir" "$root/var/cache/stag-ccache"
  mount --bind "$ccache_dir" "$root/var/cache/stag-ccache" && mounted+=("$root/var/cache/stag-ccache")
  root_ccache=CCACHE_DIR=/var/cache/stag-ccache
fi

# The environment of a new user's root shell: no LANG (the POSIX locale, as in many containers,
# CI systems and ssh sessions; --lang sets one) and nothing of this host's, STAG_NO_DATA included:
# a new machine installs the data sets, so a host setting cannot turn their tests into skips.
in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    ${lang:+LANG=$lang} TERM=dumb ${CI:+CI=$CI} $root_ccache /bin/bash -c "$1"
}
in_root "update-ca-certificates >/dev/null 2>&1" || die "update-ca-certificates failed in the root"
git clone -q --no-hardlinks "$STAG_ROOT" "$root/root/stag"
git -C "$root/root/stag" checkout -q --detach "$commit"
say "root $root, commit ${commit:0:12}, $(nproc) cores, ${lang:+LANG=$lang}${lang:-no LANG (POSIX locale)}, compiler cache: ${ccache_dir:-none}"
phases=("root $(($(date +%s) - phase_start))")

status=0
summary=()
# timed_in_root CMD LOG: runs CMD in the root, its output shown and kept in LOG; sets rc and t.
timed_in_root() {
  local start
  start=$(date +%s)
  set +e
  in_root "$1" 2>&1 | tee "$2"
  rc=${PIPESTATUS[0]}
  set -e
  t=$(($(date +%s) - start))
  [ "$rc" = 0 ] || status=1
}
if [ $do_test = 1 ]; then
  timed_in_root "cd /root/stag && ./test.sh" "$logs/test.log"
  line=$(grep -E '^[0-9]+% tests passed' "$logs/test.log" | tail -n 1 || true)
  stag_line=$(grep -E '^test\.sh: ' "$logs/test.log" | tail -n 1 || true)
  summary+=("./test.sh: exit $rc in ${t} s")
  [ -n "$stag_line" ] && summary+=("$stag_line")
  summary+=("ctest: ${line:-no summary line (see $logs/test.log)}")
  # test.sh's own phases: "test.sh: seconds: packages N, data N, configure N, build N, ctest N".
  test_phases=$(sed -nE 's/^test\.sh: seconds: (.*)$/\1/p' "$logs/test.log" | tail -n 1)
  IFS=, read -ra parts <<<"$test_phases"
  for p in "${parts[@]}"; do phases+=("${p# }"); done
  line=$(grep -E '^stag: compiler cache: ' "$logs/test.log" | tail -n 1 || true)
  [ -n "$line" ] && summary+=("$line")
fi
if [ $clang_quick = 1 ]; then
  # clang 14 stays a supported compiler: its own build (libomp for OpenMP) and the quick label.
  timed_in_root "cd /root/stag && CC=clang CXX=clang++ STAG_BUILD_DIR=/root/stag/build-clang ./test.sh --quick" \
    "$logs/clang-quick.log"
  stag_line=$(grep -E '^test\.sh: [0-9]' "$logs/clang-quick.log" | tail -n 1 || true)
  summary+=("clang 14, ./test.sh --quick: exit $rc in ${t} s${stag_line:+: ${stag_line#test.sh: }}")
  phases+=("clang-quick $t")
fi
for k in "${!runs[@]}"; do
  args=${runs[k]}
  log=$logs/run$([ "$k" = 0 ] || echo "-$k").log
  timed_in_root "cd /root/stag && ./run.sh $args" "$log"
  summary+=("./run.sh${args:+ $args}: exit $rc in ${t} s (log: $log)")
  phases+=("run.sh${args:+ $args} $t")
  while IFS= read -r l; do summary+=("  $l"); done < <(grep -E '^[a-z_]*(accuracy|per|wer|bpc|loss|chrf|cer):' "$log" | tail -n 12 || true)
done
if [ $do_bench = 1 ]; then
  timed_in_root "cd /root/stag && ./bench.sh $bench" "$logs/bench.log"
  summary+=("./bench.sh${bench:+ $bench}: exit $rc in ${t} s")
  phases+=("bench.sh $t")
  while IFS= read -r l; do summary+=("  $l"); done < <(grep -E '^bench\.[a-z]+\.(speedup_train|speedup_infer|train_step_ms|infer_ms):' "$logs/bench.log" | head -n 12 || true)
fi
say "logs in $logs"
for l in "${summary[@]}"; do say "$l"; done
say "phases (seconds): $(IFS=,; echo "${phases[*]}" | sed 's/,/, /g'); all $(($(date +%s) - phase_start))"
# test.sh's own count last (ctest's "100% tests passed" counts skips as passes).
if [ $do_test = 1 ]; then
  grep -E '^test\.sh: ' "$logs/test.log" | tail -n 1 || echo "test.sh printed no summary line (see $logs/test.log)"
fi
exit $status
