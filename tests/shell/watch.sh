#!/bin/bash
# watch.sh: rs-watch against the real test apiserver: paginated lists, event
# order, reconnects across an apiserver restart, relist after 410 with the
# missed deletions, streaming lists cut short, signals, trimming, pods in
# protobuf against the same in JSON, a closed pipe, flags.
. "$(dirname "$0")/lib.sh"

CLUSTER=$top/tests/env/cluster

setUp() { OUT=$TMP/$SUITE.$$.$RANDOM; }

tearDown() {
  for p in $RS_PIDS; do kill -CONT "$p" 2>/dev/null; done
  rs_cleanup
  # a test that stopped the apiserver always leaves it running
  if [ -n "${RS_TEST_CLUSTER:-}" ] && ! "$CLUSTER" status "$RS_TEST_CLUSTER"; then
    "$CLUSTER" start-apiserver "$RS_TEST_CLUSTER" >/dev/null 2>&1
  fi
}

# api_curl ARGS...: curl as the admin user of the test cluster.
api_curl() {
  . "$RS_TEST_CLUSTER/env"
  curl -sS --no-progress-meter --cacert "$RS_TEST_CLUSTER/ca.crt" --cert "$RS_TEST_CLUSTER/admin.crt" \
    --key "$RS_TEST_CLUSTER/admin.key" "$@"
}

# post_pods NS N BODY: N pods of the body in file BODY (a generateName),
# created 16 requests at a time by curl --parallel (kubectl create sends a
# list's items one by one); fails unless every answer is 201.
post_pods() {
  . "$RS_TEST_CLUSTER/env"
  _url="https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/$1/pods"
  for _i in $(seq 1 "$2"); do printf 'url = "%s"\noutput = "/dev/null"\n' "$_url"; done >"$TMP/urls.cfg"
  api_curl --parallel --parallel-max 16 -H 'Content-Type: application/json' \
    -d @"$3" -K "$TMP/urls.cfg" -w '%{http_code}\n' | grep -cv '^201$' | grep -qx 0
}

# mkpods NS N: N bare pods named p-XXXXX.
mkpods() {
  echo '{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"p-"},"spec":{"containers":[{"name":"c","image":"example.invalid/none"}]}}' >"$TMP/pod.json"
  post_pods "$1" "$2" "$TMP/pod.json"
}

# pod NS NAME: one bare pod.
pod() { kubectl -n "$1" run "$2" --image=example.invalid/none --restart=Never >/dev/null; }

synced_count() { grep -c '"type":"SYNCED"' "$1" 2>/dev/null; }
synced_n() { [ "$(synced_count "$1")" -ge "$2" ]; }   # FILE N
added_is() { [ "$(grep -c '"type":"ADDED"' "$1")" -eq "$2" ]; }   # FILE N
deleted_is() { [ "$(grep -c '"type":"DELETED"' "$1")" -eq "$2" ]; }   # FILE N

# stream_state FILE NS: "name uid resourceVersion" of the pods of NS that
# the stream leaves when applied in order, sorted.
stream_state() {
  jq -r --arg ns "$2" 'select(.type != "SYNCED" and .object.metadata.namespace == $ns) |
      [.type, .object.metadata.name, .object.metadata.uid, .object.metadata.resourceVersion] | @tsv' "$1" |
    awk -F'\t' '$1 == "DELETED" { delete s[$2]; next } { s[$2] = $3 " " $4 }
      END { for (k in s) print k, s[k] }' | sort
}

# server_state NS: the same, as the server lists it.
server_state() {
  kubectl -n "$1" get pods -o json |
    jq -r '.items[] | "\(.metadata.name) \(.metadata.uid) \(.metadata.resourceVersion)"' | sort
}

# diagnose PID LOG: what a watcher that stopped making progress is doing.
diagnose() {
  echo "--- rs-watch $1: $(grep -E '^State' "/proc/$1/status" 2>/dev/null || echo gone)"
  for t in /proc/"$1"/task/*; do
    [ -r "$t/stack" ] && { echo "task ${t##*/}: $(tr '\n' ' ' <"$t/stack" | cut -c1-300)"; }
  done
  command -v gdb >/dev/null && gdb -p "$1" -batch -ex 'thread apply all bt' 2>/dev/null | grep -E '^(#|Thread)'
  echo "--- log"; tail -20 "$2"
}

# has_line FILE JQ-CONDITION: some line of FILE satisfies the condition.
has_line() { jq -en "[inputs | select($2)] | length > 0" "$1" >/dev/null; }

same_state() { [ "$(stream_state "$1" "$2")" = "$(server_state "$2")" ]; }   # FILE NS

# rv_lines FILE TYPE: the resourceVersions of FILE's TYPE lines (SYNCED,
# BOOKMARK), one a line, in order.
rv_lines() { jq -r --arg t "$2" 'select(.type == $t) | .resourceVersion' "$1"; }

# max_object_rv FILE: the highest object resourceVersion in FILE (0: none).
max_object_rv() {
  jq -r 'select(.object) | .object.metadata.resourceVersion' "$1" | sort -n | tail -1 | grep . || echo 0
}

# A SYNCED or BOOKMARK line, whole: type, resource, at, resourceVersion (a
# well-formed one: digits, no leading zero), then TAIL (a relist's
# BOOKMARK: ,"relist":true), nothing else.
rv_line_re() { echo "^\\{\"type\":\"$1\",\"resource\":\"$2\",\"at\":[0-9]{10}\\.[0-9]{6},\"resourceVersion\":\"[1-9][0-9]*\"${3:-}\\}\$"; }

# list_rv NS: the resourceVersion of a list of NS's pods, read now.
list_rv() { kubectl get --raw "/api/v1/namespaces/$1/pods" | jq -r .metadata.resourceVersion; }

test_list_5000_pods_in_pages() {
  need_cluster || return
  ns=$(new_ns wlist)
  mkpods "$ns" 5000
  assertEquals "5000 pods created" 0 $?
  assertEquals "pods on the server" 5000 "$(kubectl -n "$ns" get pods --no-headers | wc -l)"
  rs_bg rs-watch -v 4 --list pages --page-size 100 -n "$ns" pods >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED within 60 s" "wait_for 60 synced_n $OUT 1"
  n=$(grep -n '"type":"SYNCED"' "$OUT" | head -1 | cut -d: -f1)
  assertEquals "SYNCED is line 5001" 5001 "$n"
  assertEquals "5000 ADDED before SYNCED" 5000 \
    "$(head -5000 "$OUT" | jq -r 'select(.type == "ADDED") | .object.metadata.name' | sort -u | wc -l)"
  assertEquals "one list request per 100 pods" 50 \
    "$(grep -c "GET /api/v1/namespaces/$ns/pods?limit=100" "$OUT.log")"
  assertEquals "apiVersion and kind added to listed items" 5000 \
    "$(head -5000 "$OUT" | jq -r 'select(.object.kind == "Pod" and .object.apiVersion == "v1") | 1' | wc -l)"
  rs_cleanup

  # the reader goes away in the middle of the list: EPIPE, exit 0 at once
  start=$(date +%s)
  timeout 20 rs-watch --list pages --page-size 100 -n "$ns" pods 2>"$OUT.err" | head -1 >/dev/null
  st=${PIPESTATUS[0]}
  assertEquals "exit status after the reader left mid-list" 0 "$st"
  assertTrue "quick exit" "[ $(( $(date +%s) - start )) -lt 10 ]"
  assertEquals "nothing on stderr" "" "$(cat "$OUT.err")"

  # the same pods by a streaming list, the default: one watch request
  # that sends them all, no page; the same objects at the same versions
  rs_bg rs-watch -v 4 -n "$ns" pods >"$OUT.stream" 2>"$OUT.stream.log"
  assertTrue "SYNCED within 60 s (stream)" "wait_for 60 synced_n $OUT.stream 1"
  assertEquals "SYNCED is line 5001 (stream)" 5001 \
    "$(grep -n '"type":"SYNCED"' "$OUT.stream" | head -1 | cut -d: -f1)"
  assertEquals "one streaming watch, no page" "1 0" \
    "$(grep -c "GET /api/v1/namespaces/$ns/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan" "$OUT.stream.log") $(grep -c "pods?limit=" "$OUT.stream.log")"
  assertEquals "the objects of the paged list, at their versions" \
    "$(head -5000 "$OUT" | jq -r '"\(.type) \(.object.kind) \(.object.metadata.name) \(.object.metadata.resourceVersion)"' | sort)" \
    "$(head -5000 "$OUT.stream" | jq -r '"\(.type) \(.object.kind) \(.object.metadata.name) \(.object.metadata.resourceVersion)"' | sort)"
  assertTrue "SYNCED at or past every object" \
    "[ $(rv_lines "$OUT.stream" SYNCED) -ge $(max_object_rv "$OUT.stream") ]"
  assertTrue "the log says how it listed" \
    "grep -q 'listed 5000 pods in 1 stream at resourceVersion' $OUT.stream.log"
  # the watch goes on in the same stream: no request of its own
  pod "$ns" after
  assertTrue "an event after the list" \
    "wait_for 20 grep -q '\"name\":\"after\"' $OUT.stream"
  assertEquals "the same stream, no watch started after it" "1 0" \
    "$(grep -c "GET /api/v1/namespaces/$ns/pods?watch=1" "$OUT.stream.log") $(grep -c 'watching pods from resourceVersion' "$OUT.stream.log")"
  rs_cleanup
}

# A server that refuses streaming lists (the WatchList feature off): each
# list falls back to pages, as client-go's does; the next list (here a
# SIGHUP snapshot) tries the stream again; the warning is said once.
test_streaming_list_refused_lists_in_pages() {
  need_cluster || return
  own=$(mktemp -d /tmp/rs-test-nowl.XXXXXX)
  RS_TEST_APISERVER_FLAGS="--feature-gates=WatchList=false" \
    "$CLUSTER" up "$own/c" --owner $$ >"$own/log" 2>&1 ||
    { fail "unable to start a cluster without WatchList: $(tail -3 "$own/log")"; rm -rf "$own"; return; }
  KUBECONFIG=$own/c/kubeconfig kubectl create configmap one >/dev/null
  KUBECONFIG=$own/c/kubeconfig rs_bg rs-watch -v 4 -n default v1/configmaps \
    >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  assertEquals "refused once, said once" 1 \
    "$(grep -c 'warning: the server does not list configmaps by a streaming watch (Invalid: .*WatchList' "$OUT.log")"
  assertTrue "listed in pages" "grep -q 'listed [0-9]* configmaps in 1 page at' $OUT.log"
  assertEquals "the object, then SYNCED" "ADDED one SYNCED -" \
    "$(jq -r '"\(.type) \(.object.metadata.name // "-")"' "$OUT" | grep -v kube-root-ca | tr '\n' ' ' | sed 's/ $//')"
  KUBECONFIG=$own/c/kubeconfig kubectl create configmap two >/dev/null
  assertTrue "then watched" "wait_for 20 grep -q '\"name\":\"two\"' $OUT"
  kill -HUP "${RS_PIDS##* }"
  assertTrue "the snapshot's SYNCED" "wait_for 20 synced_n $OUT 2"
  assertEquals "the stream tried again, refused again, listed in pages" "2 2" \
    "$(grep -c 'GET /api/v1/namespaces/default/configmaps?watch=1&sendInitialEvents=true' "$OUT.log") $(grep -c 'listed [0-9]* configmaps in 1 page at' "$OUT.log")"
  assertEquals "the warning said once" 1 "$(grep -c 'warning: the server does not list' "$OUT.log")"
  rs_cleanup
  "$CLUSTER" down "$own/c" >/dev/null 2>&1
  rm -rf "$own"
}

# bigpods NS N: N pods of 64 KiB each (an annotation of random text), so
# that a list of them outgrows every buffer between the server and the
# reader of rs-watch's output: with that reader stopped, the server is
# still sending the list.
bigpods() {
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"b-","annotations":{"blob":"%s"}},"spec":{"containers":[{"name":"c","image":"example.invalid/none"}]}}' \
    "$(head -c 49152 /dev/urandom | base64 -w0)" >"$TMP/bigpod.json"
  post_pods "$1" "$2" "$TMP/bigpod.json"
}

# stalled_watch OUT ARGS...: rs-watch ARGS in the background, its output
# into a FIFO that nobody reads until drain OUT copies it into OUT (this
# shell holds the FIFO open on fd 7 meanwhile); its log in OUT.log.
stalled_watch() {
  _out=$1; shift
  rm -f "$_out.fifo"
  mkfifo "$_out.fifo"
  exec 7<>"$_out.fifo"
  rs-watch "$@" >"$_out.fifo" 2>"$_out.log" 7<&- &
  RS_PIDS="$RS_PIDS $!"
  STALLED=$!
}
drain() {
  cat <&7 >"$1" &
  RS_PIDS="$RS_PIDS $!"
  exec 7<&-
}

# before_synced OUT: OUT's lines up to the first SYNCED, as "TYPE NAME".
before_synced() { sed '/"type":"SYNCED"/q' "$1" | jq -r '"\(.type) \(.object.metadata.name // "-")"'; }

# A streaming list cut in the middle starts over, and whatever way it ends,
# every pod is printed once before the one SYNCED: the server killed (a
# failure) and the server's watch timeout (an end without error) in
# pages, this time, as client-go falls back to a LIST; a SIGHUP by a
# stream (the snapshot: what was printed comes again as MODIFIED). The reader of
# rs-watch's output is stopped while the list is sent, so that the cut
# comes before the list's end.
test_streaming_list_cut_short_starts_over() {
  need_cluster || return
  ns=$(new_ns wcut)
  bigpods "$ns" 600
  assertEquals "600 pods of 64 KiB" 0 $?
  want=$(kubectl -n "$ns" get pods -o name | sed 's,^pod/,ADDED ,' | sort)
  assertEquals "the server has them" 600 "$(echo "$want" | grep -c ADDED)"
  req="GET /api/v1/namespaces/$ns/pods?watch=1&sendInitialEvents=true"

  # the server killed mid-list
  stalled_watch "$OUT" -v 4 --backoff-max 2s -n "$ns" pods
  assertTrue "the streaming list began" "wait_for 20 grep -qF '$req' $OUT.log"
  sleep 3
  kill -KILL "$(cat "$RS_TEST_CLUSTER/apiserver.pid")"
  "$CLUSTER" stop-apiserver "$RS_TEST_CLUSTER"
  "$CLUSTER" start-apiserver "$RS_TEST_CLUSTER"
  drain "$OUT"
  assertTrue "SYNCED after the server came back" "wait_for 60 synced_n $OUT 1"
  assertTrue "the list failed: $(grep -v ' GET ' "$OUT.log" | tail -3)" \
    "grep -q 'the streaming list of pods failed after [0-9]* events (.*); listing in pages this time' $OUT.log"
  assertEquals "then listed in pages, as client-go falls back to a LIST" "1 1" \
    "$(grep -cF "$req" "$OUT.log") $(grep -c 'listed 600 pods in 2 pages at' "$OUT.log")"
  assertEquals "every pod once (killed)" "$want" \
    "$(before_synced "$OUT" | grep -v '^SYNCED' | sort)"
  assertEquals "SYNCED is line 601 (killed)" 601 "$(grep -n '"type":"SYNCED"' "$OUT" | head -1 | cut -d: -f1)"
  rs_cleanup

  # the server's watch timeout ends the stream before its bookmark
  stalled_watch "$OUT.t" -v 4 --watch-timeout 1s -n "$ns" pods
  assertTrue "the streaming list began (timeout)" "wait_for 20 grep -qF '$req' $OUT.t.log"
  sleep 4
  drain "$OUT.t"
  assertTrue "SYNCED (timeout)" "wait_for 60 synced_n $OUT.t 1"
  assertTrue "the list ended early: $(grep -v ' GET ' "$OUT.t.log" | tail -3)" \
    "grep -q 'the streaming list of pods ended after [0-9]* events, before it was complete; listing in pages this time' $OUT.t.log"
  assertEquals "then listed in pages" 1 "$(grep -c 'listed 600 pods in 2 pages at' "$OUT.t.log")"
  assertEquals "every pod once, then SYNCED (timeout)" "$want" \
    "$(before_synced "$OUT.t" | grep -v '^SYNCED' | sort)"
  assertEquals "SYNCED is line 601 (timeout)" 601 "$(grep -n '"type":"SYNCED"' "$OUT.t" | head -1 | cut -d: -f1)"
  rs_cleanup

  # SIGHUP mid-list: the list becomes the snapshot
  stalled_watch "$OUT.h" -v 4 -n "$ns" pods
  assertTrue "the streaming list began (HUP)" "wait_for 20 grep -qF '$req' $OUT.h.log"
  sleep 3
  kill -HUP "$STALLED"
  drain "$OUT.h"
  assertTrue "SYNCED (HUP)" "wait_for 60 synced_n $OUT.h 1"
  sleep 1
  assertTrue "the snapshot was taken" "grep -q 'SIGHUP: listing pods for a full snapshot' $OUT.h.log"
  assertEquals "a stream for the list, one for the snapshot" 2 "$(grep -cF "$req" "$OUT.h.log")"
  before_synced "$OUT.h" >"$OUT.h.types"
  k=$(grep -c '^MODIFIED' "$OUT.h.types")
  assertTrue "some pods printed before the snapshot, not all: $k" "[ $k -gt 0 ] && [ $k -lt 600 ]"
  assertEquals "every pod ADDED once" "$want" "$(grep '^ADDED' "$OUT.h.types" | sort)"
  assertEquals "MODIFIED only what was ADDED before it" "" \
    "$(awk '$1 == "ADDED" { a[$2] = 1 } $1 == "MODIFIED" && !a[$2] { print }' "$OUT.h.types")"
  assertEquals "one SYNCED, nothing but pods before it" "$((600 + k + 1)) 1" \
    "$(wc -l <"$OUT.h.types") $(synced_count "$OUT.h")"
  rs_cleanup
}

test_events_in_order() {
  need_cluster || return
  ns=$(new_ns wevents)
  t0=$(date +%s)
  rs_bg rs-watch -n "$ns" pods >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  pod "$ns" a
  kubectl -n "$ns" label pod a step=one >/dev/null
  kubectl -n "$ns" label pod a step=two --overwrite >/dev/null
  kubectl -n "$ns" delete pod a --wait=false >/dev/null
  assertTrue "DELETED arrives" "wait_for 20 grep -q '\"type\":\"DELETED\"' $OUT"
  types=$(jq -r 'select(.object.metadata.name == "a") | .type' "$OUT" | uniq | tr '\n' ' ')
  assertEquals "event types in order" "ADDED MODIFIED DELETED " "$types"
  labels=$(jq -r 'select(.object.metadata.name == "a" and .type == "MODIFIED") | .object.metadata.labels.step // "-"' "$OUT" | uniq | tr '\n' ' ')
  assertEquals "updates in order" "one two " "$labels"
  rvs=$(jq -r 'select(.object.metadata.name == "a") | .object.metadata.resourceVersion' "$OUT")
  assertEquals "resourceVersions increase" "$(echo "$rvs" | sort -n)" "$rvs"
  assertEquals "no final_state_unknown on a watched deletion" 0 \
    "$(grep -c final_state_unknown "$OUT")"
  # every line, SYNCED included, stamped with the time it was read: in
  # microseconds, right after type and resource, within the test, never
  # going back
  assertEquals "lines without a stamp: $(head -1 "$OUT" | cut -c1-80)" 0 \
    "$(grep -Evc '^\{"type":"[A-Z]+","resource":"pods","at":[0-9]{10}\.[0-9]{6}[,}]' "$OUT")"
  jq -r '.at' "$OUT" >"$OUT.at"
  assertTrue "stamps within the test: $(tr '\n' ' ' <"$OUT.at")" \
    "mawk -v a=$t0 -v b=$(( $(date +%s) + 1 )) '\$1 < a || \$1 > b { exit 1 }' $OUT.at"
  assertEquals "stamps in order" "$(sort -g "$OUT.at")" "$(cat "$OUT.at")"
}

# SYNCED carries the list's resourceVersion (between those of lists read
# before and after it, and past every object listed); a server bookmark
# is printed with its own. kube-apiserver sends one 2 s before a watch's
# timeout once the resource changed past the point the watch began from
# (in any namespace): a short --watch-timeout and changes elsewhere bring
# one within seconds.
test_synced_and_bookmarks_carry_resource_versions() {
  need_cluster || return
  ns=$(new_ns wrv)
  other=$(new_ns wrvother)
  for i in 1 2 3; do pod "$ns" v$i; done
  before=$(list_rv "$ns")
  rs_bg rs-watch -v 2 --watch-timeout 3s -n "$ns" pods >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  after=$(list_rv "$ns")
  synced=$(rv_lines "$OUT" SYNCED)
  assertTrue "a whole SYNCED line: $(grep SYNCED "$OUT")" \
    "grep SYNCED $OUT | grep -Eq '$(rv_line_re SYNCED pods)'"
  assertTrue "SYNCED's resourceVersion $synced between the lists' $before and $after" \
    "[ $before -le $synced ] && [ $synced -le $after ]"
  assertTrue "SYNCED's resourceVersion past every object listed" \
    "[ $synced -ge $(max_object_rv "$OUT") ]"
  i=0
  until grep -q '"BOOKMARK"' "$OUT" || [ $i -ge 30 ]; do
    pod "$other" o$i
    sleep 1
    i=$((i + 1))
  done
  assertTrue "a BOOKMARK within 30 s: $(tail -3 "$OUT.log")" "grep -q '\"BOOKMARK\"' $OUT"
  bm=$(rv_lines "$OUT" BOOKMARK | head -1)
  assertTrue "a whole BOOKMARK line: $(grep BOOKMARK "$OUT" | head -1)" \
    "grep BOOKMARK $OUT | head -1 | grep -Eq '$(rv_line_re BOOKMARK pods)'"
  assertTrue "the BOOKMARK ($bm) past SYNCED ($synced): changes elsewhere" \
    "[ $bm -gt $synced ]"
  assertEquals "nothing of the namespace changed: SYNCED and BOOKMARKs only after the list" \
    "" "$(jq -r 'select(.type != "SYNCED" and .type != "BOOKMARK" and .type != "ADDED") | .type' "$OUT")"
  assertTrue "a watch resumes from a BOOKMARK's resourceVersion" \
    "wait_for 15 resumed_from_bookmark $OUT $OUT.log"
}

# resumed_from_bookmark FILE LOG: a watch started from the
# resourceVersion of one of FILE's BOOKMARK lines.
resumed_from_bookmark() {
  for _rv in $(rv_lines "$1" BOOKMARK); do
    grep -q "watching pods from resourceVersion $_rv " "$2" && return 0
  done
  return 1
}

# --batch never holds a streaming list: its objects, read over many passes,
# would otherwise wait the window between two passes (rs-pipeline runs
# --batch 20ms, and a relist is the time to recovery). Each line's "at" is
# the time rs-watch made it: no gap between two lines of the list as long
# as the 1 s window, which a list held once would leave. The pods carry
# 24 MB in JSON, read in many passes (in protobuf the same list came in two
# here, too few to show a hold: the bookmark came in the second); -v 1 says
# the list was a stream (pages never wait).
test_batch_never_holds_a_list() {
  need_cluster || return
  local ns gap
  ns=$(new_ns wbatchlist)
  for i in $(seq 1 400); do
    printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d","annotations":{"filler":"%060000d"}},"spec":{"containers":[{"name":"c","image":"example.invalid/none"}]}}\n' "$i" 0
  done | kubectl -n "$ns" create -f - >/dev/null
  rs_bg rs-watch -v 1 --batch 1s -n "$ns" pods >"$OUT.list" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT.list 1"
  assertEquals "every pod listed" 400 "$(grep -c '"type":"ADDED"' "$OUT.list")"
  assertTrue "listed in one stream: $(grep listed "$OUT.log")" "grep -q 'listed 400 pods in 1 stream' $OUT.log"
  gap=$(jq -rs '[.[] | select(.type == "ADDED" or .type == "SYNCED") | .at] as $t |
      [range(1; $t | length) as $i | $t[$i] - $t[$i - 1]] | max' "$OUT.list")
  assertTrue "longest gap in the list ${gap} s, not held by --batch 1s" "awk 'BEGIN { exit !($gap < 0.9) }'"
  rs_cleanup
  # no namespace controller here: 24 MB of pods left in the namespace would
  # slow every later suite that watches the whole cluster
  kubectl -n "$ns" delete pods --all --wait=false >/dev/null
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# --batch windows end on one grid of the monotonic clock: streams that
# storm together are read at the same instants, so their lines go out
# together (one wake-up of rs-sync for the pods and their owners' echoes,
# not one a stream). Three streams, each changed every 0.1-0.3 s for some
# 6 s under --batch 1s, their storms a third of a second apart: after
# each stream's first read, four fifths of their events at least are read
# within 0.1 s of one phase of the second (85 and 87 of 87 here; 58 of 87
# for windows that each stream timed from its own reads).
test_batch_windows_share_one_grid() {
  need_cluster || return
  local ns loops=
  ns=$(new_ns wgrid)
  pod "$ns" p
  kubectl -n "$ns" create configmap c >/dev/null
  kubectl -n "$ns" create secret generic s >/dev/null
  rs_bg rs-watch --batch 1s -n "$ns" pods v1/configmaps v1/secrets >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 3"
  # the streams' storms start a third of a window apart: windows timed
  # from each stream's first read would keep those phases
  for o in pod/p:0 configmap/c:0.33 secret/s:0.66; do
    ( sleep "${o#*:}"; o=${o%:*}
      for i in $(seq 1 30); do
        kubectl -n "$ns" annotate --overwrite "$o" "i=$i" >/dev/null; sleep 0.1
      done ) &
    loops="$loops $!"
  done
  wait $loops
  sleep 2
  # each event's phase in the second, all but each stream's first (read at
  # once, off the grid); the most that fall within 0.1 s of one of them
  set -- $(jq -r 'select(.type == "MODIFIED") | "\(.resource) \(.at)"' "$OUT" |
    awk '++n[$1] > 1 { p[++m] = $2 - int($2) }
      END { for (i = 1; i <= m; i++) { c = 0
          for (j = 1; j <= m; j++) { d = p[j] - p[i]; if (d < 0) d = -d
            if (d > 0.5) d = 1 - d; if (d < 0.1) c++ }
          if (c > best) best = c }
        print best + 0, m + 0 }')
  assertEquals "events of all three streams" 3 \
    "$(jq -r 'select(.type == "MODIFIED") | .resource' "$OUT" | sort -u | wc -l)"
  assertTrue "enough events: $2" "[ ${2:-0} -ge 30 ]"
  # a loaded machine may end a stream's storm (no event for 1 s): its
  # next read comes at once, off the grid; a few such do not fail it
  assertTrue "$1 of $2 events read within 0.1 s of one phase" \
    "[ $(( ${1:-0} * 10 )) -ge $(( ${2:-1} * 8 )) ]"
  rs_cleanup
  kubectl delete namespace "$ns" --wait=false >/dev/null
}

# --batch: the events of each read go out together once read, however
# long the window; with 0 each goes out on its own. Either way every event
# arrives, in order: a batch left in the buffer would never reach the reader.
test_batched_events_all_written() {
  need_cluster || return
  for b in 500ms 0; do
    ns=$(new_ns "wbatch${b%ms}")
    rs_bg rs-watch --batch "$b" -n "$ns" pods >"$OUT.$b" 2>"$OUT.log"
    assertTrue "--batch $b: SYNCED" "wait_for 20 synced_n $OUT.$b 1"
    for i in $(seq 1 12); do
      printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d"},"spec":{"containers":[{"name":"c","image":"example.invalid/none"}]}}\n' "$i"
    done | kubectl -n "$ns" apply -f - >/dev/null
    kubectl -n "$ns" delete pod p12 --wait=false >/dev/null
    assertTrue "--batch $b: the last event arrives" \
      "wait_for 20 grep -q '\"type\":\"DELETED\".*\"name\":\"p12\"' $OUT.$b"
    assertEquals "--batch $b: every pod added" 12 \
      "$(jq -r 'select(.type == "ADDED") | .object.metadata.name' "$OUT.$b" | sort -u | wc -l)"
    assertEquals "--batch $b: p12 added first, deleted last" "ADDED DELETED " \
      "$(jq -r 'select(.object.metadata.name == "p12") | .type' "$OUT.$b" | sed -n '1p;$p' | tr '\n' ' ')"
    rs_cleanup
  done
}

# A burst of events, then silence: the burst's last event goes out within
# seconds, not with the next packet (a bookmark, a minute later). Many
# events come in one read then: events read off the socket but held in a
# TLS library's buffer while rs-watch polls the socket would wait.
test_burst_then_silence_all_arrive() {
  need_cluster || return
  ns=$(new_ns wburst)
  rs_bg rs-watch -n "$ns" pods >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  for round in 1 2 3; do
    mkpods "$ns" 40 || fail "round $round: 40 pods created"
    wait_for 15 added_is "$OUT" $(( round * 40 ))
    assertEquals "round $round: ADDED within 15 s" $(( round * 40 )) \
      "$(grep -c '"type":"ADDED"' "$OUT")"
  done
  kubectl -n "$ns" delete pods --all --wait=false >/dev/null
  wait_for 15 deleted_is "$OUT" 120
  assertEquals "DELETED within 15 s" 120 "$(grep -c '"type":"DELETED"' "$OUT")"
}

# A HUP stops the watch to print its snapshot, often in the middle of a
# read that holds more events (the server writes a burst at once, and its
# DATA frames do not end where events do): what follows the last event
# handed out is dropped, not read as the start of the next frame. rs-watch
# lives through a HUP every 50 ms while 300 pods come, prints no error,
# and its stream ends equal to the server.
test_hup_during_a_burst() {
  need_cluster || return
  ns=$(new_ns whup)
  rs_bg rs-watch -v 2 --protobuf -n "$ns" pods >"$OUT" 2>"$OUT.log"
  w=$!
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  mkpods "$ns" 300 &
  b=$!
  while kill -0 "$b" 2>/dev/null; do kill -HUP "$w"; sleep 0.05; done
  wait "$b" || fail "300 pods created"
  kill -HUP "$w"
  assertTrue "still running" "kill -0 $w"
  assertTrue "snapshots printed" "[ $(synced_count "$OUT") -ge 3 ]"
  assertTrue "the stream equals the server" "wait_for 30 same_state $OUT $ns"
  assertEquals "no error logged" "" \
    "$(grep -E 'not protobuf|larger than|not a pod|warning|error' "$OUT.log" | head -3)"
}

# Changes go on while the apiserver is stopped and started: rs-watch
# retries, resumes or relists, and the stream applied in order gives
# exactly what the server has.
test_apiserver_restart_converges() {
  need_cluster || return
  ns=$(new_ns wrestart)
  for i in 1 2 3 4 5; do pod "$ns" s$i; done
  rs_bg rs-watch -v 2 --backoff-max 2s -n "$ns" pods >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  ( i=0
    while [ ! -f "$OUT.stop" ]; do
      pod "$ns" c$i 2>/dev/null
      kubectl -n "$ns" label pod "c$((i - 1))" round=$i 2>/dev/null >&2
      kubectl -n "$ns" delete pod "c$((i - 2))" --wait=false 2>/dev/null >&2
      i=$((i + 1))
    done ) &
  churn=$!
  sleep 2
  "$CLUSTER" stop-apiserver "$RS_TEST_CLUSTER"
  kubectl -n "$ns" delete pod s1 --wait=false >/dev/null 2>&1   # fails: down
  sleep 2
  "$CLUSTER" start-apiserver "$RS_TEST_CLUSTER"
  assertTrue "apiserver back" "$CLUSTER status $RS_TEST_CLUSTER"
  kubectl -n "$ns" delete pod s1 s2 --wait=false >/dev/null
  kubectl -n "$ns" label pod s3 after=restart >/dev/null
  sleep 3
  touch "$OUT.stop"
  wait "$churn"
  assertTrue "stream applied in order equals the server's pods" "wait_for 60 same_state $OUT $ns"
  if ! same_state "$OUT" "$ns"; then
    diff <(stream_state "$OUT" "$ns") <(server_state "$ns") | head -20
    tail -20 "$OUT.log"
  fi
  assertTrue "the watch failed and was retried" "grep -q 'unable to watch pods' $OUT.log"
  assertTrue "s3's update arrived" \
    "has_line $OUT '.object.metadata.name == \"s3\" and .object.metadata.labels.after == \"restart\"'"
  assertEquals "one SYNCED only" 1 "$(synced_count "$OUT")"
}

# Deletions that rs-watch cannot see: it is stopped while the apiserver is
# restarted (its watch connection dies), objects change, and the apiserver
# restarts once more, so that its watch cache starts after the changes and
# the resourceVersion rs-watch resumes from is too old: 410, relist. etcd
# is compacted too, so that a watch served from etcd is refused as well.
test_relist_after_410_reports_missed_deletions() {
  need_cluster || return
  ns=$(new_ns wgone)
  quiet=$(new_ns wgonequiet)
  for i in 1 2 3 4; do pod "$ns" p$i; done
  pod "$quiet" q1
  rs_bg rs-watch -v 2 --backoff-max 2s -n "$ns" pods >"$OUT" 2>"$OUT.log"
  w=$!
  # the same, for a namespace where nothing changes: its relist has no
  # difference to print, only how far the stream has come
  rs_bg rs-watch -v 2 --backoff-max 2s -n "$quiet" pods >"$OUT.quiet" 2>"$OUT.quiet.log"
  wq=$!
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  assertTrue "SYNCED (quiet)" "wait_for 20 synced_n $OUT.quiet 1"
  uid1=$(kubectl -n "$ns" get pod p1 -o jsonpath='{.metadata.uid}')
  uid2=$(kubectl -n "$ns" get pod p2 -o jsonpath='{.metadata.uid}')
  kill -STOP "$w" "$wq"
  "$CLUSTER" stop-apiserver "$RS_TEST_CLUSTER"
  "$CLUSTER" start-apiserver "$RS_TEST_CLUSTER"
  kubectl -n "$ns" delete pod p1 p2 --wait=false >/dev/null
  kubectl -n "$ns" label pod p3 seen=no >/dev/null
  pod "$ns" p5
  "$CLUSTER" restart-apiserver "$RS_TEST_CLUSTER"
  "$CLUSTER" compact "$RS_TEST_CLUSTER" >/dev/null
  lines=$(wc -l <"$OUT")
  qlines=$(wc -l <"$OUT.quiet")
  kill -CONT "$w" "$wq"
  assertTrue "relisted after 410" "wait_for 60 grep -q 'relisting after 410' $OUT.log" ||
    diagnose "$w" "$OUT.log"
  assertTrue "stream equals the server" "wait_for 30 same_state $OUT $ns"
  assertTrue "relisted after 410 (quiet)" "wait_for 60 grep -q 'relisting after 410' $OUT.quiet.log" ||
    diagnose "$wq" "$OUT.quiet.log"
  assertTrue "a BOOKMARK after the relist" \
    "wait_for 30 grep -q '\"BOOKMARK\"' $OUT"
  assertTrue "a BOOKMARK after the relist (quiet)" \
    "wait_for 30 grep -q '\"BOOKMARK\"' $OUT.quiet"
  tail -n +"$((lines + 1))" "$OUT" >"$OUT.after"
  tail -n +"$((qlines + 1))" "$OUT.quiet" >"$OUT.quiet.after"
  # the relist's difference, then its BOOKMARK: the first after the 410
  # (the watch after it may bring more, never before it)
  relisted=$(grep -E "listed [0-9]+ pods in 1 (page|stream) at resourceVersion" "$OUT.log" | tail -1 |
    sed 's/.*at resourceVersion \([0-9]*\) .*/\1/')
  assertEquals "the relist's difference (list order, then the sweep), then its BOOKMARK" \
    "MODIFIED ADDED DELETED DELETED BOOKMARK" \
    "$(jq -r .type "$OUT.after" | sed '/^BOOKMARK$/q' | tr '\n' ' ' | sed 's/ $//')"
  assertEquals "the relist's BOOKMARK carries its resourceVersion" "$relisted" \
    "$(rv_lines "$OUT.after" BOOKMARK | head -1)"
  assertTrue "a whole BOOKMARK line that says it ends a relist: $(grep BOOKMARK "$OUT.after" | head -1)" \
    "grep BOOKMARK $OUT.after | head -1 | grep -Eq '$(rv_line_re BOOKMARK pods ',"relist":true')'"
  assertTrue "the quiet relist's BOOKMARK says so too: $(head -1 "$OUT.quiet.after")" \
    "head -1 $OUT.quiet.after | grep -Eq '$(rv_line_re BOOKMARK pods ',"relist":true')'"
  assertEquals "one BOOKMARK with relist for each list after the first, no other" \
    "$(( $(grep -cE "listed [0-9]+ pods in" "$OUT.log") - 1 ))" \
    "$(jq -c 'select(.relist != null)' "$OUT" | grep -c '"BOOKMARK".*"relist":true}$')"
  assertTrue "the BOOKMARK is at or past every object printed: $relisted" \
    "[ $relisted -ge $(max_object_rv "$OUT") ]"
  assertTrue "the BOOKMARK is past the SYNCED" \
    "[ $relisted -gt $(rv_lines "$OUT" SYNCED) ]"
  qrelisted=$(grep -E "listed [0-9]+ pods in 1 (page|stream) at resourceVersion" "$OUT.quiet.log" | tail -1 |
    sed 's/.*at resourceVersion \([0-9]*\) .*/\1/')
  assertEquals "nothing changed: a BOOKMARK with the relist's resourceVersion first" \
    "BOOKMARK $qrelisted" "$(head -1 "$OUT.quiet.after" | jq -r '"\(.type) \(.resourceVersion)"')"
  assertTrue "the quiet relist's BOOKMARK is past the writes made meanwhile elsewhere" \
    "[ $qrelisted -ge $(max_object_rv "$OUT") ]"
  assertEquals "p1 and p2 deleted with final state unknown" \
    "p1 $uid1 true
p2 $uid2 true" \
    "$(jq -r 'select(.type == "DELETED") | "\(.object.metadata.name) \(.object.metadata.uid) \(.final_state_unknown)"' "$OUT.after" | sort)"
  assertEquals "p3's change as MODIFIED" "no" \
    "$(jq -r 'select(.type == "MODIFIED" and .object.metadata.name == "p3") | .object.metadata.labels.seen' "$OUT.after")"
  assertEquals "p5 as ADDED" "p5" \
    "$(jq -r 'select(.type == "ADDED") | .object.metadata.name' "$OUT.after")"
  assertEquals "p4 unchanged, not printed" 0 \
    "$(jq -r 'select(.object.metadata.name == "p4")' "$OUT.after" | wc -l)"
  assertEquals "no SYNCED for a relist" 1 "$(synced_count "$OUT")"
}

# A continue token that expires in the middle of a paginated list (the
# apiserver restarted, so its cache no longer has the list's snapshot, and
# etcd compacted past it): the list starts again, and every object is
# printed once.
test_expired_continue_token_restarts_the_list() {
  need_cluster || return
  ns=$(new_ns wcont)
  for i in $(seq 1 30); do echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c$i\"}}"; done |
    kubectl -n "$ns" create -f - >/dev/null
  # two objects a page, one page a second: 16 s of paging
  rs_bg rs-watch -v 1 --list pages --page-size 2 --kube-api-qps 1 --kube-api-burst 1 --backoff-max 1s \
    -n "$ns" v1/configmaps >"$OUT" 2>"$OUT.log"
  sleep 2.5
  "$CLUSTER" stop-apiserver "$RS_TEST_CLUSTER"
  . "$RS_TEST_CLUSTER/env"
  curl -sS -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/put" -d '{"key":"cnMtd2F0Y2gtYnVtcA==","value":"eA=="}' >/dev/null
  "$CLUSTER" compact "$RS_TEST_CLUSTER" >/dev/null
  "$CLUSTER" start-apiserver "$RS_TEST_CLUSTER"
  assertTrue "SYNCED" "wait_for 60 synced_n $OUT 1"
  assertTrue "the continue token expired: $(tail -3 "$OUT.log")" \
    "grep -q 'continue token of the configmaps list expired after [0-9]* pages' $OUT.log"
  assertEquals "every object once" "$(seq 1 30 | sed 's/^/c/' | sort)" \
    "$(jq -r 'select(.type == "ADDED") | .object.metadata.name' "$OUT" | sort)"
  assertEquals "30 ADDED and SYNCED, nothing else" 31 "$(wc -l <"$OUT")"
}

test_head_exits_at_once() {
  need_cluster || return
  ns=$(new_ns whead)
  for i in 1 2 3; do pod "$ns" h$i; done
  for what in "-n $ns pods" "-n $ns replicasets"; do
    start=$(date +%s)
    # shellcheck disable=SC2086
    timeout 20 rs-watch $what 2>"$OUT.err" | head -1 >"$OUT.first"
    st=${PIPESTATUS[0]}
    assertEquals "rs-watch $what | head -1: exit status" 0 "$st"
    assertTrue "rs-watch $what | head -1: at once" "[ $(( $(date +%s) - start )) -lt 5 ]"
    assertTrue "a whole line" "jq -e .type $OUT.first"
    assertEquals "quiet" "" "$(cat "$OUT.err")"
  done
}

test_sighup_prints_a_snapshot() {
  need_cluster || return
  ns=$(new_ns whup)
  for i in 1 2 3; do pod "$ns" k$i; done
  rs_bg rs-watch -v 1 -n "$ns" pods >"$OUT" 2>"$OUT.log"
  w=$!
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  kubectl -n "$ns" delete pod k1 --wait=false >/dev/null
  kubectl -n "$ns" label pod k2 x=y >/dev/null
  assertTrue "watched deletion" "wait_for 20 grep -q '\"DELETED\"' $OUT"
  assertTrue "watched update" "wait_for 20 grep -q '\"MODIFIED\"' $OUT"
  lines=$(wc -l <"$OUT")
  kill -HUP "$w"
  assertTrue "second SYNCED" "wait_for 20 synced_n $OUT 2"
  # (a BOOKMARK of the watch may come at any time: it is no object)
  assertEquals "the snapshot: every live pod as MODIFIED, then SYNCED" \
    "MODIFIED k2 $(kubectl -n "$ns" get pod k2 -o jsonpath='{.metadata.resourceVersion}')
MODIFIED k3 $(kubectl -n "$ns" get pod k3 -o jsonpath='{.metadata.resourceVersion}')
SYNCED null null" \
    "$(tail -n +"$((lines + 1))" "$OUT" | jq -r 'select(.type != "BOOKMARK") | "\(.type) \(.object.metadata.name) \(.object.metadata.resourceVersion)"' | sort)"
  assertTrue "the snapshot's SYNCED carries its list's resourceVersion" \
    "[ $(rv_lines "$OUT" SYNCED | tail -1) -ge $(max_object_rv "$OUT") ] &&
     [ $(rv_lines "$OUT" SYNCED | tail -1) -gt $(rv_lines "$OUT" SYNCED | head -1) ]"
  assertTrue "still watching after the snapshot" "kill -0 $w"
  pod "$ns" k4
  assertTrue "events after the snapshot" "wait_for 20 grep -q '\"name\":\"k4\"' $OUT"
}

test_sigterm_and_sigint_exit_0() {
  need_cluster || return
  ns=$(new_ns wterm)
  pod "$ns" t1
  for sig in TERM INT; do
    rs-watch -n "$ns" pods replicasets >"$OUT.$sig" 2>"$OUT.log" &
    w=$!
    assertTrue "SYNCED" "wait_for 20 synced_n $OUT.$sig 2"
    kill -"$sig" "$w"
    wait "$w"
    assertEquals "exit status after SIG$sig" 0 $?
    assertEquals "lines flushed" 3 "$(jq -c . "$OUT.$sig" | wc -l)"
  done
}

test_managed_fields_trimmed_unless_no_trim() {
  need_cluster || return
  ns=$(new_ns wtrim)
  pod "$ns" m1
  assertTrue "the server keeps managedFields" \
    "kubectl -n $ns get pod m1 -o json --show-managed-fields | jq -e '.metadata.managedFields | length > 0'"
  rs_bg rs-watch -n "$ns" pods >"$OUT" 2>"$OUT.log"
  rs_bg rs-watch --no-trim -n "$ns" pods >"$OUT.full" 2>"$OUT.log2"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  assertTrue "SYNCED (--no-trim)" "wait_for 20 synced_n $OUT.full 1"
  pod "$ns" m2
  assertTrue "m2 seen" "wait_for 20 grep -q '\"name\":\"m2\"' $OUT"
  assertTrue "m2 seen (--no-trim)" "wait_for 20 grep -q '\"name\":\"m2\"' $OUT.full"
  assertEquals "trimmed: listed and watched" 0 \
    "$(jq -r 'select(.object.metadata.managedFields != null) | 1' "$OUT" | wc -l)"
  assertEquals "kept with --no-trim: listed and watched" 2 \
    "$(jq -r 'select(.object.metadata.managedFields | length > 0) | .object.metadata.name' "$OUT.full" | sort -u | wc -l)"
}

# pod_proj: the fields of a pod that --protobuf prints (rs-watch(1)), cut
# from the whole pod that JSON gives: what the protobuf side must equal.
pod_proj='def some(f): if . == null then null else map(f) end;
  def drop_nulls: with_entries(select(.value != null));
  {apiVersion, kind, metadata,
   spec: (.spec // null | if . == null then null else {nodeName: (.nodeName // null | if . == "" then null else . end),
     initContainers: (.initContainers | some({name, restartPolicy} | drop_nulls))} | drop_nulls end),
   status: (.status // null | if . == null then null else {phase: (.phase // null | if . == "" then null else . end),
     conditions: (.conditions | some({type, status, lastTransitionTime})),
     containerStatuses: (.containerStatuses | some({name, ready, restartCount})),
     initContainerStatuses: (.initContainerStatuses | some({name, ready, restartCount}))} | drop_nulls end)}
  | with_entries(select(.value != null))'

# events_of FILE [PROJECT]: FILE's object events, one a line, keys sorted:
# type, final_state_unknown, ref_managers, the object (its projection).
events_of() {
  jq -cS --arg p "${2:-}" "select(.object) | {type, final_state_unknown, ref_managers,
    object: (if \$p == \"project\" then .object | $pod_proj else .object end)}" "$1"
}

# --protobuf reads pods in protobuf and prints, of each, the fields the
# controller reads, each as JSON has it: the same events as a watcher in
# JSON, object for object, through a streaming list, pages, watch events
# (a change of labels, of status, a deletion that waits on a finalizer),
# a relist after 410 and a SIGHUP snapshot; --no-trim keeps managedFields
# whole, as JSON does.
test_protobuf_prints_what_json_does() {
  need_cluster || return
  . "$RS_TEST_CLUSTER/env"
  ns=$(new_ns wpb)
  cat >"$TMP/pbpod.json" <<'JSON'
{"metadata":{"name":"rich","labels":{"app":"x","tier":"y"},
  "annotations":{"controller.kubernetes.io/pod-deletion-cost":"7","note":"caf\u00e9 \"q\" \\ \t<&>"},
  "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs1",
    "uid":"11111111-2222-3333-4444-555555555555","controller":true,"blockOwnerDeletion":true},
   {"apiVersion":"v1","kind":"ConfigMap","name":"other","uid":"66666666-2222-3333-4444-555555555555"}]},
 "spec":{"nodeName":"n1","initContainers":[{"name":"side","image":"i","restartPolicy":"Always"},
   {"name":"once","image":"i"}],"containers":[{"name":"c","image":"i"},{"name":"d","image":"i"}]}}
JSON
  api_curl -o /dev/null -H 'Content-Type: application/json' -d @"$TMP/pbpod.json" \
    "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/$ns/pods"
  api_curl -o /dev/null -X PATCH -H 'Content-Type: application/merge-patch+json' \
    "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/$ns/pods/rich/status" -d '{"status":{"phase":"Running",
    "conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-26T01:02:03Z"},
      {"type":"PodScheduled","status":"True"}],
    "containerStatuses":[{"name":"c","image":"i","imageID":"","ready":true,"restartCount":3,"state":{"running":{}}},
      {"name":"d","image":"i","imageID":"","ready":false,"restartCount":0,"state":{}}],
    "initContainerStatuses":[{"name":"side","image":"i","imageID":"","ready":true,"restartCount":5,"state":{}}]}}'
  for i in 1 2 3 4 5; do pod "$ns" q$i; done
  all=
  for mode in stream pages; do
    for trim in "" --no-trim; do
      for wire in json pb; do
        rs_bg rs-watch -v 2 --backoff-max 1s --list $mode --page-size 2 $trim \
          $([ $wire = pb ] && echo --protobuf) -n "$ns" pods >"$OUT.$mode$trim.$wire" 2>"$OUT.$mode$trim.$wire.log"
        all="$all $!"
      done
    done
  done
  for f in "$OUT".*.json "$OUT".*.pb; do
    assertTrue "SYNCED: $f" "wait_for 20 synced_n $f 1"
  done
  assertTrue "pages in protobuf" "grep -q 'listed 6 pods in 3 pages' $OUT.pages.pb.log"
  assertTrue "a stream in protobuf" "grep -q 'listed 6 pods in 1 stream' $OUT.stream.pb.log"
  kubectl -n "$ns" label pod rich seen=yes >/dev/null
  api_curl -o /dev/null -X PATCH -H 'Content-Type: application/merge-patch+json' \
    "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/$ns/pods/q1/status" \
    -d '{"status":{"conditions":[{"type":"Ready","status":"True","lastTransitionTime":"2026-11-26T03:04:05Z"}]}}'
  kubectl -n "$ns" patch pod q2 --type merge -p '{"metadata":{"finalizers":["example.com/hold"]}}' >/dev/null
  kubectl -n "$ns" delete pod q2 --wait=false >/dev/null
  kubectl -n "$ns" delete pod q3 --wait=false >/dev/null
  kubectl -n "$ns" patch pod q2 --type merge -p '{"metadata":{"finalizers":null}}' >/dev/null
  # a relist after 410, for every watcher: all of them stopped, so that
  # each pair lives through the same events
  for f in "$OUT".*.json "$OUT".*.pb; do
    assertTrue "q2 deleted: $f" "wait_for 20 has_line $f '.type == \"DELETED\" and .object.metadata.name == \"q2\"'"
  done
  kill -STOP $all
  "$CLUSTER" stop-apiserver "$RS_TEST_CLUSTER"
  "$CLUSTER" start-apiserver "$RS_TEST_CLUSTER"
  kubectl -n "$ns" delete pod q4 --wait=false >/dev/null
  kubectl -n "$ns" label pod q5 seen=no >/dev/null
  pod "$ns" q6
  "$CLUSTER" restart-apiserver "$RS_TEST_CLUSTER"
  "$CLUSTER" compact "$RS_TEST_CLUSTER" >/dev/null
  kill -CONT $all
  for f in "$OUT".*.json "$OUT".*.pb; do
    assertTrue "relisted after 410: $f" "wait_for 60 grep -q 'relisting after 410' $f.log"
    assertTrue "the stream equals the server: $f" "wait_for 30 same_state $f $ns"
  done
  set -- $all
  kill -HUP "$1" "$2"
  for wire in json pb; do
    assertTrue "the snapshot's SYNCED ($wire)" "wait_for 20 synced_n $OUT.stream.$wire 2"
  done
  pod "$ns" zz
  for f in "$OUT".*.json "$OUT".*.pb; do
    assertTrue "the last pod: $f" "wait_for 20 grep -q '\"name\":\"zz\"' $f"
  done
  for pair in stream stream--no-trim pages pages--no-trim; do
    events_of "$OUT.$pair.json" project >"$OUT.$pair.want"
    events_of "$OUT.$pair.pb" >"$OUT.$pair.got"
    assertTrue "$pair: some events" "[ $(wc -l <"$OUT.$pair.got") -ge 10 ]"
    assertEquals "$pair: protobuf prints what JSON does" "" \
      "$(diff "$OUT.$pair.want" "$OUT.$pair.got" | head -20)"
  done
  assertEquals "no error logged in protobuf" "" \
    "$(cat "$OUT".*.pb.log | grep -E 'not protobuf|not a pod|error' | head -3)"
  assertTrue "the deletion-cost annotation and the owners are there" \
    "has_line $OUT.stream.pb '.object.metadata.annotations[\"controller.kubernetes.io/pod-deletion-cost\"] == \"7\" and (.object.metadata.ownerReferences | length) == 2'"
  assertTrue "a MODIFIED with a deletionTimestamp" \
    "has_line $OUT.stream.pb '.type == \"MODIFIED\" and .object.metadata.deletionTimestamp != null'"
  assertTrue "the ref_managers of the rich pod" \
    "has_line $OUT.stream.pb '.object.metadata.name == \"rich\" and .ref_managers == [\"curl\"]'"
  assertTrue "managedFields kept by --no-trim" \
    "has_line $OUT.stream--no-trim.pb '(.object.metadata.managedFields | length) > 0'"
}

test_several_resources_share_one_stream() {
  need_cluster || return
  ns=$(new_ns wmulti)
  mkpods "$ns" 300
  for i in $(seq 1 40); do echo "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"cm$i\"},\"data\":{\"k\":\"$(head -c 3000 /dev/zero | tr '\0' x)\"}}"; done |
    kubectl -n "$ns" create -f - >/dev/null
  rs_bg rs-watch --page-size 50 -n "$ns" pods v1/configmaps apps/v1/replicasets >"$OUT" 2>"$OUT.log"
  assertTrue "three SYNCED" "wait_for 30 synced_n $OUT 3"
  assertEquals "every line is whole JSON" "$(wc -l <"$OUT")" "$(jq -c . "$OUT" | wc -l)"
  assertEquals "pods" 300 "$(jq -r 'select(.resource == "pods" and .type == "ADDED") | 1' "$OUT" | wc -l)"
  assertEquals "configmaps" 40 \
    "$(jq -r 'select(.resource == "configmaps" and .type == "ADDED" and .object.kind == "ConfigMap") | 1' "$OUT" | wc -l)"
  assertEquals "one SYNCED each" "configmaps pods replicasets" \
    "$(jq -r 'select(.type == "SYNCED") | .resource' "$OUT" | sort | tr '\n' ' ' | sed 's/ $//')"
  rs_cleanup
  # the core group as /v1/plural, with a label selector
  kubectl -n "$ns" label cm cm7 pick=me >/dev/null
  rs_bg rs-watch -n "$ns" -l pick=me /v1/configmaps >"$OUT.sel" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT.sel 1"
  assertEquals "the selector applies" "cm7" "$(jq -r 'select(.type == "ADDED") | .object.metadata.name' "$OUT.sel")"
}

# A watch the server ends (its timeout) is resumed at once, not after a
# backoff; events keep coming across the reconnects.
test_server_timeout_reconnects_at_once() {
  need_cluster || return
  ns=$(new_ns wtimeout)
  rs_bg rs-watch -v 2 --watch-timeout 2s --backoff-initial 5s -n "$ns" pods >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  for i in 1 2 3 4; do pod "$ns" r$i; sleep 2; done
  assertTrue "all four pods seen" "wait_for 20 added_is $OUT 4"
  assertTrue "watches ended by the server" "[ $(grep -c 'watch of pods ended after' "$OUT.log") -ge 2 ]"
  assertEquals "no backoff" 0 "$(grep -c 'retrying in' "$OUT.log")"
  assertTrue "timeoutSeconds of 2 to 4 s" "grep -Eq 'watching pods from resourceVersion [0-9]+ for [234] s' $OUT.log"
}

# rs-watch's watches go on HTTP/2 connections of their own (libnghttp2 over
# OpenSSL, --http-client direct, the default), each kept for the next
# watch: with the server ending each watch after a second, the two resources'
# watches come on at most two connections in all. --http-client curl, and a
# proxy in the environment (no_proxy names the server, so it is not used),
# leave them to libcurl. Each way the same pods arrive.
test_watches_on_direct_http2() {
  need_cluster || return
  ns=$(new_ns wdirect)
  rs_bg rs-watch -v 4 --watch-timeout 1s --protobuf -n "$ns" pods replicasets >"$OUT" 2>"$OUT.log"
  rs_bg rs-watch -v 4 --http-client curl -n "$ns" pods >"$OUT.curl" 2>"$OUT.curl.log"
  rs_bg env HTTPS_PROXY=http://127.0.0.1:1 NO_PROXY=127.0.0.1 no_proxy=127.0.0.1 \
    rs-watch -v 4 -n "$ns" pods >"$OUT.proxy" 2>"$OUT.proxy.log"
  assertTrue "SYNCED (direct)" "wait_for 20 synced_n $OUT 2"
  for f in "$OUT.curl" "$OUT.proxy"; do
    assertTrue "SYNCED: $f" "wait_for 20 synced_n $f 1"
  done
  for i in 1 2 3 4 5; do pod "$ns" d$i; sleep 1; done
  for f in "$OUT" "$OUT.curl" "$OUT.proxy"; do
    assertTrue "five pods: $f" "wait_for 20 added_is $f 5"
  done
  grep -q 'API requests to https://.* on direct HTTP/2 (libnghttp2' "$OUT.log" ||
    fail "the watches not direct: $(head -3 "$OUT.log")"
  watches=$(grep -c 'watch of .* ended after' "$OUT.log")
  ups=$(grep -c 'HTTP/2 connection to https://.* up$' "$OUT.log")
  [ "$watches" -ge 4 ] || fail "only $watches watches ended by the server"
  [ "$ups" -ge 1 ] && [ "$ups" -le 2 ] ||
    fail "$ups connections up for $watches watches: not kept between watches"
  grep -q 'on libcurl' "$OUT.log" && fail "fell back to libcurl: $(grep 'on libcurl' "$OUT.log")"
  grep -q 'HTTP/2' "$OUT.curl.log" && fail "--http-client curl went direct: $(grep HTTP/2 "$OUT.curl.log")"
  grep -q 'on libcurl, not direct HTTP/2: a proxy is set in the environment' "$OUT.proxy.log" ||
    fail "a proxy set, and no word of libcurl: $(head -3 "$OUT.proxy.log")"
  grep -q 'HTTP/2 connection' "$OUT.proxy.log" && fail "a proxy set, and the watch went direct"
  return 0
}

# A server without HTTP/2 (kube-apiserver --disable-http2-serving): the
# first watches find it out at their handshake (ALPN) and every thread's
# watches go on libcurl from then on, as -v 1 says; none is lost or
# printed twice for the switch, and no later watch dials directly again.
test_watches_fall_back_without_http2() {
  need_cluster || return
  cluster_of_our_own "$TMP/h1" RS_TEST_APISERVER_FLAGS=--disable-http2-serving || return
  local -x KUBECONFIG=$TMP/h1/kubeconfig
  ns=$(new_ns wh1)
  rs_bg rs-watch -v 4 --watch-timeout 1s --protobuf -n "$ns" pods replicasets >"$OUT" 2>"$OUT.log"
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 2"
  for i in 1 2 3 4 5; do pod "$ns" h$i; sleep 1; done
  assertTrue "five pods" "wait_for 20 added_is $OUT 5"
  assertEquals "each pod once" 5 "$(jq -r 'select(.type == "ADDED") | .object.metadata.name' "$OUT" | sort -u | wc -l)"
  grep -q 'API streams to https://.* on libcurl from now on: the server does not offer HTTP/2 (ALPN)' "$OUT.log" ||
    fail "no word of the switch: $(grep -i 'http/2\|libcurl' "$OUT.log" | head -3)"
  watches=$(grep -c 'watch of .* ended after' "$OUT.log")
  dials=$(grep -c 'HTTP/2: dialling' "$OUT.log")
  [ "$watches" -ge 4 ] || fail "only $watches watches ended by the server"
  [ "$dials" -le 2 ] || fail "$dials direct dials for $watches watches: the switch did not hold"
  grep -q 'HTTP/2 connection to .* up' "$OUT.log" && fail "a direct connection came up"
  "$top/tests/env/cluster" down "$TMP/h1" >/dev/null 2>&1
  return 0
}

# 403 is retried with a clear warning (as a reflector does), and the list
# goes through once the permission is granted.
test_forbidden_is_retried() {
  need_cluster || return
  ns=$(new_ns wforbid)
  pod "$ns" f1
  d=$TMP/nobody
  mkdir -p "$d"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=rs-watch-nobody-$ns" -keyout "$d/key" -out "$d/csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$d/ext"
  openssl x509 -req -in "$d/csr" -CA "$RS_TEST_CLUSTER/ca.crt" -CAkey "$RS_TEST_CLUSTER/ca.key" \
    -CAcreateserial -days 1 -extfile "$d/ext" -out "$d/crt" 2>/dev/null
  sed -e "s|client-certificate: .*|client-certificate: $d/crt|" -e "s|client-key: .*|client-key: $d/key|" \
    "$KUBECONFIG" >"$d/kubeconfig"
  rs_bg rs-watch --kubeconfig "$d/kubeconfig" --backoff-max 1s -n "$ns" pods >"$OUT" 2>"$OUT.log"
  w=$!
  assertTrue "a clear warning" "wait_for 20 grep -q 'rs-watch: warning: unable to list pods: Forbidden: ' $OUT.log"
  sleep 1
  assertTrue "still running" "kill -0 $w"
  # a Role of its own: "view" is aggregated by kube-controller-manager,
  # which the test cluster does not run
  kubectl -n "$ns" create role pod-reader --verb=get,list,watch --resource=pods >/dev/null
  kubectl -n "$ns" create rolebinding nobody-read --role=pod-reader --user="rs-watch-nobody-$ns" >/dev/null
  assertTrue "listed once allowed" "wait_for 30 synced_n $OUT 1"
  assertEquals "f1" "f1" "$(jq -r 'select(.type == "ADDED") | .object.metadata.name' "$OUT")"
}

# An object longer than --max-line is never printed, which would leave the
# next stage (rs-sync reads 16 MiB lines by default too) to skip it: rs-watch
# says so and exits 111, from the watch and from the list alike.
test_object_longer_than_max_line_stops() {
  need_cluster || return
  ns=$(new_ns wmax)
  pod "$ns" small
  rs_bg rs-watch --max-line 100000 -n "$ns" pods >"$OUT" 2>"$OUT.log"
  w=$!
  assertTrue "SYNCED" "wait_for 20 synced_n $OUT 1"
  head -c 150000 /dev/zero | tr '\0' x >"$TMP/big"
  jq -n --arg ns "$ns" --rawfile v "$TMP/big" '{apiVersion: "v1", kind: "Pod",
      metadata: {name: "big", namespace: $ns, annotations: {big: $v}},
      spec: {containers: [{name: "c", image: "example.invalid/none"}]}}' |
    kubectl create -f - >/dev/null
  assertTrue "the big pod exists" "kubectl -n $ns get pod big"
  wait_for 20 sh -c "! kill -0 $w 2>/dev/null"
  kill "$w" 2>/dev/null   # still running: the test fails, it does not hang
  wait "$w"; rc=$?
  assertEquals "exit status after a long watch event" 111 "$rc"
  assertTrue "says why: $(tail -2 "$OUT.log")" \
    "grep -q 'a pods event of [0-9]* bytes is longer than --max-line (100000 bytes)' '$OUT.log'"
  assertEquals "no line over the limit printed" 0 "$(awk 'length > 100000' "$OUT" | wc -l)"
  assertTrue "the small pod was printed" "grep -q '\"name\":\"small\"' '$OUT'"

  timeout 20 rs-watch --max-line 100000 -n "$ns" pods >"$OUT.2" 2>"$OUT.2.log"
  assertEquals "exit status after a long listed object" 111 $?
  assertTrue "says why (list)" "grep -q 'longer than --max-line' '$OUT.2.log'"
  assertFalse "not synced" "synced_n $OUT.2 1"
  timeout 10 rs-watch -n "$ns" pods 2>/dev/null | head -3 >"$OUT.3"
  assertTrue "the default takes it" "grep -q '\"name\":\"big\"' '$OUT.3'"
}

test_usage_errors_exit_100() {
  rs-watch --bogus pods >/dev/null 2>"$OUT.err"
  assertEquals "bad flag" 100 $?
  assertTrue "bad flag: message" "grep -q 'rs-watch: fatal: ' $OUT.err"
  rs-watch >/dev/null 2>&1
  assertEquals "no resource" 100 $?
  rs-watch widgets >/dev/null 2>"$OUT.err"
  assertEquals "unknown short name" 100 $?
  assertTrue "names the resource" "grep -q \"unknown resource 'widgets'\" $OUT.err"
  rs-watch --page-size -1 pods >/dev/null 2>&1
  assertEquals "bad page size" 100 $?
  rs-watch --list all pods >/dev/null 2>"$OUT.err"
  assertEquals "bad list mode" 100 $?
  assertTrue "--list: message" "grep -q 'list takes stream or pages' $OUT.err"
  rs-watch --backoff-max 3x pods >/dev/null 2>&1
  assertEquals "bad duration" 100 $?
  rs-watch --batch 2s pods >/dev/null 2>"$OUT.err"
  assertEquals "--batch past 1s" 100 $?
  assertTrue "--batch: message" "grep -q 'batch must be at most 1s' $OUT.err"
  rs-watch pods pod >/dev/null 2>&1
  assertEquals "same resource twice" 100 $?
  rs-watch --help >"$OUT.help"
  assertEquals "--help exits 0" 0 $?
  assertTrue "--help shows usage" "grep -q '^usage: rs-watch' $OUT.help"
  need_cluster || return
  timeout 20 rs-watch example.com/v1/widgets >/dev/null 2>"$OUT.err"
  assertEquals "a resource the server does not have" 100 $?
  assertTrue "says so: $(cat "$OUT.err")" "grep -q 'rs-watch: fatal: unable to list widgets: NotFound' $OUT.err"
  timeout 20 rs-watch -l 'a in (' pods >/dev/null 2>"$OUT.err"
  assertEquals "a selector the server refuses" 100 $?
}

. "$SHUNIT2"
