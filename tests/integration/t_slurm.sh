#!/bin/bash
# SPDX-License-Identifier: MIT
# The Slurm SPANK plugin (slurm/spank_cudnnvm.c, build/slurm/cudnnvm.so) in a
# real one-node Slurm started here as root: munged with its own key,
# slurmctld and slurmd with a slurm.conf of this test (its own ports, state,
# spool, logs and pid files in the test's folder, no cgroup). srun --cudnn=X
# gives the task X's environment and not another's; salloc, sbatch --cudnn=X and
# "#SBATCH --cudnn=X" run a batch script with it; a version not installed,
# or whose smoke test failed, fails the job naming it; a job without the
# option sees no change; default= and --cudnn=pin; a broken plugstack
# argument is one clear error line in slurmd's log, and slurmd keeps running.
# Every wait is for a state (node idle, job COMPLETED or FAILED), with a
# bounded number of polls; every daemon is stopped at the end, even on failure.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source-path=SCRIPTDIR source=lib_activate.sh
. "$TESTS_DIR/integration/lib_activate.sh"

PLUGIN=$(dirname "$CUDNNVM")/slurm/cudnnvm.so
for t in munged slurmctld slurmd srun sbatch sinfo scontrol; do
	if ! command -v "$t" >/dev/null 2>&1; then
		skip "the Slurm plugin" "$t is not installed (Debian: slurm-wlm munge libslurm-dev)"
		finish
	fi
done
if [ "$(id -u)" != 0 ]; then
	skip "the Slurm plugin" "starting munged, slurmctld and slurmd needs root"
	finish
fi
if [ ! -f "$PLUGIN" ] && nm "$CUDNNVM" 2>/dev/null | grep -q __asan_init; then
	skip "the Slurm plugin" "a sanitizer build: Slurm's daemons cannot load a plugin built with ASan (make check runs this test)"
	finish
fi
if [ ! -f "$PLUGIN" ]; then
	not_ok "the plugin is built" "no $PLUGIN: run 'make slurm O=$(dirname "$CUDNNVM")'"
	finish
fi

# The plugin links the engine alone: libcvm.a needs no cvm_ symbol it does not define (the CLI's).
LIBCVM=$(dirname "$CUDNNVM")/libcvm.a
undef=$(comm -23 <(nm -u "$LIBCVM" | awk '{ print $2 }' | sort -u) \
	<(nm --defined-only "$LIBCVM" | awk 'NF == 3 { print $3 }' | sort -u) | grep '^cvm_')
if [ -z "$undef" ] && [ -s "$LIBCVM" ]; then ok "libcvm.a needs no symbol of the CLI"; else
	not_ok "libcvm.a needs no symbol of the CLI" "undefined: $undef"
fi

act_root
inst 8.9.7.29 11.8
inst 8.9.6.50 11.8
V897=$STORE/versions/$ID897
V896=$STORE/versions/$ID896

# ---------------------------------------------------------------- the cluster
S=$TEST_TMP/slurm
mkdir -p "$S/state" "$S/spool" "$S/jobs"
# munged wants every folder above its socket searchable by all.
chmod 711 "$TEST_TMP"
chmod 755 "$S"
export SLURM_CONF=$S/slurm.conf
# shellcheck disable=SC2317  # called by the EXIT trap
stop_daemons() {
	local f p
	for f in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munged.pid"; do
		p=$(cat "$f" 2>/dev/null) || continue
		kill "$p" 2>/dev/null
		# Bounded: each daemon is asked, then its pid file's process waited for.
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null
	done
}
trap 'rc=$?; stop_daemons; (exit "$rc"); _cvm_cleanup' EXIT

# free_port: a TCP port nobody listens on now (the kernel's pick).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
CTLD_PORT=$(free_port)
SLURMD_PORT=$(free_port)
for _ in $(seq 20); do [ "$SLURMD_PORT" != "$CTLD_PORT" ] && break; SLURMD_PORT=$(free_port); done
head -c 1024 /dev/urandom >"$S/munge.key"
chmod 400 "$S/munge.key"
cat >"$SLURM_CONF" <<EOF
ClusterName=cvmtest
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$S/munge.sock
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/slurmctld.log
SlurmdLogFile=$S/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SelectType=select/linear
ReturnToService=2
MinJobAge=300
PlugStackConfig=$S/plugstack.conf
NodeName=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
plugstack() { echo "required $PLUGIN $*" >"$S/plugstack.conf"; }
plugstack "root=$ROOT"

# poll N CMD...: CMD until it succeeds, at most N times (0.1 s apart); 1 when it never did.
poll() {
	local n=$1
	shift
	for _ in $(seq "$n"); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}
# shellcheck disable=SC2317  # called through poll
node_idle() { [ "$(sinfo -h -n localhost -o %T 2>/dev/null)" = idle ]; }
# shellcheck disable=SC2317
queue_empty() { [ -z "$(squeue -h 2>/dev/null)" ]; }
job_state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# shellcheck disable=SC2317
job_done() { case $(job_state "$1") in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL) return 0 ;; esac; return 1; }
daemons_fail() { # NAME: report, with the daemons' logs, and end the script
	not_ok "$1" "$(tail -n 15 "$S"/*.log 2>/dev/null)"
	finish
}

munged --key-file="$S/munge.key" --socket="$S/munge.sock" --pid-file="$S/munged.pid" \
	--log-file="$S/munged.log" --seed-file="$S/munged.seed" || daemons_fail "munged starts"
slurmctld -i || daemons_fail "slurmctld starts"
slurmd -N localhost || daemons_fail "slurmd starts"
poll 300 node_idle || daemons_fail "the node is idle"
ok "set-up: munged, slurmctld and slurmd run; sinfo shows the node idle"

# job ARGS...: srun ARGS (bounded), RC, OUT, ERR.
run_job() {
	local tool=$1
	shift
	timeout 60 "$tool" "$@" >"$TEST_TMP/job.out" 2>"$TEST_TMP/job.err"
	RC=$?
	# shellcheck disable=SC2034  # OUT and ERR, as cvm sets them
	OUT=$(cat "$TEST_TMP/job.out")
	ERR=$(cat "$TEST_TMP/job.err")
	CVM_LAST="$tool $*"
	CVM_OUTF=$TEST_TMP/job.out
	CVM_ERRF=$TEST_TMP/job.err
}
# value VAR: VAR=... from the last job's printenv output.
value() { sed -n "s/^$1=//p" "$TEST_TMP/job.out"; }
assert_eq() { # GOT WANT NAME
	if [ "$1" = "$2" ]; then ok "$3"; else not_ok "$3" "got:  $1" "want: $2" "stderr: $ERR"; fi
}

# ---------------------------------------------------------------- srun
run_job srun --cudnn=8.9.7 printenv
assert_rc 0 "srun --cudnn=8.9.7 printenv: exit 0"
assert_eq "$(value CUDNN_PATH)|$(value CUDNN_HOME)" "$V897|$V897" "srun --cudnn=8.9.7: CUDNN_PATH and CUDNN_HOME are 8.9.7's folder"
assert_eq "$(value LD_LIBRARY_PATH)|$(value LIBRARY_PATH)|$(value CPATH)" "$V897/lib|$V897/lib|$V897/include" \
	"srun --cudnn=8.9.7: LD_LIBRARY_PATH, LIBRARY_PATH and CPATH start with its lib and include"
assert_out_lacks "$ID896" "srun --cudnn=8.9.7: nothing of 8.9.6"

LD_LIBRARY_PATH=/pre/ld CPATH=/pre/inc run_job srun --cudnn="$ID896" printenv
assert_eq "$(value CUDNN_PATH)|$(value LD_LIBRARY_PATH)|$(value CPATH)" "$V896|$V896/lib:/pre/ld|$V896/include:/pre/inc" \
	"srun --cudnn=<8.9.6's id>: its folders, put in front of the job's own LD_LIBRARY_PATH and CPATH"
assert_out_lacks "$ID897" "srun --cudnn=<8.9.6's id>: nothing of 8.9.7"

LD_LIBRARY_PATH=$(printf '/p%.0s' $(seq 9000)) run_job srun --cudnn=8.9.7 printenv CUDNN_PATH
assert_rc 1 "srun --cudnn with an LD_LIBRARY_PATH too long to read: the job fails (it is never dropped)"
assert_err_contains "cudnnvm: error: --cudnn=8.9.7: cannot set LD_LIBRARY_PATH" "and says which variable"

CUDNN_PATH=/mine LD_LIBRARY_PATH=/pre/ld run_job srun printenv
assert_rc 0 "srun without --cudnn: exit 0"
assert_eq "$(value CUDNN_PATH)|$(value LD_LIBRARY_PATH)|$(value CPATH)" "/mine|/pre/ld|" \
	"srun without --cudnn: the job's environment as it was"

run_job srun --cudnn=9.9 printenv
assert_rc 1 "srun --cudnn=9.9 (not installed): the job fails"
assert_err_contains "cudnnvm: error: " "srun --cudnn=9.9: the engine's error on the user's stderr"
assert_err_contains "9.9" "srun --cudnn=9.9: the message names the version"
assert_out_lacks "CUDNN_PATH" "srun --cudnn=9.9: the command never ran"

run_job srun --cudnn=nine printenv
assert_rc 255 "srun --cudnn=nine: refused as srun refuses a bad option (255)"
assert_err_contains "cudnnvm: --cudnn 'nine': expected a version (9.1, 8.9.7.29), an installed id or 'pin'" \
	"srun --cudnn=nine: says what is expected"

run_job salloc --cudnn=8.9.6 srun printenv
assert_eq "$RC|$(value CUDNN_PATH)" "0|$V896" "salloc --cudnn=8.9.6 srun printenv: the allocation's steps get 8.9.6's environment"
run_job salloc --cudnn=9.9 true
assert_rc 1 "salloc --cudnn=9.9 (not installed): refused"
assert_err_contains "9.9" "salloc --cudnn=9.9: the message names the version"

SLURM_SPANK_CUDNN=8.9.6 run_job srun printenv
assert_eq "$(value CUDNN_PATH)" "$V896" "SLURM_SPANK_CUDNN=8.9.6 srun: 8.9.6's environment"

# ---------------------------------------------------------------- sbatch
cd "$S/jobs" || exit 1
cat >"$S/jobs/env.sh" <<'EOF'
#!/bin/sh
printf 'CUDNN_PATH=%s\nLD_LIBRARY_PATH=%s\n' "${CUDNN_PATH-<unset>}" "${LD_LIBRARY_PATH-<unset>}"
EOF
cat >"$S/jobs/directive.sh" <<'EOF'
#!/bin/sh
#SBATCH --cudnn=8.9.6
printf 'CUDNN_PATH=%s\n' "${CUDNN_PATH-<unset>}"
EOF
# batch NAME ARGS...: sbatch --parsable ARGS, waits for the job's end; JOB, its state, its output file.
batch() {
	local name=$1
	shift
	JOB=$(sbatch --parsable -o "$S/jobs/$name.%j.out" "$@" 2>"$TEST_TMP/sbatch.err")
	RC=$?
	JOB=${JOB%%;*}
	STATE=
	BOUT=
	[ "$RC" = 0 ] || return 1
	poll 600 job_done "$JOB" || { not_ok "$name: the job ends" "state: $(job_state "$JOB")"; return 1; }
	STATE=$(job_state "$JOB")
	BOUT=$(cat "$S/jobs/$name.$JOB.out" 2>/dev/null)
}
batch b1 --cudnn=8.9.7 env.sh
assert_eq "$RC|$STATE" "0|COMPLETED" "sbatch --cudnn=8.9.7: the job is COMPLETED"
assert_eq "$BOUT" "$(printf 'CUDNN_PATH=%s\nLD_LIBRARY_PATH=%s' "$V897" "$V897/lib")" \
	"sbatch --cudnn=8.9.7: the batch script runs with 8.9.7's environment"
batch b2 directive.sh
assert_eq "$RC|$STATE|$BOUT" "0|COMPLETED|CUDNN_PATH=$V896" "#SBATCH --cudnn=8.9.6: the batch script runs with 8.9.6's"
batch b3 env.sh
assert_eq "$RC|$STATE|$BOUT" "0|COMPLETED|$(printf 'CUDNN_PATH=<unset>\nLD_LIBRARY_PATH=<unset>')" \
	"sbatch without --cudnn: the batch script's environment unchanged"
batch b4 --cudnn=9.9 env.sh
assert_rc 1 "sbatch --cudnn=9.9 (not installed): refused when submitted"
assert_eq "$(grep -c 'cudnnvm: error: .*9\.9' "$TEST_TMP/sbatch.err")" 1 "sbatch --cudnn=9.9: one error line naming 9.9"

# ---------------------------------------------------------------- a failed smoke test, and the node's own check
# smoke_fails: 8.9.7 active, its smoke test run with a sub-library nobody
# but root may read (it fails, and is recorded), then the library mended.
smoke_fails() {
	use_ok 8.9.7 --cuda 11.8 --no-smoke
	chmod 600 "$V897"/lib/libcudnn_ops_infer.so.8.*
	cvm smoke --cuda 11.8 --no-gpu
	chmod 644 "$V897"/lib/libcudnn_ops_infer.so.8.*
	[ "$RC" = 4 ] || not_ok "set-up: the smoke test of 8.9.7 fails" "exit code: $RC" "$ERR"
}
# Submitted (and checked where it is submitted) while 8.9.7 is fine, held,
# then released once its smoke test failed: the task on the node refuses it.
batch_held() {
	JOB=$(sbatch --parsable -H -o "$S/jobs/held.%j.out" --cudnn=8.9.7 env.sh 2>"$TEST_TMP/sbatch.err")
	JOB=${JOB%%;*}
}
batch_held
smoke_fails
scontrol release "$JOB"
poll 600 job_done "$JOB"
assert_eq "$(job_state "$JOB")" FAILED "a version whose smoke test failed after sbatch: the node refuses it, the job FAILED"
assert_eq "$(grep -c "cudnnvm: error: --cudnn: cuDNN $ID897 failed its last smoke test" "$S/jobs/held.$JOB.out")" 1 \
	"the node's refusal is in the job's output, naming the version"
run_job srun --cudnn=8.9.7 printenv
assert_rc 1 "srun --cudnn=8.9.7 (its last smoke test failed): the job fails"
assert_err_contains "cudnnvm: error: --cudnn: cuDNN $ID897 failed its last smoke test" \
	"srun: the refusal names the version and why"
assert_err_contains "fix it and run 'cudnnvm smoke' again, or ask for another version" \
	"srun: the fix is one a job can take (no --force, which srun has not)"
assert_err_lacks "--force" "srun: no --force offered"
assert_out_lacks "CUDNN_PATH" "srun: the command never ran"
rm -f "$STORE/smoke/$ID897.json"

# ---------------------------------------------------------------- pin, default=
printf '8.9.6\n' >"$S/jobs/.cudnn-version"
run_job srun --cudnn=pin printenv
assert_eq "$(value CUDNN_PATH)" "$V896" "srun --cudnn=pin: the working folder's .cudnn-version (8.9.6)"
run_job srun printenv
assert_eq "$(value CUDNN_PATH)" "" "srun without --cudnn: a .cudnn-version is not read"
rm -f "$S/jobs/.cudnn-version"
run_job srun --cudnn=pin printenv
assert_rc 1 "srun --cudnn=pin without a .cudnn-version: the job fails"
assert_err_contains "--cudnn=pin: no .cudnn-version in '$S/jobs' or a folder above it" "--cudnn=pin: says where it looked"

# Where the job is submitted there may be no store (a login node): the node
# decides. One plugstack.conf serves both here, so a store nowhere shows it:
# srun lets the job through, the task on the node refuses it.
plugstack "root=$ROOT" "store=$TEST_TMP/no-store"
run_job srun --cudnn=8.9.7 printenv
assert_rc 1 "store= naming no store: the job fails"
assert_err_lacks "init_post_opt() failed" "no store where the job is submitted: srun lets it through"
assert_err_contains "cudnnvm: error: nothing is installed yet: there is no store" "the task on the node refuses it, saying why"
assert_out_lacks "CUDNN_PATH" "no store: the command never ran"

plugstack "root=$ROOT" "default=8.9.7"
run_job srun printenv
assert_eq "$(value CUDNN_PATH)" "$V897" "default=8.9.7: a job without --cudnn gets 8.9.7"
run_job srun --cudnn=8.9.6 printenv
assert_eq "$(value CUDNN_PATH)" "$V896" "default=8.9.7: --cudnn=8.9.6 wins"

# ---------------------------------------------------------------- uninstall names the job
# A batch job's task maps 8.9.6 (loaded from the CUDNN_PATH the plugin set) until it is cancelled.
cat >"$S/jobs/hold.sh" <<'EOF'
#!/bin/sh
exec python3 -c '
import ctypes, os, sys, time
ctypes.CDLL(os.environ["CUDNN_PATH"] + "/lib/libcudnn.so.8")
open(sys.argv[1], "w").close()
time.sleep(600)' "$1"
EOF
JOB=$(sbatch --parsable -o "$S/jobs/hold.%j.out" --cudnn=8.9.6 hold.sh "$S/jobs/held.ready")
JOB=${JOB%%;*}
if poll 600 test -e "$S/jobs/held.ready"; then
	cvm uninstall 8.9.6 --cuda 11.8
	assert_rc 1 "uninstall of a version a running job maps: refused"
	assert_err_matches "in use by 1 running process: [0-9]+ \\(python3, Slurm job $JOB\\)" \
		"the refusal names the process and its Slurm job id ($JOB)"
else
	not_ok "a batch job maps 8.9.6 (set-up)" "state: $(job_state "$JOB")" "$(cat "$S/jobs/hold.$JOB.out" 2>/dev/null)"
fi
scancel "$JOB"
poll 600 job_done "$JOB"

# ---------------------------------------------------------------- a broken argument
# slurmd reads plugstack.conf when it starts: restarted on the broken file, it logs and runs on.
plugstack "root=$ROOT" "colour=blue" "store=relative/store"
old_slurmd=$(cat "$S/slurmd.pid")
kill "$old_slurmd"
# shellcheck disable=SC2016  # for the child shell
poll 100 sh -c '! kill -0 "$1" 2>/dev/null' _ "$old_slurmd"
slurmd -N localhost || daemons_fail "slurmd starts again"
# shellcheck disable=SC2317  # called through poll
logged() { grep -q "error: cudnnvm: plugstack.conf: argument 'colour=blue': unknown argument (expected root=DIR, store=DIR or default=VERSION)\$" "$S/slurmd.log"; }
if poll 300 logged; then ok "a broken plugstack argument: slurmd's log names it and says why"; else
	not_ok "a broken plugstack argument: slurmd's log names it and says why" "$(tail -n 10 "$S/slurmd.log")"
fi
check "store=relative/store: slurmd's log says it must be absolute" grep -q \
	"error: cudnnvm: plugstack.conf: argument 'store=relative/store': expected an absolute path\$" "$S/slurmd.log"
poll 300 node_idle || daemons_fail "the node is idle again"
ok "a broken plugstack argument: slurmd runs on (the node is idle)"
run_job srun printenv HOME
assert_rc 0 "a broken plugstack argument: a job without --cudnn runs"
run_job srun --cudnn=8.9.7 printenv
assert_rc 1 "a broken plugstack argument: a job with --cudnn fails"
assert_err_contains "the cudnnvm plugin's arguments in plugstack.conf are broken (see slurmd's log)" \
	"a broken plugstack argument: the job is told why"
poll 300 queue_empty
finish
