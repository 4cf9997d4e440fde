#!/bin/sh
# run-all.sh [unit|shell|lint|slow|node] [SUITE...]: the test command
# behind `make test` (unit, lint and shell), `make test-slow` (the shell
# suites marked "# run-all: slow", which take minutes each) and `make
# test-node` (node). Unit tests: every build/unit/* (cmocka). Shell tests: every
# tests/shell/*.sh (shunit2). Lint: tests/lint-tests over the suites, and
# its own check on planted samples (tests/lint-tests.check). One test
# cluster (etcd + kube-apiserver) is started for all shell suites and
# always stopped at the end, even when a suite fails. Suites that say
# "# run-all: no cluster" run beside the others. Node suites
# (tests/node/*.sh) get a cluster and a real node (tests/env/node).
# Each suite's tests are counted passed, failed or skipped, skipped with
# the reason skip_test (lib.sh) gave. Under CI (CI=true) a test that
# skips fails, unless it is one of SOAK_ONLY (tests/soak/run runs them).
# The last line: N passed, N failed, N skipped.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
what=${1:-all}; [ $# -gt 0 ] && shift
BUILD=${BUILD:-build}
export RS_BIN="$top/$BUILD/bin" PATH="$top/$BUILD/bin:$PATH"
passed=0 failed=0 skipped=0 failures= soak_skipped=
# suite/test: the only tests that may skip under CI, by name
SOAK_ONLY="sanitizers/test_e2e_under_asan sanitizers/test_hostile_under_asan"

# count_shunit SUITE LOG SKIPS: each test of a suite log, by the lines
# shunit2 writes: a test's name alone on a line before it runs, ASSERT: or
# shunit2:ERROR (a non-zero return) for a failure; a failure before the
# first test is the set-up's. Prints "pass|fail|skip TEST [REASON]".
count_shunit() {
  mawk -v suite="$1" '
    FILENAME != ARGV[1] { if ($1 == suite) { t = $2; $1 = $2 = ""; sub(/^ +/, ""); why[t] = $0 } ; next }
    /^test[A-Za-z0-9_]*$/ { cur = $0; order[++n] = cur; next }
    /^(ASSERT:|shunit2:(ERROR|FATAL))/ { if (cur == "") setup = 1; else bad[cur] = 1 }
    END {
      if (setup) print "fail (set-up)"
      for (i = 1; i <= n; i++) {
        t = order[i]
        if (bad[t]) print "fail " t
        else if (t in why) print "skip " t " " why[t]
        else print "pass " t
      }
    }' "$2" "$3"
}

# tally SUITE < RESULTS: count_shunit's lines into the totals; a skip under
# CI fails unless the test is soak-only. Prints the suite's counts and
# each skip's reason; the failed tests go to $failures.
tally() {
  _p=0 _f=0 _s=0
  while read -r _r _t _why; do
    if [ "$_r" = skip ] && [ "${CI:-}" = true ]; then
      case " $SOAK_ONLY " in
      *" $1/$_t "*) ;;
      *) echo "  $_t: skipped under CI, which must run it ($_why): failed"; _r=fail ;;
      esac
    fi
    case $_r in
    pass) _p=$((_p + 1)) ;;
    fail) _f=$((_f + 1)); failures="$failures $1/$_t" ;;
    skip) _s=$((_s + 1)); echo "  $_t: skipped: $_why"
      case " $SOAK_ONLY " in *" $1/$_t "*) soak_skipped="$soak_skipped $1/$_t" ;; esac ;;
    esac
  done
  passed=$((passed + _p)) failed=$((failed + _f)) skipped=$((skipped + _s))
  counts="$_p passed, $_f failed, $_s skipped"
}

# run_units DIR LABEL [ENV...]: every unit program of DIR into the totals.
run_units() {
  _dir=$1 _label=$2; shift 2
  for t in "$_dir"/*; do
    [ -x "$t" ] || continue
    log=$(mktemp)
    if env CMOCKA_MESSAGE_OUTPUT=stdout "$@" "$t" >"$log" 2>&1; then st=ok; else st=FAIL; fi
    p=$(grep -cE '^\[       OK \]' "$log"); f=$(grep -cE '^\[  FAILED  \]' "$log")
    k=$(grep -cE '^\[  SKIPPED \]' "$log")
    [ "$st" = FAIL ] && [ "$f" -eq 0 ] && f=1
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + k))
    echo "$_label $(basename "$t"): $p passed, $f failed, $k skipped"
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

# report SUITE LOG RC SECONDS [NOTE]: a finished suite into the totals; a
# suite that failed with no test failed (shunit2's exit status), or that
# ran no test at all, counts one.
report() {
  count_shunit "$1" "$2" "$2.skips" >"$2.res"
  tally "$1" <"$2.res"
  if [ "$3" -ne 0 ] && ! grep -q '^fail' "$2.res"; then
    failed=$((failed + 1)) failures="$failures $1(exit $3)"
    counts="$counts, exit status $3"
  fi
  # a suite whose file shunit2 found no test in (a thin suite that names
  # the wrong SHUNIT_PARENT, say) proves nothing
  if ! grep -q . "$2.res"; then
    failed=$((failed + 1)) failures="$failures $1(no test)"
    counts="$counts, no test ran: failed"
    cat "$2"
  fi
  # a passing suite's timings, when it prints some (lines "figure: ...")
  grep -q '^fail' "$2.res" || [ "$3" -ne 0 ] || grep '^figure: ' "$2" | sed 's/^/  /'
  if grep -q '^fail' "$2.res" || [ "$3" -ne 0 ]; then cat "$2"; fi
  echo "${kind:-shell} $1: $counts in $4 s${5:-}"
}

# run_suite FILE LOG: runs one suite; its status and seconds in LOG.rc.
run_suite() {
  _t=$(date +%s)
  : >"$2.skips"
  RS_SKIPS=$2.skips bash "$1" >"$2" 2>&1
  echo "$? $(( $(date +%s) - _t ))" >"$2.rc"
}

# lint NAME CMD...: one check of the test sources, a test in the totals.
lint() {
  _n=$1; shift
  if "$@" >"$top/$BUILD/lint.log" 2>&1; then
    passed=$((passed + 1)); echo "lint $_n: passed"
  else
    failed=$((failed + 1)) failures="$failures lint/$_n"
    cat "$top/$BUILD/lint.log"; echo "lint $_n: failed"
  fi
  rm -f "$top/$BUILD/lint.log"
}

# the whole run (all, lint, or every shell suite): the suites' sources
if [ "$what" = all ] || [ "$what" = lint ] || { [ "$what" = shell ] && [ $# -eq 0 ]; }; then
  mkdir -p "$BUILD"
  lint tests-check sh tests/lint-tests.check
  lint tests sh tests/lint-tests
fi

# The slow shell suites (make test-slow; CI runs it after make test): a
# shell run of those alone.
if [ "$what" = slow ]; then
  set -- $(grep -l '^# run-all: slow' tests/shell/*.sh)
  what=shell
fi

if [ "$what" = all ] || [ "$what" = shell ]; then
  # suites marked "# run-all: slow" only when named, or by run-all slow
  suites=${*:-$(for s in tests/shell/*.sh; do
    case $s in */lib.sh) continue ;; esac
    grep -q '^# run-all: slow' "$s" || echo "$s"; done)}
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
# node's prerequisites fail, the suites run without it and skip, saying why
# (which fails under CI).
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

[ -n "$soak_skipped" ] && echo "skipped, soak-only (tests/soak/run runs them):$soak_skipped"
[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
