#!/bin/bash
# Sanitizers: every stage of the pipeline under valgrind (memcheck,
# --leak-check=full) through a scale-up and a scale-down; with
# SANITIZERS_ASAN=1, the end-to-end suite (tests/shell/e2e.sh) against the
# ASan and UBSan build (make asan, build-asan/bin), leaks detected and any
# report fatal; with SANITIZERS_HOSTILE=1, tests/shell/hostile.sh on that
# build too. A test fails on any sanitizer or valgrind report, whatever the
# suite's own verdict. make test runs the valgrind test; the ASan build
# and runs (about 3 minutes more) are in make soak, which sets both.
. "$(dirname "$0")/lib.sh"

ASAN_BIN=$top/build-asan/bin
SAN_LOG=$TMP/san
VG_PODS=${VG_PODS:-12}

oneTimeSetUp() {
  mkdir -p "$SAN_LOG"
  [ -n "${SANITIZERS_ASAN:-}${SANITIZERS_HOSTILE:-}" ] || return 0
  # builds what is missing or stale; the other tools' state is not ours
  ( cd "$top" && make -k asan >"$TMP/asan-build.log" 2>&1 )
  for t in rs-watch rs-sync rs-apply rs-queue; do
    [ -x "$ASAN_BIN/$t" ] || echo "sanitizers: no $ASAN_BIN/$t (see $TMP/asan-build.log)" >&2
  done
}

oneTimeTearDown() {
  rs_cleanup
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then cp -r "$TMP" "$RS_KEEP_LOGS"; fi
  rm -rf "$RS_STATE_DIR"
}

# reports DIR...: sanitizer reports found in the files of DIR (log_path
# files, and the stage logs the suites keep).
reports() {
  grep -rlE 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:|SUMMARY: (Address|Leak|Undefined)' "$@" 2>/dev/null
}

show_reports() {
  for f in $(reports "$@"); do
    echo "--- $f"
    grep -E -A12 'ERROR: |runtime error:' "$f" | head -40
  done
}

# under_asan SUITE: runs tests/shell/SUITE.sh with the ASan binaries;
# asserts that it passed and that no report was written.
under_asan() {
  _s=$1 _keep=$TMP/$1-logs
  for t in rs-watch rs-sync rs-apply rs-queue; do
    [ -x "$ASAN_BIN/$t" ] || { fail "no ASan build of $t"; return; }
  done
  rm -rf "$_keep"; mkdir -p "$_keep"
  RS_BIN=$ASAN_BIN RS_KEEP_LOGS=$_keep \
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$SAN_LOG/asan-$_s" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$SAN_LOG/ubsan-$_s" \
  LSAN_OPTIONS="log_path=$SAN_LOG/lsan-$_s" \
    bash "$top/tests/shell/$_s.sh" >"$TMP/$_s.out" 2>&1
  _rc=$?
  sed -n '/^Ran /,$p' "$TMP/$_s.out" | sed "s/^/  $_s under ASan: /"
  if [ $_rc -ne 0 ] || ! grep -q '^OK' "$TMP/$_s.out"; then
    fail "$_s under ASan failed: $(grep -E '^ASSERT|^FAILED' "$TMP/$_s.out" | head -5)"
  fi
  _r=$(reports "$SAN_LOG" "$_keep" "$TMP/$_s.out")
  assertEquals "sanitizer reports from $_s" "" "$_r"
  if [ -n "$_r" ]; then show_reports "$SAN_LOG" "$_keep" "$TMP/$_s.out"; fi
  return 0
}

test_e2e_under_asan() {
  [ -n "${SANITIZERS_ASAN:-}" ] || { skip_test "soak-only: SANITIZERS_ASAN unset (tests/soak/run sets it)"; return; }
  need_cluster || return
  under_asan e2e
}

test_hostile_under_asan() {
  [ -n "${SANITIZERS_HOSTILE:-}" ] || { skip_test "soak-only: SANITIZERS_HOSTILE unset (tests/soak/run sets it)"; return; }
  under_asan hostile
}

# --- valgrind -------------------------------------------------------------------

VG="valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --track-fds=no"

test_stages_under_valgrind() {
  need_cluster || return
  command -v valgrind >/dev/null || { fail "valgrind is not installed (make deps)"; return; }
  d=$TMP/vg
  mkdir -p "$d"
  sock=$RS_STATE_DIR/vg.sock
  $VG --log-file="$d/queue.vg" rs-queue serve --socket "$sock" 2>"$d/queue.log" &
  qpid=$!
  wait_for 60 test -S "$sock" || { fail "rs-queue under valgrind did not start"; return; }
  ( $VG --log-file="$d/watch.vg" rs-watch --batch 20ms replicasets pods 2>"$d/watch.log" |
    $VG --log-file="$d/sync.vg" rs-sync -v 1 --queue "$sock" --expectations "$RS_STATE_DIR/vg.exp" 2>"$d/sync.log" |
    $VG --log-file="$d/apply.vg" rs-apply -v 1 --queue "$sock" --expectations "$RS_STATE_DIR/vg.exp" 2>"$d/apply.log"
    echo "${PIPESTATUS[*]}" >"$d/status" ) &
  pl=$!
  ns=$(new_ns valgrind)
  make_rs "$ns" web "$VG_PODS"
  assertTrue "scaled up to $VG_PODS under valgrind" "wait_for 120 count_is $ns app=web $VG_PODS"
  assertTrue "status" "wait_for 60 rs_status_is $ns web '.replicas == $VG_PODS'"
  kubectl -n "$ns" scale rs web --replicas 2 >/dev/null
  assertTrue "scaled down to 2 under valgrind" "wait_for 120 count_is $ns app=web 2"
  assertTrue "status" "wait_for 60 rs_status_is $ns web '.replicas == 2'"
  # stop as a supervisor would: TERM to every stage, then to the queue
  for p in $(pgrep -P $pl); do kill -TERM "$p" 2>/dev/null; done
  wait_for 60 test -s "$d/status"
  wait $pl 2>/dev/null
  kill -TERM $qpid; wait $qpid; qst=$?
  st=$(cat "$d/status" 2>/dev/null)
  echo "  valgrind exit statuses: rs-watch rs-sync rs-apply = $st, rs-queue = $qst"
  for s in $st $qst; do
    assertNotEquals "a stage had valgrind errors (exit 99): $st / $qst" 99 "$s"
  done
  for f in "$d"/*.vg; do
    if [ -s "$f" ]; then
      fail "valgrind report in $(basename "$f"): $(head -30 "$f")"
    fi
  done
  kubectl -n "$ns" delete rs web --wait=false >/dev/null 2>&1
  kubectl -n "$ns" delete pods --all --wait=false >/dev/null 2>&1
}

. "$SHUNIT2"
