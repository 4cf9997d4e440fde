#!/bin/bash
# readme.sh: the README's two commands as a new user runs them, in a fresh
# clone. `./run` with KUBECONFIG set builds, runs the controller under s6
# and a ReplicaSet converges; Ctrl-C (SIGINT) stops everything. `./run`
# without KUBECONFIG starts the local control plane from the cached
# Kubernetes binaries within seconds and prints the export line. `make
# test` exists (not run: it would run this suite again).
#
# The clone is of the repository's HEAD with the working tree's changes
# copied over (modified and untracked files that git does not ignore), so
# that it holds what the next commit will hold.
. "$(dirname "$0")/lib.sh"

CLONE=$TMP/clone
RUNPID=

oneTimeSetUp() {
  git clone -q "$top" "$CLONE" || return 1
  # the working tree's changes, as the next commit will have them
  (cd "$top" && git ls-files -z -m -o --exclude-standard) |
    (cd "$top" && xargs -0 -r cp --parents -P -t "$CLONE") || return 1
  (cd "$top" && git ls-files -z -d) | (cd "$CLONE" && xargs -0 -r rm -f)
  return 0
}

oneTimeTearDown() {
  [ -n "$RUNPID" ] && stop_run
  local left
  left=$(leftovers "$TMP/state")
  # shellcheck disable=SC2086
  [ -n "$left" ] && kill -KILL $left 2>/dev/null
  rs_cleanup
  rm -rf "$RS_STATE_DIR"
}

# leftovers STATE: processes started by a ./run whose XDG_STATE_HOME is
# under STATE (every process of its tree inherits it).
leftovers() {
  local p
  for p in /proc/[0-9]*; do
    [ "${p#/proc/}" = "$$" ] && continue
    if tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -q "^XDG_STATE_HOME=$1"; then
      echo "${p#/proc/}"
    fi
  done
}

# start_run STATE LOG ARGS...: ./run of the clone in the background, as
# from a terminal (SIGINT not ignored, as it is for a shell's background
# jobs), its own XDG_STATE_HOME and RS_STATE_DIR; RUN_ENV: more env(1)
# arguments.
start_run() {
  local state=$1 log=$2
  shift 2
  mkdir -p "$state"
  # shellcheck disable=SC2086
  (cd "$CLONE" && exec env --default-signal=INT ${RUN_ENV:-} XDG_STATE_HOME="$state" \
    RS_STATE_DIR="$state/rs" ./run "$@") >"$log" 2>&1 </dev/null &
  RUNPID=$!
}

# stop_run: SIGINT, as Ctrl-C; the exit status of ./run, 124 on timeout.
stop_run() {
  kill -INT "$RUNPID" 2>/dev/null
  for _ in $(seq 1 200); do kill -0 "$RUNPID" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$RUNPID" 2>/dev/null; then RUNPID=; return 124; fi
  wait "$RUNPID"
  local rc=$?
  RUNPID=
  return $rc
}

test_readme_names_the_two_commands() {
  grep -q '^\./run ' "$CLONE/README.md"
  assertTrue "README shows ./run" $?
  grep -q '^make test ' "$CLONE/README.md"
  assertTrue "README shows make test" $?
  assertTrue "./run is executable in the clone" "[ -x '$CLONE/run' ]"
}

test_make_test_target_exists() {
  out=$(cd "$CLONE" && make -n test 2>&1)
  assertEquals "make -n test succeeds" 0 $?
  assertContains "make test runs the suites" "$out" "tests/run-all.sh"
}

test_run_with_kubeconfig() {
  need_cluster || return
  local state=$TMP/state/kc log=$TMP/run-kc.log ns sup exe
  start_run "$state" "$log"
  if ! wait_for 300 grep -q 'rs-controller is running' "$log"; then
    fail "./run did not start the controller"; cat "$log" >&2; stop_run; return
  fi
  assertContains "progress shown" "$(cat "$log")" "==> [2/4] building"
  assertTrue "built in the clone" "[ -x '$CLONE/build/bin/rs-sync' ]"
  sup=$(s6-svstat -p "$state/rs-controller/service/rs-pipeline")
  exe=$(readlink "/proc/$(pgrep -P "$sup" -x rs-sync)/exe")
  assertEquals "the clone's rs-sync runs" "$CLONE/build/bin/rs-sync" "$exe"
  ns=$(new_ns readme)
  make_rs "$ns" web 3
  assertTrue "a ReplicaSet converges" \
    "wait_for 30 sh -c '[ \$(kubectl -n $ns get pods -o name | wc -l) -eq 3 ]'"
  assertTrue "status.replicas 3" "wait_for 20 rs_status_is $ns web '.replicas == 3'"
  assertTrue "the logs are shown" "wait_for 10 grep -q 'rs-apply\] $ns/web' '$log'"
  stop_run
  assertEquals "Ctrl-C: ./run exits 0" 0 $?
  sleep 1
  left=$(leftovers "$state")
  assertNull "nothing left running after Ctrl-C: $(ps -o pid=,args= -p "${left:-0}" 2>/dev/null)" "$left"
  assertFalse "run.env removed" "[ -e '$state/rs-controller/run.env' ]"
}

test_run_without_kubeconfig_starts_a_local_control_plane() {
  local state=$TMP/state/local log=$TMP/run-local.log t0 kc apiserver
  t0=$(date +%s)
  RUN_ENV="-u KUBECONFIG" start_run "$state" "$log" --quiet
  if ! wait_for 120 grep -q 'export KUBECONFIG=' "$log"; then
    fail "no export line"; cat "$log" >&2; stop_run; return
  fi
  assertTrue "the local control plane in seconds (cached binaries)" \
    "[ $(( $(date +%s) - t0 )) -le 90 ]"
  kc=$(sed -n 's/^ *export KUBECONFIG=//p' "$log" | head -1)
  assertEquals "kubeconfig under STATE" "$state/rs-controller/cluster/kubeconfig" "$kc"
  assertContains "says where kubectl is" "$(cat "$log")" "export PATH=$(k8s_bin_dir):"
  assertTrue "kubectl reaches it" "KUBECONFIG=$kc kubectl get namespaces"
  apiserver=$(cat "$state/rs-controller/cluster/apiserver.pid" 2>/dev/null)
  assertTrue "the controller starts" "wait_for 60 grep -q 'rs-controller is running' '$log'"
  KUBECONFIG=$kc kubectl create namespace local >/dev/null
  KUBECONFIG=$kc make_rs local web 2
  assertTrue "a ReplicaSet converges on the local control plane" \
    "wait_for 30 sh -c '[ \$(KUBECONFIG=$kc kubectl -n local get pods -o name | wc -l) -eq 2 ]'"
  stop_run
  assertEquals "Ctrl-C: ./run exits 0" 0 $?
  sleep 1
  assertFalse "kube-apiserver stopped" "[ -n '$apiserver' ] && kill -0 '$apiserver' 2>/dev/null"
  left=$(leftovers "$state")
  assertNull "nothing left running after Ctrl-C: $(ps -o pid=,args= -p "${left:-0}" 2>/dev/null)" "$left"
}

k8s_bin_dir() { "$top/tests/env/build" --print-dir; }

. "$SHUNIT2"
