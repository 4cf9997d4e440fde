#!/bin/sh
# run-all.sh [unit|shell|node] [SUITE...]: the test command behind `make test`
# (unit and shell) and `make test-node` (node).
# Unit tests: every build/unit/* (cmocka). Shell tests: every tests/shell/*.sh
# (shunit2). One test cluster (etcd + kube-apiserver) is started for all shell
# suites and always stopped at the end, even when a suite fails. Suites that
# say "# run-all: no cluster" run beside the others.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
what=${1:-all}; [ $# -gt 0 ] && shift
BUILD=${BUILD:-build}
export RS_BIN="$top/$BUILD/bin" PATH="$top/$BUILD/bin:$PATH"
passed=0 failed=0 skipped=0 failures=

count_shunit() {  # reads a suite log; adds its tests to the totals
  r=$(grep -E '^Ran [0-9]+ tests?\.' "$1" | tail -1 | sed -E 's/^Ran ([0-9]+).*/\1/')
  f=$(grep -E '^FAILED \(failures=[0-9]+' "$1" | tail -1 | sed -E 's/.*failures=([0-9]+).*/\1/')
  s=$(grep -oE 'skipped=[0-9]+' "$1" | tail -1 | sed 's/.*=//')
  r=${r:-0}; f=${f:-0}; s=${s:-0}
  passed=$((passed + r - f - s)); failed=$((failed + f)); skipped=$((skipped + s))
}

# run_units DIR LABEL [ENV...]: every unit program of DIR into the totals.
run_units() {
  _dir=$1 _label=$2; shift 2
  for t in "$_dir"/*; do
    [ -x "$t" ] || continue
    log=$(mktemp)
    if env CMOCKA_MESSAGE_OUTPUT=stdout "$@" "$t" >"$log" 2>&1; then st=ok; else st=FAIL; fi
    p=$(grep -cE '^\[       OK \]' "$log"); f=$(grep -cE '^\[  FAILED  \]' "$log")
    [ "$st" = FAIL ] && [ "$f" -eq 0 ] && f=1
    passed=$((passed + p)); failed=$((failed + f))
    echo "$_label $(basename "$t"): $p passed, $f failed"
    if [ "$st" = FAIL ]; then failures="$failures $_label/$(basename "$t")"; cat "$log"; fi
    rm -f "$log"
  done
}

if [ "$what" = all ] || [ "$what" = unit ]; then
  run_units "$BUILD/unit" unit
  # The same under ASan and UBSan (make asan-unit): a bad read or write,
  # undefined behaviour or a leak fails the program, whatever its asserts.
  log=$(mktemp)
  if make -s asan-unit >"$log" 2>&1; then
    run_units build-asan/unit unit-asan \
      ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
  else
    failed=$((failed + 1)); failures="$failures unit-asan(build)"; cat "$log"
  fi
  rm -f "$log"
fi

# report SUITE LOG RC SECONDS: a finished suite into the totals.
report() {
  before=$failed
  count_shunit "$2"
  if [ "$3" -ne 0 ] && [ $failed -eq $before ]; then failed=$((failed + 1)); fi
  if [ $failed -ne $before ]; then
    failures="$failures ${kind:-shell}/$1"; cat "$2"
  else
    grep -E '^(Ran|OK)' "$2" | tail -2 | sed 's/^/  /'
    # a suite's timings, when it prints some (lines "figure: ...")
    grep '^figure: ' "$2" | sed 's/^/  /'
  fi
  echo "${kind:-shell} $1: done in $4 s${5:-}"
}

# run_suite FILE LOG: runs one suite; its status and seconds in LOG.rc.
run_suite() {
  _t=$(date +%s)
  bash "$1" >"$2" 2>&1
  echo "$? $(( $(date +%s) - _t ))" >"$2.rc"
}

if [ "$what" = all ] || [ "$what" = shell ]; then
  suites=${*:-$(ls tests/shell/*.sh 2>/dev/null | grep -v '/lib\.sh$')}
  if [ -n "$suites" ]; then
    logs=$(mktemp -d /tmp/rs-test-logs.XXXXXX) aside=
    export RS_TEST_CLUSTER=$(mktemp -d /tmp/rs-test-cluster.XXXXXX)
    # (the suite the side chain runs is stopped with it)
    trap '[ -n "$aside" ] && { pkill -TERM -P "$aside"; kill "$aside"; } 2>/dev/null; tests/env/cluster down "$RS_TEST_CLUSTER" >/dev/null 2>&1; rm -rf "$RS_TEST_CLUSTER" "$logs"' EXIT INT TERM
    # Suites marked "# run-all: no cluster" need no test cluster: they run
    # one after another beside the cluster suites, which mostly wait on
    # the apiserver, rather than after them.
    clustered= alone=
    for s in $suites; do
      case $s in */*) ;; *) s=tests/shell/$s ;; esac
      [ -f "$s" ] || s=$s.sh
      if grep -q '^# run-all: no cluster' "$s"; then alone="$alone $s"
      else clustered="$clustered $s"; fi
    done
    if [ -n "$alone" ]; then
      ( unset KUBECONFIG
        for s in $alone; do run_suite "$s" "$logs/$(basename "$s" .sh)"; done ) &
      aside=$!
      echo "shell:$(for s in $alone; do printf ' %s' "$(basename "$s" .sh)"; done): running beside the others"
    fi
    if [ -n "$clustered" ]; then
      tests/env/cluster up "$RS_TEST_CLUSTER" --owner $$ || { echo "run-all: fatal: unable to start the test cluster" >&2; exit 111; }
      export KUBECONFIG="$RS_TEST_CLUSTER/kubeconfig"
      export K8S_BIN=$(tests/env/build --print-dir)
      export PATH="$K8S_BIN:$PATH"
    fi
    for s in $clustered; do
      n=$(basename "$s" .sh)
      echo "shell $n: running..."
      run_suite "$s" "$logs/$n"
      read -r rc secs <"$logs/$n.rc"
      report "$n" "$logs/$n" "$rc" "$secs"
    done
    [ -n "$aside" ] && wait "$aside"
    aside=
    for s in $alone; do
      n=$(basename "$s" .sh)
      rc=1 secs=0
      [ -f "$logs/$n.rc" ] && read -r rc secs <"$logs/$n.rc"
      report "$n" "$logs/$n" "$rc" "$secs" " (beside the cluster suites)"
    done
  fi
fi

# Node suites (tests/node/*.sh, make test-node; never in "all"): a cluster
# with ServiceAccount admission and a real node (tests/env/node), one after
# the other. There is one node per machine (the kubelet's port, its cgroups
# and kernel settings), so a node run waits for another one's end. Where the
# node's prerequisites fail, the suites run without it and skip, saying why.
if [ "$what" = node ]; then
  kind=node
  # node.sh first: the node alone, before anything runs on it
  suites=${*:-$(ls tests/node/*.sh 2>/dev/null | grep -v '/lib\.sh$' |
    awk '/\/node\.sh$/ { print; next } { l = l $0 "\n" } END { printf "%s", l }')}
  exec 9>/tmp/rs-controller-test-node.lock
  flock -n 9 || { echo "node: waiting for another node run to end"; flock 9; }
  logs=$(mktemp -d /tmp/rs-test-logs.XXXXXX)
  export RS_TEST_CLUSTER=$(mktemp -d /tmp/rs-test-cluster.XXXXXX)
  export RS_TEST_NODE=$(mktemp -d /tmp/rs-test-node.XXXXXX)
  trap 'tests/env/node down "$RS_TEST_NODE" >/dev/null 2>&1; tests/env/cluster down "$RS_TEST_CLUSTER" >/dev/null 2>&1; rm -rf --one-file-system "$RS_TEST_NODE" "$RS_TEST_CLUSTER" "$logs"' EXIT INT TERM
  if why=$(tests/env/node check 2>&1); then
    tests/env/cluster up "$RS_TEST_CLUSTER" --owner $$ --service-accounts ||
      { echo "run-all: fatal: unable to start the test cluster" >&2; exit 111; }
    _t=$(date +%s)
    tests/env/node up "$RS_TEST_NODE" --cluster "$RS_TEST_CLUSTER" --owner $$ ||
      { echo "run-all: fatal: unable to start the test node (logs: $RS_TEST_NODE/*.log)" >&2
        trap - EXIT; tests/env/node down "$RS_TEST_NODE" >/dev/null 2>&1
        tests/env/cluster down "$RS_TEST_CLUSTER" >/dev/null 2>&1; exit 111; }
    echo "node: up in $(( $(date +%s) - _t )) s"
    export KUBECONFIG="$RS_TEST_CLUSTER/kubeconfig"
    export K8S_BIN=$(tests/env/build --print-dir)
    export PATH="$K8S_BIN:$PATH"
  else
    export RS_NODE_SKIP="${why#tests/env/node: }"
    echo "node: $RS_NODE_SKIP: the node suites skip"
  fi
  for s in $suites; do
    case $s in */*) ;; *) s=tests/node/$s ;; esac
    [ -f "$s" ] || s=$s.sh
    n=$(basename "$s" .sh)
    echo "node $n: running..."
    run_suite "$s" "$logs/$n"
    read -r rc secs <"$logs/$n.rc"
    report "$n" "$logs/$n" "$rc" "$secs"
  done
fi

[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed$([ $skipped -gt 0 ] && echo ", $skipped skipped")"
[ "$failed" -eq 0 ]
