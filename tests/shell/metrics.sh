#!/bin/bash
# rs-metrics: /metrics, /healthz and /readyz over real HTTP (curl and raw
# requests on /dev/tcp), with the stages' stats files written by the real
# stages. The readiness test feeds rs-sync from a FIFO by hand, so that the
# moment before SYNCED can be observed; the last test scrapes the whole
# controller at work on the test cluster, latency histograms included.
. "$(dirname "$0")/lib.sh"

SYNC_PID=

# stages_gone: no process named in a stats file is alive (kill -0 only
# asks). The stages of a pipeline end on their own once their queue or
# their input is gone; a stage still alive would write its file again.
stages_gone() {
  for f in "$RS_STATE_DIR"/stats/*.json; do
    [ -f "$f" ] || continue
    p=$(jq -r .pid "$f" 2>/dev/null) || continue
    kill -0 "$p" 2>/dev/null && return 1
  done
  return 0
}

# The hand-fed pipeline ends at end of input (fd 7); the rest was started
# with rs_bg.
tearDown() {
  [ -n "$SYNC_PID" ] && kill -CONT "$SYNC_PID" 2>/dev/null
  SYNC_PID=
  exec 7>&-
  rs_cleanup
  wait_for 15 stages_gone
  rm -rf "$RS_STATE_DIR/stats" 2>/dev/null
  return 0
}

oneTimeTearDown() {
  stop_controller
  tearDown
  rm -rf "$RS_STATE_DIR"
}

start_queue() {
  rs_bg rs-queue serve --socket "$RS_STATE_DIR/queue.sock" 2>"$TMP/queue.log"
  RS_QUEUE_PID=$!
  wait_for 10 test -S "$RS_STATE_DIR/queue.sock"
}

# raw REQUEST: the status line of the answer to bytes sent as they are.
raw() {
  exec 8<>"/dev/tcp/127.0.0.1/${MURL##*:}" || return 1
  printf '%b' "$1" >&8
  timeout 12 head -1 <&8 | tr -d '\r'
  exec 8>&-
}

# prom_valid FILE: every line a HELP/TYPE comment or a sample of the text
# format; each family typed once, before its samples, which stay together.
prom_valid() {
  mawk '
  BEGIN { bad = 0 }
  /^# HELP / {
    if ($3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/) { print "bad HELP: " $0; bad = 1 }
    next
  }
  /^# TYPE / {
    if (NF != 4 || $3 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*$/ ||
        $4 !~ /^(counter|gauge|histogram|summary|untyped)$/) { print "bad TYPE: " $0; bad = 1 }
    if ($3 in seen) { print "family twice: " $3; bad = 1 }
    seen[$3] = 1; cur = $3; curtype = $4
    next
  }
  /^#/ { next }
  {
    if ($0 !~ /^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*"(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*\})? (NaN|[+-]Inf|[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)$/) {
      print "bad sample: " $0; bad = 1; next
    }
    name = $0; sub(/[{ ].*/, "", name)
    if (!(name == cur || (curtype == "histogram" &&
        (name == cur "_bucket" || name == cur "_sum" || name == cur "_count")))) {
      print "sample outside its family: " $0; bad = 1
    }
    n++
  }
  END { if (n == 0) { print "no sample"; bad = 1 } exit bad }' "$1"
}

# The buckets of the latency histograms (doc/metrics.md), as written.
LATENCY_LE='1e-05 2e-05 5e-05 0.0001 0.0002 0.0005 0.001 0.002 0.005 0.01 0.02 0.05 0.1 0.2 0.5 1 2 5 10 20 50 +Inf'

# latency_ok FILE NAME MAX_MEAN: the unlabelled histogram NAME has the
# latency buckets, cumulative counts, a +Inf bucket equal to its count, at
# least one observation, and a sum from 0 to count * MAX_MEAN seconds.
# Prints what is wrong, if anything.
latency_ok() {
  mawk -v n="$2" -v max="$3" -v want="$LATENCY_LE" '
  index($0, n "_bucket{le=\"") == 1 {
    le = $1; sub(/^[^"]*"/, "", le); sub(/".*$/, "", le)
    les = les (les == "" ? "" : " ") le
    if ($2 + 0 < prev) bad = bad " buckets not cumulative at " le ";"
    prev = $2 + 0; inf = $2 + 0
  }
  $1 == n "_sum" { sum = $2 + 0; has_sum = 1 }
  $1 == n "_count" { count = $2 + 0; has_count = 1 }
  END {
    if (!has_count || !has_sum) { print n ": no _count or _sum"; exit 1 }
    if (les != want) bad = bad " buckets [" les "];"
    if (count < 1) bad = bad " count " count ";"
    if (inf != count) bad = bad " +Inf " inf " != count " count ";"
    if (sum < 0 || sum > count * max) bad = bad " sum " sum " for " count ";"
    if (bad != "") { print n ":" bad; exit 1 }
  }' "$1"
}

test_endpoints_without_stages() {
  start_queue || fail "rs-queue did not start"
  metrics_start || fail "rs-metrics did not start"
  assertEquals "healthz without stats" 500 "$(code /healthz)"
  b=$(body /healthz)
  assertContains "$b" "[+]queue ok"
  assertContains "$b" "[-]stage rs-sync failed: no stats file"
  assertContains "$b" "[-]stage rs-apply failed: no stats file"
  assertContains "$b" "healthz check failed"
  assertEquals "livez is healthz" 500 "$(code /livez)"
  assertEquals "readyz without stats" 503 "$(code /readyz)"
  assertContains "$(body /readyz)" "[-]synced failed"
  scrape "$TMP/m0" || fail "scrape"
  prom_valid "$TMP/m0"
  rc=$?
  assertEquals "format: $(prom_valid "$TMP/m0" | head -3)" 0 "$rc"
  for m in workqueue_depth workqueue_adds_total workqueue_unfinished_work_seconds \
      workqueue_longest_running_processor_seconds workqueue_retries_total; do
    assertNotEquals "$m" none "$(value "$TMP/m0" "$m{name=\"replicaset\"}")"
  done
  for h in workqueue_queue_duration_seconds workqueue_work_duration_seconds; do
    assertTrue "$h" "grep -q '^# TYPE $h histogram' '$TMP/m0'"
    assertNotEquals "$h +Inf" none "$(value "$TMP/m0" "${h}_bucket{name=\"replicaset\",le=\"+Inf\"}")"
  done
  assertEquals "queue up" 1 "$(value "$TMP/m0" rs_queue_up)"
  rs-queue --queue "$RS_STATE_DIR/queue.sock" add ns/a ns/b || fail "add"
  scrape "$TMP/m1"
  assertEquals "adds seen" 2 "$(value "$TMP/m1" 'workqueue_adds_total{name="replicaset"}')"
  assertEquals "depth seen" 2 "$(value "$TMP/m1" 'workqueue_depth{name="replicaset"}')"
  # the queue gone: metrics still answer, health says why
  kill "$RS_QUEUE_PID"; wait "$RS_QUEUE_PID" 2>/dev/null
  scrape "$TMP/m2" || fail "scrape without queue"
  prom_valid "$TMP/m2"
  assertEquals "format without queue" 0 $?
  assertEquals "queue down" 0 "$(value "$TMP/m2" rs_queue_up)"
  assertFalse "no workqueue family" "grep -q '^workqueue_' '$TMP/m2'"
  assertContains "$(body /healthz)" "[-]queue failed: no rs-queue at"
}

test_http_is_strict_and_bounded() {
  start_queue || fail "rs-queue did not start"
  metrics_start --stages "" || fail "rs-metrics did not start"
  assertEquals "CRLF" "HTTP/1.1 200 OK" "$(raw 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n')"
  assertEquals "bare LF, empty line first" "HTTP/1.1 200 OK" "$(raw '\r\nGET /metrics HTTP/1.1\nHost: x\n\n')"
  assertEquals "1.0 without Host" "HTTP/1.1 200 OK" "$(raw 'GET /metrics HTTP/1.0\r\n\r\n')"
  assertEquals "1.1 without Host" "HTTP/1.1 400 Bad Request" "$(raw 'GET /metrics HTTP/1.1\r\n\r\n')"
  assertEquals "two Hosts" "HTTP/1.1 400 Bad Request" "$(raw 'GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n')"
  assertEquals "space before colon" "HTTP/1.1 400 Bad Request" "$(raw 'GET /metrics HTTP/1.1\r\nHost : x\r\n\r\n')"
  assertEquals "folded header" "HTTP/1.1 400 Bad Request" "$(raw 'GET /metrics HTTP/1.1\r\nHost: x\r\n y\r\n\r\n')"
  # libmicrohttpd reads a request line as RFC 9112 section 3 lets a server:
  # runs of spaces between its parts are one
  assertEquals "two spaces" "HTTP/1.1 200 OK" "$(raw 'GET  /metrics HTTP/1.1\r\nHost: x\r\n\r\n')"
  assertEquals "a body" "HTTP/1.1 400 Bad Request" "$(raw 'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc')"
  assertEquals "chunked" "HTTP/1.1 400 Bad Request" "$(raw 'GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n')"
  # and a NUL ends the path: never the path it cut
  assertEquals "NUL" "HTTP/1.1 404 Not Found" "$(raw 'GET /me\0trics HTTP/1.1\r\nHost: x\r\n\r\n')"
  assertEquals "HTTP/2" "HTTP/1.1 505 HTTP Version Not Supported" "$(raw 'GET /metrics HTTP/2.0\r\nHost: x\r\n\r\n')"
  assertEquals "POST" "HTTP/1.1 405 Method Not Allowed" "$(raw 'POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n')"
  assertEquals "unknown path" "HTTP/1.1 404 Not Found" "$(raw 'GET /metricsx HTTP/1.1\r\nHost: x\r\n\r\n')"
  assertEquals "absolute form" "HTTP/1.1 200 OK" "$(raw 'GET http://x/healthz?verbose HTTP/1.1\r\nHost: x\r\n\r\n')"
  big=$(head -c 9000 /dev/zero | tr '\0' a)
  assertEquals "head over 8 KiB" "HTTP/1.1 431 Request Header Fields Too Large" \
    "$(raw "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: $big\r\n\r\n")"
  near=$(head -c 8000 /dev/zero | tr '\0' a)
  assertEquals "head just under 8 KiB" "HTTP/1.1 200 OK" \
    "$(raw "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: $near\r\n\r\n")"
  # HEAD: the headers of GET, no body
  exec 8<>"/dev/tcp/127.0.0.1/${MURL##*:}"
  printf 'HEAD /healthz?verbose HTTP/1.0\r\n\r\n' >&8
  timeout 12 cat <&8 >"$TMP/h"
  exec 8>&-
  curl -s -o "$TMP/gb" "$MURL/healthz?verbose"
  assertEquals "HEAD length" "$(wc -c <"$TMP/gb")" "$(tr -d '\r' <"$TMP/h" | sed -n 's/^Content-Length: //p')"
  assertEquals "HEAD ends with its headers" "0d0a0d0a" "$(tail -c 4 "$TMP/h" | od -An -tx1 | tr -d ' \n')"
  assertEquals "verbose healthz" "[+]ping ok" "$(head -1 "$TMP/gb")"
  assertEquals "terse healthz" "ok" "$(body /healthz)"
  # idle connections hold no one up, and more clients than slots all get
  # their answer (the rest wait in the backlog)
  exec 5<>"/dev/tcp/127.0.0.1/${MURL##*:}" 6<>"/dev/tcp/127.0.0.1/${MURL##*:}"
  printf 'GET /metrics HTTP/1.1\r\n' >&6
  assertEquals "beside idle ones" 200 "$(code /metrics)"
  pids=
  for i in $(seq 100); do code /healthz >"$TMP/par.$i" & pids="$pids $!"; done
  wait $pids
  assertEquals "100 at once" 100 "$(grep -lx 200 "$TMP"/par.* | wc -l)"
  rm -f "$TMP"/par.*
  # a head that never ends: 408 after the connection's 10 s
  start=$(date +%s)
  assertEquals "slow head" "HTTP/1.1 408 Request Timeout" "$(timeout 15 head -1 <&6 | tr -d '\r')"
  assertTrue "within 12 s" "[ $(( $(date +%s) - start )) -le 12 ]"
  exec 5>&- 6>&-
  rs-metrics --listen foo 2>/dev/null
  assertEquals "bad --listen" 100 $?
  rs-metrics --listen "127.0.0.1:${MURL##*:}" 2>"$TMP/err"
  assertEquals "address in use" 111 $?
  assertContains "$(cat "$TMP/err")" "unable to listen on"
}

test_readyz_waits_for_synced() {
  need_cluster || return
  start_queue || fail "rs-queue did not start"
  metrics_start --stale 3 --stages rs-sync,rs-apply || fail "rs-metrics did not start"
  mkfifo "$TMP/events"
  # this shell holds the FIFO open both ways: nobody blocks, and rs-sync
  # sees end of input when fd 7 closes
  exec 7<>"$TMP/events"
  ( exec 7>&-
    rs-sync -v 1 <"$TMP/events" 2>"$TMP/sync.log" | rs-apply -v 1 2>"$TMP/apply.log" ) &
  RS_PIDS="$RS_PIDS $!"
  assertTrue "stats files" "wait_for 10 test -f '$RS_STATE_DIR/stats/rs-sync.json' -a -f '$RS_STATE_DIR/stats/rs-apply.json'"
  assertTrue "healthy before SYNCED" "wait_for 10 is_code /healthz 200"
  assertEquals "not ready before SYNCED" 503 "$(code /readyz)"
  sleep 1.5
  assertEquals "still not ready" 503 "$(code /readyz)"
  assertContains "$(body /readyz)" "[-]synced failed: pods, replicasets not synced"
  echo '{"type":"SYNCED","resource":"replicasets"}' >&7
  assertTrue "replicasets synced" "wait_for 5 sh -c \"curl -s $MURL/metrics | grep -qx 'rs_sync_synced{resource=\\\"replicasets\\\"} 1'\""
  assertEquals "not ready with pods unsynced" 503 "$(code /readyz)"
  assertContains "$(body /readyz)" "[-]synced failed: pods not synced"
  echo '{"type":"SYNCED","resource":"pods"}' >&7
  assertTrue "ready after SYNCED" "wait_for 5 is_code /readyz 200"
  assertEquals "ready body" "ok" "$(body /readyz)"
  # a stage that stops writing its stats fails healthz
  sync_pid=$(jq -r .pid "$RS_STATE_DIR/stats/rs-sync.json")
  SYNC_PID=$sync_pid
  kill -STOP "$sync_pid"
  assertTrue "stuck stage unhealthy" "wait_for 10 is_code /healthz 500"
  assertContains "$(body /healthz)" "[-]stage rs-sync failed: stats written"
  assertEquals "and not ready" 503 "$(code /readyz)"
  kill -CONT "$sync_pid"
  assertTrue "healthy again" "wait_for 5 is_code /healthz 200"
  # end of input: both stages finish and write their last figures
  apply_pid=$(jq -r .pid "$RS_STATE_DIR/stats/rs-apply.json")
  exec 7>&-
  assertTrue "pipeline exits" "wait_for 10 sh -c '! kill -0 $sync_pid 2>/dev/null && ! kill -0 $apply_pid 2>/dev/null'"
  scrape "$TMP/m"
  assertEquals "events read" 2 "$(value "$TMP/m" rs_sync_events_total)"
  assertEquals "no intents" 0 "$(value "$TMP/m" rs_sync_intents_total)"
  assertTrue "gone stages unhealthy" "wait_for 10 is_code /healthz 500"
}

test_metrics_of_the_controller_at_work() {
  need_cluster || return
  start_controller --kube-api-qps 200 --kube-api-burst 400
  metrics_start || fail "rs-metrics did not start"
  assertTrue "ready" "wait_for 60 is_code /readyz 200"
  assertEquals "healthy" 200 "$(code /healthz)"
  scrape "$TMP/a" || fail "scrape"
  prom_valid "$TMP/a"
  rc=$?
  assertEquals "format: $(prom_valid "$TMP/a" | head -3)" 0 "$rc"
  for m in workqueue_depth workqueue_adds_total workqueue_retries_total \
      workqueue_unfinished_work_seconds workqueue_longest_running_processor_seconds \
      workqueue_queue_duration_seconds_count workqueue_work_duration_seconds_count; do
    assertNotEquals "$m" none "$(value "$TMP/a" "$m{name=\"replicaset\"}")"
  done
  adds=$(value "$TMP/a" 'workqueue_adds_total{name="replicaset"}')
  posts=$(total "$TMP/a" 'rest_client_requests_total{code="201",method="POST",')
  events=$(value "$TMP/a" rs_sync_events_total)
  syncs=$(value "$TMP/a" rs_sync_syncs_total)
  ns=$(new_ns metrics)
  make_rs "$ns" web 3
  assertTrue "3 pods" "wait_for 30 sh -c 'test \$(kubectl -n $ns get pods -o name | wc -l) -eq 3'"
  # each stage rewrites its file once a second: wait for the figures of all
  grew() {
    scrape "$TMP/b" &&
    [ "$(value "$TMP/b" 'workqueue_adds_total{name="replicaset"}')" -gt "$adds" ] &&
    [ "$(total "$TMP/b" 'rest_client_requests_total{code="201",method="POST",')" -ge $((posts + 3)) ] &&
    [ "$(value "$TMP/b" rs_sync_events_total)" -gt "$events" ] &&
    [ "$(value "$TMP/b" rs_sync_syncs_total)" -gt "$syncs" ] &&
    [ "$(value "$TMP/b" rs_sync_intents_total)" -gt 0 ] &&
    [ "$(total "$TMP/b" 'rs_apply_intents_total{op="create"}')" -ge 1 ]
  }
  assertTrue "adds, POSTs, events, syncs, intents counted" "wait_for 20 grew"
  prom_valid "$TMP/b"
  assertEquals "format at work" 0 $?
  assertTrue "POST latency observed" \
    "[ $(total "$TMP/b" 'rest_client_request_duration_seconds_count{verb="POST",') -ge 3 ]"
  assertTrue "POSTs labelled by host and stage" \
    "grep -Eq '^rest_client_requests_total\\{code=\"201\",method=\"POST\",host=\"[^\"]+:[0-9]+\",stage=\"rs-apply\"\\} ' '$TMP/b'"
  assertTrue "stages' ages" "grep -q '^rs_stage_stats_age_seconds{stage=\"rs-sync\"} ' '$TMP/b'"
  # where the key's time went: each family observed (the stats files are
  # rewritten once a second), sums of sane size
  timed() {
    scrape "$TMP/c" &&
    for h in rs_sync_event_delivery_seconds rs_sync_reconcile_seconds \
        rs_apply_intent_delivery_seconds rs_apply_key_seconds \
        rs_apply_event_to_end_seconds; do
      [ "$(value "$TMP/c" "${h}_count")" != none ] &&
      [ "$(value "$TMP/c" "${h}_count")" -gt 0 ] || return 1
    done
  }
  assertTrue "latency histograms observed: $(grep -c '_seconds_count' "$TMP/c" 2>/dev/null)" \
    "wait_for 20 timed"
  prom_valid "$TMP/c"
  assertEquals "format with the latency histograms" 0 $?
  for h in rs_sync_event_delivery_seconds:5 rs_sync_reconcile_seconds:1 \
      rs_apply_intent_delivery_seconds:5 rs_apply_key_seconds:30 \
      rs_apply_event_to_end_seconds:60; do
    why=$(latency_ok "$TMP/c" "${h%%:*}" "${h##*:}")
    assertEquals "${h%%:*}" "" "$why"
  done
  assertTrue "histogram type" \
    "grep -qx '# TYPE rs_apply_event_to_end_seconds histogram' '$TMP/c'"
  assertTrue "syncs timed" \
    "[ $(value "$TMP/c" rs_sync_reconcile_seconds_count) -ge $(value "$TMP/b" rs_sync_syncs_total) ]"
  # the key's end line: the event that queued it, then rs-sync's write,
  # both within the run
  now=$(date +%s)
  end=$(jq -c --arg k "$ns/web" 'select(.op == "end" and .key == $k and .event_at)' \
    "$TMP/intents.ndjson" | head -1)
  assertNotEquals "an end of $ns/web with event_at" "" "$end"
  assertTrue "event_at <= sent_at, within the last minute: $end" \
    "echo '$end' | jq -e --argjson now $now '.event_at <= .sent_at and .sent_at <= \$now + 1 and .event_at > \$now - 60'"
  stop_controller
}

# upstream's buckets of replicaset_controller_sorting_deletion_age_ratio
AGE_RATIO=replicaset_controller_sorting_deletion_age_ratio
AGE_RATIO_LE='0.25 0.5 1 2 4 8 +Inf'

# age_ratio_count FILE: the histogram's count (0 before its first sample).
age_ratio_count() {
  n=$(value "$1" "${AGE_RATIO}_count")
  [ "$n" = none ] && n=0
  echo "$n"
}

# The victims of a scale-down that sorts are observed, Ready ones only,
# once each, in upstream's buckets; deleting every pod sorts nothing.
test_sorting_deletion_age_ratio() {
  need_cluster || return
  start_controller
  metrics_start --stages rs-sync || fail "rs-metrics did not start"
  ns=$(new_ns ageratio)
  make_rs "$ns" web 5
  assertTrue "5 pods" "wait_count $ns app=web 5 30"
  # four Ready, one not: the unready one goes first and is not observed
  for p in $(live_pods "$ns" app=web | head -4); do
    set_pod_status "$ns" "$p" Running True
  done
  assertTrue "4 ready" "wait_for 20 rs_status_is $ns web '.readyReplicas == 4'"
  assertTrue "scraped" "wait_for 10 scrape '$TMP/r0'"
  before=$(age_ratio_count "$TMP/r0")
  kubectl -n "$ns" scale rs web --replicas 1 >/dev/null
  assertTrue "1 pod" "wait_count $ns app=web 1 30"
  observed() { scrape "$TMP/r1" && [ "$(age_ratio_count "$TMP/r1")" -ge $((before + 3)) ]; }
  assertTrue "3 Ready victims observed" "wait_for 10 observed"
  sleep 1.5   # a stats file's period: nothing more comes
  scrape "$TMP/r1"
  assertEquals "count: the Ready victims" $((before + 3)) "$(age_ratio_count "$TMP/r1")"
  assertEquals "upstream's buckets" "$AGE_RATIO_LE" "$(sed -n \
    "s/^${AGE_RATIO}_bucket{le=\"\([^\"]*\)\"} .*/\1/p" "$TMP/r1" | tr '\n' ' ' | sed 's/ $//')"
  assertTrue "histogram type" "grep -qx '# TYPE $AGE_RATIO histogram' '$TMP/r1'"
  kubectl -n "$ns" scale rs web --replicas 0 >/dev/null
  assertTrue "0 pods" "wait_count $ns app=web 0 30"
  sleep 1.5
  scrape "$TMP/r2"
  assertEquals "all deleted: no sort, no sample" $((before + 3)) "$(age_ratio_count "$TMP/r2")"
  stop_controller
}

. "$SHUNIT2"
