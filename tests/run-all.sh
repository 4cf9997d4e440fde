#!/bin/sh
# run-all.sh [unit|shell] [SUITE...]: the test command behind `make test`.
# Unit tests: every build/unit/* (cmocka). Shell tests: every tests/shell/*.sh
# (shunit2). One test cluster (etcd + kube-apiserver) is started for all shell
# suites and always stopped at the end, even when a suite fails.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
what=${1:-all}; [ $# -gt 0 ] && shift
BUILD=${BUILD:-build}
export RS_BIN="$top/$BUILD/bin" PATH="$top/$BUILD/bin:$PATH"
passed=0 failed=0 failures=

count_shunit() {  # reads a suite log; adds its tests to the totals
  r=$(grep -E '^Ran [0-9]+ tests?\.' "$1" | tail -1 | sed -E 's/^Ran ([0-9]+).*/\1/')
  f=$(grep -E '^FAILED \(failures=[0-9]+' "$1" | tail -1 | sed -E 's/.*failures=([0-9]+).*/\1/')
  r=${r:-0}; f=${f:-0}
  passed=$((passed + r - f)); failed=$((failed + f))
}

if [ "$what" = all ] || [ "$what" = unit ]; then
  for t in "$BUILD"/unit/*; do
    [ -x "$t" ] || continue
    log=$(mktemp)
    if CMOCKA_MESSAGE_OUTPUT=stdout "$t" >"$log" 2>&1; then st=ok; else st=FAIL; fi
    p=$(grep -cE '^\[       OK \]' "$log"); f=$(grep -cE '^\[  FAILED  \]' "$log")
    [ "$st" = FAIL ] && [ "$f" -eq 0 ] && f=1
    passed=$((passed + p)); failed=$((failed + f))
    echo "unit $(basename "$t"): $p passed, $f failed"
    if [ "$st" = FAIL ]; then failures="$failures unit/$(basename "$t")"; cat "$log"; fi
    rm -f "$log"
  done
fi

if [ "$what" = all ] || [ "$what" = shell ]; then
  suites=${*:-$(ls tests/shell/*.sh 2>/dev/null | grep -v '/lib\.sh$')}
  if [ -n "$suites" ]; then
    export RS_TEST_CLUSTER=$(mktemp -d /tmp/rs-test-cluster.XXXXXX)
    trap 'tests/env/cluster down "$RS_TEST_CLUSTER" >/dev/null 2>&1; rm -rf "$RS_TEST_CLUSTER"' EXIT INT TERM
    tests/env/cluster up "$RS_TEST_CLUSTER" --owner $$ || { echo "run-all: fatal: unable to start the test cluster" >&2; exit 111; }
    export KUBECONFIG="$RS_TEST_CLUSTER/kubeconfig"
    export K8S_BIN=$(tests/env/build --print-dir)
    export PATH="$K8S_BIN:$PATH"
    for s in $suites; do
      case $s in */*) ;; *) s=tests/shell/$s ;; esac
      [ -f "$s" ] || s=$s.sh
      log=$(mktemp)
      start=$(date +%s)
      echo "shell $(basename "$s" .sh): running..."
      bash "$s" >"$log" 2>&1; rc=$?
      before=$failed
      count_shunit "$log"
      if [ $rc -ne 0 ] && [ $failed -eq $before ]; then failed=$((failed + 1)); fi
      if [ $failed -ne $before ]; then
        failures="$failures shell/$(basename "$s" .sh)"; cat "$log"
      else
        grep -E '^(Ran|OK)' "$log" | tail -2 | sed 's/^/  /'
      fi
      echo "shell $(basename "$s" .sh): done in $(( $(date +%s) - start )) s"
      rm -f "$log"
    done
  fi
fi

[ -n "$failures" ] && echo "failed:$failures"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
