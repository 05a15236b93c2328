#!/usr/bin/env bash
# Data parallelism across hosts (ctest label mpi): each rank runs on a host of its own, a network
# namespace with its own hostname and address, joined to the others by veth pairs on a bridge;
# mpirun runs on a third one and starts the ranks through an agent instead of ssh, and Open MPI
# talks TCP over those links only (no shared memory). One machine can then test what crosses a
# real network interface.
#   hosts.sh equality MPIRUN STAG_MPI_CHECK
#     the equality checks of mpi_check.cpp, one rank per host.
#   hosts.sh kill MPIRUN STAG_TRAIN OUT
#     stag-train classify on 2 hosts; once a checkpoint is written, rank 1's process is killed
#     (SIGKILL). Rank 0 and mpirun must stop with an error within a minute; --resume on the two
#     hosts must then end with the same losses and metrics as a run without the fault.
#   hosts.sh link MPIRUN STAG_TRAIN OUT
#     the same, but rank 1's link is taken down while the ranks all-reduce; rank 0 must stop
#     with a CommError naming the collective within STAG_COMM_TIMEOUT (5 s here), not hang.
#   hosts.sh agent HOST COMMAND...   (Open MPI's plm_rsh_agent: runs COMMAND on HOST)
# Exit 0 passed, 1 failed, 77 skipped (not root, no network namespaces, or no data set).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mode=${1:?usage: hosts.sh equality|kill|link|agent ...}
shift

# The rsh agent: HOST is 10.77.0.N, host N of this test's namespaces (STAG_HOSTS_PREFIX).
if [ "$mode" = agent ]; then
  host=$1
  shift
  ns=${STAG_HOSTS_PREFIX:?}h${host##*.}
  exec ip netns exec "$ns" unshare --uts sh -c "hostname $ns && $*"
fi

mpirun=${1:?}
shift
fail() {
  echo "FAILED: $*" >&2
  exit 1
}
skip() {
  echo "skipped: $*"
  exit 77
}

# The hosts: <prefix>hub (mpirun, the bridge, 10.77.0.254) and <prefix>h1, <prefix>h2 (the
# ranks, 10.77.0.1 and .2). The prefix is unique per run, so tests may run side by side.
prefix=stag$$
hosts=(h1 h2)
teardown() {
  for ns in hub "${hosts[@]}"; do
    for pid in $(ip netns pids "$prefix$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
    ip netns del "$prefix$ns" 2>/dev/null
  done
}
[ "$(id -u)" -eq 0 ] || skip "network namespaces need root"
command -v ip >/dev/null || skip "no ip command (Debian's iproute2)"
command -v unshare >/dev/null || skip "no unshare command (util-linux)"
trap teardown EXIT
ip netns add "${prefix}hub" 2>/dev/null || skip "cannot make network namespaces here (ip netns add failed)"
setup() {
  ip -n "${prefix}hub" link set lo up &&
    ip -n "${prefix}hub" link add br0 type bridge &&
    ip -n "${prefix}hub" addr add 10.77.0.254/24 dev br0 &&
    ip -n "${prefix}hub" link set br0 up || return 1
  local i=0
  for h in "${hosts[@]}"; do
    i=$((i + 1))
    ip netns add "$prefix$h" &&
      ip -n "${prefix}hub" link add "v$i" type veth peer name eth0 netns "$prefix$h" &&
      ip -n "${prefix}hub" link set "v$i" master br0 &&
      ip -n "${prefix}hub" link set "v$i" up &&
      ip -n "$prefix$h" addr add "10.77.0.$i/24" dev eth0 &&
      ip -n "$prefix$h" link set eth0 up &&
      ip -n "$prefix$h" link set lo up || return 1
  done
}
setup || skip "cannot connect network namespaces with veth pairs and a bridge here"

# mpirun on the hub, one rank on each host, TCP over the veth links only.
export STAG_HOSTS_PREFIX=$prefix
mpi=(--host 10.77.0.1,10.77.0.2 -np 2 --mca plm_rsh_agent "$here/hosts.sh agent"
     --mca btl tcp,self --mca oob_tcp_if_include 10.77.0.0/24 --mca btl_tcp_if_include 10.77.0.0/24
     -x OMP_WAIT_POLICY -x OMP_NUM_THREADS -x STAG_COMM_TIMEOUT)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive} OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export STAG_COMM_TIMEOUT=${STAG_COMM_TIMEOUT:-60}
run_mpi() { # at most 10 minutes
  timeout 600 ip netns exec "${prefix}hub" "$mpirun" "${mpi[@]}" "$@"
}
# Each rank on its own host: rank 0 on h1, rank 1 on h2, as their hostnames say.
# Only the ranks' lines: mpirun may warn on stderr (a setpgid refused in a namespace, seen once).
where=$(run_mpi sh -c 'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)"' 2>&1 | grep '^rank ' | sort)
echo "$where"
[ "$where" = "$(printf 'rank 0 on %sh1\nrank 1 on %sh2' "$prefix" "$prefix")" ] ||
  fail "the ranks did not start one on each host"

if [ "$mode" = equality ]; then
  check=$1
  log=$(mktemp)
  run_mpi "$check" >"$log" 2>&1
  rc=$?
  cat "$log"
  [ "$rc" -eq 0 ] || fail "the equality checks across two hosts exited $rc"
  grep -q FAILED "$log" && fail "a check failed"
  echo "ok: the equality checks pass with one rank on each of two hosts (TCP over veth)"
  exit 0
fi

[ "$mode" = kill ] || [ "$mode" = link ] || fail "unknown mode $mode"
train=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
flags=(classify --threads 1 --progress plain --seed 3 --limit 300 --model small --batch-size 16
       --max-steps 40 --checkpoint-every 12 --eval-every 20 --test-limit 100)
"$train" "${flags[@]}" --out "$out/probe" --eval-only --resume /nonexistent >/dev/null 2>"$out/probe.txt"
grep -q "tools/data.sh" "$out/probe.txt" && skip "the sentiment data set is not installed (tools/data.sh)"

# The run without a fault.
run_mpi "$train" "${flags[@]}" --out "$out/ref" >"$out/ref.txt" 2>&1 ||
  { cat "$out/ref.txt"; fail "the run without a fault failed"; }
grep -q "data-parallel over 2 ranks" "$out/ref.txt" || { cat "$out/ref.txt"; fail "it did not run on 2 ranks"; }

# The run with the fault.
STAG_COMM_TIMEOUT=5
ckpt=$out/fault/model.safetensors
run_mpi "$train" "${flags[@]}" --out "$out/fault" >"$out/fault.txt" 2>&1 &
launcher=$!
for _ in $(seq 1 600); do
  [ -s "$ckpt" ] && break
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.2
done
[ -s "$ckpt" ] || { cat "$out/fault.txt"; fail "no checkpoint was written"; }
rank_pid() { # the stag-train process on host $1
  for pid in $(ip netns pids "$prefix$1"); do
    grep -q stag-train "/proc/$pid/cmdline" 2>/dev/null && { echo "$pid"; return; }
  done
}
r0=$(rank_pid h1) r1=$(rank_pid h2)
[ -n "$r0" ] && [ -n "$r1" ] || { cat "$out/fault.txt"; fail "expected a stag-train on each host"; }
start=$(date +%s)
if [ "$mode" = kill ]; then
  kill -9 "$r1"
  echo "killed rank 1 (pid $r1 on ${prefix}h2)"
else
  ip -n "${prefix}hub" link set v2 down
  echo "took rank 1's link down (${prefix}h2, 10.77.0.2)"
fi
# Rank 0 must stop by itself, with an error, well within a minute.
while kill -0 "$r0" 2>/dev/null; do
  [ $(($(date +%s) - start)) -lt 60 ] || { cat "$out/fault.txt"; fail "rank 0 still runs 60 s after the fault"; }
  sleep 0.2
done
took=$(($(date +%s) - start))
[ "$mode" = link ] && ip -n "${prefix}hub" link set v2 up  # let mpirun hear from host 2 again
while kill -0 "$launcher" 2>/dev/null; do
  [ $(($(date +%s) - start)) -lt 120 ] || { kill -9 "$launcher"; cat "$out/fault.txt"; fail "mpirun still runs 120 s after the fault"; }
  sleep 0.2
done
wait "$launcher"
rc=$?
cat "$out/fault.txt"
[ "$rc" -ne 0 ] || fail "mpirun exited 0 after the fault"
if [ "$mode" = link ]; then
  grep -q "stag: rank 0 of 2: .* did not complete within 5 s" "$out/fault.txt" ||
    fail "rank 0's error does not name itself, the collective and the timeout"
fi
echo "ok: rank 0 stopped ${took} s after the fault; mpirun exited $rc"

# Resume on the same two hosts; the end must be the fault-free run's.
STAG_COMM_TIMEOUT=60
at=$(grep -o '"step":[0-9]*' "$out/fault/metrics.jsonl" 2>/dev/null | tail -1 | grep -o '[0-9]*$')
run_mpi "$train" "${flags[@]}" --out "$out/fault" --resume "$ckpt" >"$out/resumed.txt" 2>&1 ||
  { cat "$out/resumed.txt"; fail "--resume on the two hosts failed"; }
first=$(grep -m1 -o '^step [0-9]*' "$out/resumed.txt" | grep -o '[0-9]*$')
[ -n "$first" ] && [ "$first" -gt 1 ] || { cat "$out/resumed.txt"; fail "the resumed run did not go on from the checkpoint"; }
results() { grep -E '^(val|test)_(accuracy|loss): |^steps: ' "$1"; }
# The training log without its timings (step_ms, comm_ms, tokens_per_s, ...).
train_losses() { grep '"split":"train"' "$1" | sed -E 's/,"[a-z_]*(_ms|_per_s)":[^,}]*//g'; }
if [ "$(results "$out/ref.txt")" != "$(results "$out/resumed.txt")" ]; then
  diff <(results "$out/ref.txt") <(results "$out/resumed.txt")
  fail "the resumed run's results differ from the run without a fault"
fi
if ! diff <(train_losses "$out/ref/metrics.jsonl") <(train_losses "$out/fault/metrics.jsonl") >"$out/metrics.diff"; then
  head -20 "$out/metrics.diff"
  fail "the training log differs from the run without a fault"
fi
echo "ok: resumed at step $first (the faulted run had logged up to step ${at:-0}) and ended as the run without a fault:"
results "$out/resumed.txt" | sed 's/^/  /'
