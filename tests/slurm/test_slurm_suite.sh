#!/usr/bin/env bash
# tests/slurm/test_slurm_suite.sh — the suite under Slurm for real (ctest label `slurm`):
# on a one-node cluster (local_cluster.sh) a cpu-ddp entry at 2 tasks with TB_MPIRUN=srun
# must give the rows mpirun gives (final loss, parameter checksum), a single-process run
# inside an sbatch script must run (one process, not its allocation's tasks), a killed
# task must end the job with the suite's `failed: ... exited with status N` row, and the
# cluster is torn down on every exit. Exit 0 passed, 1 failed, 77 skipped (the reason is printed).
# Usage: test_slurm_suite.sh TRAINBENCH WORKDIR
set -uo pipefail

tb=${1:?usage: test_slurm_suite.sh TRAINBENCH WORKDIR}
work=${2:?usage: test_slurm_suite.sh TRAINBENCH WORKDIR}
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/local_cluster.sh

skip() { echo "skipped: $*"; exit 77; }
fail() {
  echo "FAIL: $*"
  for f in "$work"/*/log.txt "$work"/cluster/log/*.log; do
    [ -f "$f" ] && { echo "--- $f (last 20 lines)"; tail -n 20 "$f"; }
  done
  exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root: the test cluster's slurmd starts tasks as their user"
for p in munged slurmctld slurmd srun scontrol sinfo squeue scancel python3; do
  command -v "$p" >/dev/null ||
    skip "$p not found (Debian: slurmctld slurmd slurm-client munge, installed by cmake/install-deps.sh)"
done
# The PMI plugin this build's MPI speaks, from the suite's own srun line (harness/mpi_launch.cpp).
srun_line=$(env -u TB_MPIRUN_FLAGS TB_MPIRUN=srun "$tb" launcher 2 2>&1) || fail "trainbench launcher: $srun_line"
plugin=$(sed -n 's/.*--mpi=\([^ ]*\).*/\1/p' <<< "$srun_line")
[ -n "$plugin" ] || skip "no PMI plugin known for this build's MPI ($srun_line): Slurm and it share none"

dir=$work/cluster
bash "$cluster" stop "$dir"  # what a killed earlier run (ctest's timeout: SIGKILL) left
rm -rf "$work"
mkdir -p "$work"
suite_pid=
cleanup() {
  # A suite still running (this script was interrupted): TERM reaches its MPI job too.
  [ -n "$suite_pid" ] && kill -TERM "$suite_pid" 2>/dev/null && sleep 2
  bash "$cluster" stop "$dir"
  local left
  left=$(bash "$cluster" pids "$dir")
  [ -z "$left" ] || { echo "FAIL: processes of the test cluster still alive: $left"; exit 1; }
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t0=$SECONDS
bash "$cluster" start "$dir" || fail "the test cluster did not start"
export SLURM_CONF=$dir/slurm.conf
plugins=$(srun --mpi=list 2>&1 | tr -s '\n\t' '  ')
grep -qw "$plugin" <<< "$plugins" ||
  skip "Slurm and this build's MPI share no PMI plugin: the MPI speaks $plugin, srun --mpi=list says: $plugins"
echo "cluster up in $((SECONDS - t0)) s; srun line: $srun_line"

cat > "$work/ddp.suite" <<'EOF'
defaults: --epochs 2 --warmup 0 --reps 1 --seed 1
slurm-ddp: --model mlp --layers 32,48,4 --samples 2000 --batch 100 --lr 0.2 --shuffle --backends cpu-ddp --world-sizes 2 --threads 1
EOF

# status, final_loss and param_checksum of each row of RESULTS.csv, one line per row.
rows() {
  python3 - "$1" <<'EOF'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print(r["status"], r["final_loss"], r["param_checksum"])
EOF
}

# suite OUT [VAR=value ...]: the suite under `timeout`, its exit status in $rc. In the
# background, so that a TERM to this script is handled at once (bash defers traps until
# a foreground command ends).
suite() {
  local out=$1; shift
  env -u TB_MPIRUN_FLAGS -u TB_FAULT "$@" timeout 100 "$tb" suite "$work/ddp.suite" --out "$work/$out" \
    > "$work/$out.stdout" 2>&1 &
  suite_pid=$!
  wait "$suite_pid"
  rc=$?
  suite_pid=
}

t0=$SECONDS
suite srun TB_MPIRUN=srun
[ "$rc" = 0 ] || fail "the suite under srun exited $rc: $(cat "$work/srun.stdout")"
echo "srun run: $((SECONDS - t0)) s"
suite mpirun -u TB_MPIRUN -u SLURM_CONF
[ "$rc" = 0 ] || fail "the suite under mpirun exited $rc: $(cat "$work/mpirun.stdout")"
by_srun=$(rows "$work/srun/results.csv") by_mpirun=$(rows "$work/mpirun/results.csv")
echo "rows (status final_loss param_checksum): srun: $by_srun / mpirun: $by_mpirun"
[ -n "$by_srun" ] && [[ "$by_srun" == ok* ]] || fail "no ok row under srun: $by_srun"
[ "$by_srun" = "$by_mpirun" ] || fail "srun and mpirun rows differ"

# An sbatch script is one process, though it carries the allocation's SLURM_NTASKS=2
# and SLURM_PROCID=0: a single-process run there is not "started as 2 processes" (it
# was refused, exit 2). Inside an srun step of 2 tasks it is, and stays refused.
cat > "$work/batch.sh" <<BATCH
#!/bin/bash
"$tb" run --backend cpu-omp --model linear --layers 8,1 --samples 256 --batch 32 --epochs 1 --reps 1 \\
  --out "$work/batch.csv"
echo "run exit \$?"
srun -n 2 --mpi=$plugin "$tb" run --backend cpu-omp --model linear --layers 8,1 --samples 256 --batch 32 \\
  --out "$work/step.csv"
echo "srun exit \$?"
BATCH
chmod +x "$work/batch.sh"
timeout 100 sbatch --wait -n 2 -o "$work/batch.out" "$work/batch.sh" > /dev/null ||
  fail "the sbatch job failed: $(cat "$work/batch.out" 2>&1)"
echo "sbatch -n 2: $(tr '\n' ' ' < "$work/batch.out")"
grep -qx "run exit 0" "$work/batch.out" || fail "a cpu-omp run in an sbatch script did not exit 0: $(cat "$work/batch.out")"
[ "$(wc -l < "$work/batch.csv")" = 2 ] || fail "expected a header and one row in batch.csv"
grep -q "a single-process backend started as 2 processes" "$work/batch.out" ||
  fail "cpu-omp in an srun step of 2 tasks was not refused: $(cat "$work/batch.out")"
[ ! -e "$work/step.csv" ] || fail "the refused srun step wrote step.csv"

# One task killed at its 3rd step: srun ends the step (--kill-on-bad-exit), the suite
# writes one failed row naming the launcher's exit status, and exits 1, in seconds.
t0=$SECONDS
suite killed TB_MPIRUN=srun TB_FAULT=rank=1,step=3,kind=kill
took=$((SECONDS - t0))
failed=$(rows "$work/killed/results.csv")
echo "killed task: exit $rc after $took s, row: $failed"
[ "$rc" = 1 ] || fail "the suite with a killed task exited $rc, expected 1"
grep -qE '^failed: srun -n 2 exited with status [0-9]+' <<< "$failed" || fail "expected a 'failed: ... exited with status N' row, got: $failed"
[ "$took" -lt 60 ] || fail "the killed job took $took s to end"
echo "passed"
