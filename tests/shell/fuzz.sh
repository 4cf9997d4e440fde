#!/bin/bash
# run-all: no cluster
# Fuzz smoke: every fuzz target (tests/fuzz/: the event decoder, the intent
# decoder, the queue protocol parser, the selector parser, the kubeconfig
# loader, the JSON scanner with rs-watch's rendering, rs-watch's reading
# of pods in protobuf) builds with libFuzzer,
# ASan and UBSan and runs FUZZ_SMOKE_SECONDS (5) without a crash. `make
# fuzz` runs them longer (tests/fuzz/run).
. "$(dirname "$0")/lib.sh"

FUZZ_SMOKE_SECONDS=${FUZZ_SMOKE_SECONDS:-5}

test_fuzz_smoke() {
  FUZZ_NO_INSTALL=${FUZZ_NO_INSTALL:-} "$top/tests/fuzz/run" "$FUZZ_SMOKE_SECONDS" >"$TMP/fuzz.out" 2>&1
  rc=$?
  cat "$TMP/fuzz.out"
  if grep -q 'no libFuzzer toolchain' "$TMP/fuzz.out"; then
    skip_test "no clang with libFuzzer (make deps installs it)"
    return
  fi
  assertEquals "tests/fuzz/run exit status" 0 "$rc"
  for t in events intent queue_proto selector kubeconfig jscan pbpod; do
    line=$(grep "^fuzz $t:" "$TMP/fuzz.out")
    runs=$(echo "$line" | sed -E 's/^fuzz [a-z_]+: ([0-9]+) executions.*/\1/')
    assertTrue "$t ran: $line" "[ -n '$runs' ] && [ '$runs' -gt 100 ] 2>/dev/null"
    assertTrue "$t found no crash" "echo '$line' | grep -q ', 0 crashes$'"
  done
}

. "$SHUNIT2"
