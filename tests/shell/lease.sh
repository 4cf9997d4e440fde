#!/bin/bash
# rs-lease against the real test apiserver: one holder runs prog, the others
# wait (also when all start at once); takeover after SIGKILL (lease expiry,
# prog stopped by its guard) and after SIGTERM (release, taken at once by
# the candidate watching the Lease, four times in a row); prog's exit code
# and leftovers; a stolen lease; the API server gone past the renew
# deadline; and the whole controller under two rs-lease copies, the leader
# killed in the middle of a scale-up. Default timings (15 s lease, 10 s
# renew deadline, 2 s retry) throughout. The windows are measured from the
# events, not from the test's clock: the Lease's renewTime and acquireTime
# in each version a watch saw, and the times a prog wrote when TERM reached
# it and when it was gone.
. "$(dirname "$0")/lib.sh"

# lease_bg ID NS NAME PROG...: rs-lease in the background as candidate ID,
# log in $TMP/ID.log; its pid in LEASE_PID.
lease_bg() {
  _id=$1 _ns=$2 _name=$3; shift 3
  rs-lease -v 1 --lease-namespace "$_ns" --identity "$_id" "$_name" "$@" \
    2>"$TMP/$_id.log" &
  LEASE_PID=$!
  LEASE_PIDS="$LEASE_PIDS $LEASE_PID"
}

# marker ID: the words of a prog that writes its pid to $TMP/ID.pid, then
# sleeps (the same process: exec).
printf '#!/bin/sh\necho $$ > "$1.tmp" && mv "$1.tmp" "$1"\nexec sleep 600\n' >"$TMP/marker.sh"
marker() { echo "sh $TMP/marker.sh $TMP/$1.pid"; }

# timed ID [ignore]: the words of a prog that writes its pid to $TMP/ID.pid
# and, in ms, the time SIGTERM reaches it to $TMP/ID.term; it exits then,
# or with "ignore" runs on (SIGKILL ends it). A watcher outside its process
# group writes the time it is gone (or a zombie) to $TMP/ID.gone.
cat >"$TMP/timed.sh" <<'END'
#!/bin/sh
trap 'date +%s%3N >>"$1.term"; [ "$2" = ignore ] || { kill $! 2>/dev/null; exit 0; }' TERM
echo $$ >"$1.pid.tmp" && mv "$1.pid.tmp" "$1.pid"
setsid sh -c 'while [ -e /proc/$0 ] && [ "$(sed "s/^.*) //; s/ .*//" /proc/$0/stat 2>/dev/null)" != Z ]; do
  sleep 0.05; done; date +%s%3N >"$1.gone"' $$ "$1" </dev/null >/dev/null 2>&1 &
while :; do sleep 600 & wait; done
END
timed() { echo "sh $TMP/timed.sh $TMP/$1 ${2:-}"; }

# lease_record NS NAME: every version of the Lease from now on, as a watch
# sends them, in $TMP/NAME.lease (stopped by tearDown). Returns once the
# current version is in (the watch goes on from there).
lease_record() {
  kubectl -n "$1" get lease "$2" -w -o json >"$TMP/$2.lease" 2>/dev/null &
  LEASE_PIDS="$LEASE_PIDS $!"
  wait_for 20 test -s "$TMP/$2.lease" || fail "no watch of the Lease $1/$2"
}

# lease_versions NAME: "HOLDER ACQUIRE-MS RENEW-MS DURATION" of each version
# in $TMP/NAME.lease, in order; "-" for no holder.
lease_versions() {
  jq -r 'def ms: if . then (.[0:19] + "Z" | fromdateiso8601) * 1000 + (.[20:23] | tonumber) else 0 end;
    .spec | "\(if (.holderIdentity // "") == "" then "-" else .holderIdentity end) \(.acquireTime | ms) \(.renewTime | ms) \(.leaseDurationSeconds)"' \
    "$TMP/$1.lease"
}
# last_renewal NAME ID: ID's last renewTime (ms); first_acquired NAME ID:
# the acquireTime (ms) of the first version ID holds.
last_renewal() { lease_versions "$1" | mawk -v id="$2" '$1 == id { r = $3 } END { print (r == "" ? 0 : r) }'; }
first_acquired() { lease_versions "$1" | mawk -v id="$2" '$1 == id { print $2; exit }'; }
group_dead() {
  for _p in $(pgrep -g "$1" 2>/dev/null); do alive "$_p" && return 1; done
  return 0
}

holder() {
  kubectl -n "$1" get lease "$2" -o jsonpath='{.spec.holderIdentity}' 2>/dev/null
}
holder_set() { [ -n "$(holder "$1" "$2")" ]; }
holder_is() { [ "$(holder "$1" "$2")" = "$3" ]; }
transitions() {
  kubectl -n "$1" get lease "$2" -o jsonpath='{.spec.leaseTransitions}'
}

# After each test: its rs-lease copies stopped, and any marker prog left
# behind killed, whatever the test did.
tearDown() {
  stop_leases
  stop_instances
  rm -f "$TMP"/*.term "$TMP"/*.gone "$TMP"/*.lease
  rs_cleanup
}

oneTimeTearDown() {
  rs_cleanup
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then cp -r "$TMP" "$RS_KEEP_LOGS"; fi
  rm -rf "$RS_STATE_DIR"
}

test_usage() {
  need_cluster || return
  rs-lease >/dev/null 2>&1; assertEquals "no args" 100 $?
  rs-lease name >/dev/null 2>&1; assertEquals "no prog" 100 $?
  rs-lease --leader-elect-lease-duration 10s --leader-elect-renew-deadline 10s \
    name true >/dev/null 2>&1
  assertEquals "lease duration not above renew deadline" 100 $?
  rs-lease --leader-elect-renew-deadline 2s --leader-elect-retry-period 2s \
    name true >/dev/null 2>&1
  assertEquals "renew deadline not above 1.2 x retry" 100 $?
  rs-lease --lease-namespace Bad_NS name true >/dev/null 2>&1
  assertEquals "bad namespace" 100 $?
  rs-lease --leader-elect-retry-period 2 name true >/dev/null 2>&1
  assertEquals "duration without unit" 100 $?
  out=$(rs-lease --help); assertEquals "--help exits 0" 0 $?
  assertContains "help names the flags" "$out" "--leader-elect-renew-deadline"
}

# The first candidate runs prog, the second does not while the first
# holds; SIGKILL of the first: its prog dies with it (the guard), and the
# second takes over within lease duration + retry period.
test_one_holder_then_sigkill_takeover() {
  need_cluster || return
  ns=$(new_ns lease)
  lease_bg a "$ns" lk $(marker a); a=$LEASE_PID
  assertTrue "a runs prog" "wait_for 15 test -s $TMP/a.pid"
  assertTrue "a holds the lease" "holder_is $ns lk a"
  lease_bg b "$ns" lk $(marker b); b=$LEASE_PID
  sleep 6
  assertFalse "b does not run prog while a holds" "test -e $TMP/b.pid"
  assertTrue "b is still waiting" "alive $b"
  assertEquals "acquireTime is a MicroTime" 1 \
    "$(kubectl -n "$ns" get lease lk -o json | jq '[.spec.acquireTime, .spec.renewTime] |
      map(test("^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}\\.[0-9]{6}Z$")) | all | if . then 1 else 0 end')"
  assertEquals "leaseDurationSeconds" 15 \
    "$(kubectl -n "$ns" get lease lk -o jsonpath='{.spec.leaseDurationSeconds}')"
  aprog=$(cat "$TMP/a.pid")
  lease_record "$ns" lk
  kill9 "$a"
  assertTrue "a's prog gets SIGTERM when a dies" "wait_for 5 dead $aprog"
  assertTrue "b takes over" "wait_for 30 test -s $TMP/b.pid"
  assertTrue "b holds the lease" "holder_is $ns lk b"
  # b takes it once it has seen a's last renewal unchanged for the lease
  # duration; it reads the Lease every jittered retry period (at most
  # 2 s + 1.2 x 2 s) and tries again the moment the lease expires
  dt=$(( $(first_acquired lk b) - $(last_renewal lk a) ))
  echo "takeover after SIGKILL: b acquired the lease $dt ms after a's last renewal"
  assertTrue "no sooner than the lease duration after a's last renewal ($dt ms)" "[ $dt -ge 15000 ]"
  assertTrue "within the lease duration and a jittered retry period ($dt ms)" "[ $dt -lt 20500 ]"
  assertEquals "leaseTransitions" 1 "$(transitions "$ns" lk)"
}

# Three candidates started at once on a Lease that does not exist yet: all
# try to create it, one wins, exactly one prog runs.
test_simultaneous_start() {
  need_cluster || return
  ns=$(new_ns lease)
  for id in a b c; do lease_bg $id "$ns" lk $(marker $id); done
  assertTrue "some prog runs" "wait_for 15 sh -c 'ls $TMP/?.pid' "
  sleep 5
  n=$(ls "$TMP"/?.pid 2>/dev/null | wc -l)
  assertEquals "exactly one prog runs" 1 "$n"
  h=$(holder "$ns" lk)
  assertTrue "the holder ($h) is the one running" "test -s $TMP/$h.pid"
  assertEquals "leaseTransitions of a new Lease" 0 "$(transitions "$ns" lk)"
}

# SIGTERM: prog stopped, the lease released, exit 0; the other candidate
# takes it without waiting for expiry.
test_sigterm_releases() {
  need_cluster || return
  ns=$(new_ns lease)
  lease_bg a "$ns" lk $(marker a); a=$LEASE_PID
  assertTrue "a runs prog" "wait_for 15 test -s $TMP/a.pid"
  lease_bg b "$ns" lk $(marker b); b=$LEASE_PID
  sleep 3
  assertFalse "b waits" "test -e $TMP/b.pid"
  aprog=$(cat "$TMP/a.pid")
  lease_record "$ns" lk
  kill -TERM "$a"
  wait "$a"; rc=$?
  assertEquals "a exits 0 on TERM" 0 "$rc"
  assertTrue "a's prog stopped before a exited" "dead $aprog"
  assertTrue "b takes over" "wait_for 15 test -s $TMP/b.pid"
  assertTrue "b holds the lease" "holder_is $ns lk b"
  # the release: no holder, a lease of 1 s, renewTime the release's time
  rel=$(lease_versions lk | mawk '$1 == "-" && $4 == 1 { print $3; exit }')
  assertNotNull "a released the lease: $(lease_versions lk | tr '\n' ';')" "$rel"
  dt=$(( $(first_acquired lk b) - ${rel:-0} ))
  echo "takeover after SIGTERM: b acquired the lease $dt ms after a released it"
  # at once, by its watch (test_graceful_handover_at_once holds it to
  # that); at the latest at its next read, 2 s + 1.2 x 2 s
  assertTrue "by b's next read ($dt ms)" "[ $dt -ge 0 ] && [ $dt -lt 5000 ]"
  assertContains "a logged the release" "$(cat "$TMP/a.log")" "released lease $ns/lk"
}

# A graceful stop hands over at once, not at the other candidate's next
# read: it watches the Lease and takes it when the release is written. Four
# hand-overs in a row (a to b to c to d to e), each measured from the
# Lease's versions as a watch recorded them: the release's renewTime to the
# new holder's acquireTime. Polling alone (reads every 2 to 4.4 s) lands
# within 0.5 s about one time in six; the watch, in milliseconds.
test_graceful_handover_at_once() {
  need_cluster || return
  ns=$(new_ns lease)
  lease_bg a "$ns" lk $(marker a); prev=$LEASE_PID
  assertTrue "a runs prog" "wait_for 15 test -s $TMP/a.pid"
  lease_record "$ns" lk
  k=0
  for id in b c d e; do
    k=$((k + 1))
    lease_bg $id "$ns" lk $(marker $id); next=$LEASE_PID
    sleep 2    # past its first read: it is waiting, watching
    assertFalse "$id waits" "test -e $TMP/$id.pid"
    kill -TERM "$prev"; wait "$prev"
    assertTrue "$id takes over" "wait_for 15 test -s $TMP/$id.pid"
    rel=$(lease_versions lk | mawk -v k=$k '$1 == "-" && $4 == 1 && ++n == k { print $3; exit }')
    acq=$(first_acquired lk $id)
    assertNotNull "release $k recorded: $(lease_versions lk | tr '\n' ';')" "$rel"
    assertNotNull "$id's acquisition recorded" "$acq"
    dt=$(( ${acq:-0} - ${rel:-0} ))
    echo "graceful hand-over $k: $id acquired the lease $dt ms after the release"
    assertTrue "$id took the released lease at once ($dt ms)" "[ $dt -ge 0 ] && [ $dt -lt 500 ]"
    prev=$next
  done
}

# prog ending on its own ends rs-lease with prog's code, the lease released
# at once. Without --lease-namespace, the lease goes to kube-system.
test_prog_exit_code() {
  need_cluster || return
  name=rs-lease-exit-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
  rs-lease --identity x "$name" sh -c 'sleep 1; exit 7' 2>"$TMP/x.log"
  assertEquals "rs-lease exits with prog's code" 7 $?
  assertEquals "default namespace kube-system, released" "" \
    "$(kubectl -n kube-system get lease "$name" -o jsonpath='{.spec.holderIdentity}')"
  assertEquals "released: leaseDurationSeconds 1" 1 \
    "$(kubectl -n kube-system get lease "$name" -o jsonpath='{.spec.leaseDurationSeconds}')"
  kubectl -n kube-system delete lease "$name" >/dev/null
  ns=$(new_ns lease)
  rs-lease --lease-namespace "$ns" --identity y lk sh -c 'kill -KILL $$' 2>/dev/null
  assertEquals "killed prog: 128 + signal" 137 $?
  rs-lease --lease-namespace "$ns" --identity y lk /nonexistent/prog 2>"$TMP/y.log"
  assertEquals "prog not found: 127" 127 $?
  assertContains "says why" "$(cat "$TMP/y.log")" "unable to exec /nonexistent/prog"
}

# Another holder written into the Lease with a fresh renewTime: the leader
# stops prog within renew deadline + retry period and exits 111.
test_stolen_lease() {
  need_cluster || return
  ns=$(new_ns lease)
  lease_bg a "$ns" lk $(timed a); a=$LEASE_PID
  assertTrue "a runs prog" "wait_for 15 test -s $TMP/a.pid"
  aprog=$(cat "$TMP/a.pid")
  lease_record "$ns" lk
  kubectl -n "$ns" get lease lk -o json |
    jq --arg t "$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)" \
      '.spec.holderIdentity = "thief" | .spec.renewTime = $t | .spec.acquireTime = $t' |
    kubectl replace -f - >/dev/null
  assertTrue "a stops prog" "wait_for 20 dead $aprog"
  # a's last renewal came before the theft, and the renew deadline runs
  # out 10 s after it at most
  dt=$(( $(head -1 "$TMP/a.term") - $(first_acquired lk thief) ))
  echo "prog got TERM $dt ms after the lease was stolen"
  assertTrue "TERM within the renew deadline and a retry period of the theft ($dt ms)" "[ $dt -ge 0 ] && [ $dt -lt 12400 ]"
  wait "$a"; rc=$?
  assertEquals "a exits 111" 111 "$rc"
  assertTrue "the thief still holds it (a did not release)" "holder_is $ns lk thief"
}

# The API server gone: the leader cannot renew, and stops prog once the
# renew deadline has passed since its last successful renewal (that
# renewal began at most a retry period before the server went away), with
# SIGKILL --kill-after later for a prog that ignores SIGTERM; exit 111.
test_renew_deadline() {
  need_cluster || return
  ns=$(new_ns lease)
  rs-lease --lease-namespace "$ns" --identity a --kill-after 1s lk $(timed a ignore) \
    2>"$TMP/a.log" &
  a=$!; LEASE_PIDS="$LEASE_PIDS $a"
  assertTrue "a runs prog" "wait_for 15 test -s $TMP/a.pid"
  aprog=$(cat "$TMP/a.pid")
  sleep 1
  "$top/tests/env/cluster" stop-apiserver "$RS_TEST_CLUSTER"
  assertTrue "prog killed" "wait_for 30 dead $aprog"
  "$top/tests/env/cluster" start-apiserver "$RS_TEST_CLUSTER"
  assertTrue "apiserver back" "wait_for 30 $top/tests/env/cluster status $RS_TEST_CLUSTER"
  # a's last successful renewal, as the Lease keeps it
  wait_for 30 sh -c "kubectl -n $ns get lease lk -o json >'$TMP/lk.lease'"
  r=$(last_renewal lk a)
  wait_for 5 test -s "$TMP/a.gone"
  term=$(head -1 "$TMP/a.term" 2>/dev/null) gone=$(cat "$TMP/a.gone" 2>/dev/null)
  dt=$(( ${term:-0} - r )) dk=$(( ${gone:-0} - ${term:-0} ))
  echo "prog got TERM $dt ms after a's last renewal, and was gone $dk ms later"
  # the deadline counts from the start of the renewal, which the
  # renewTime written marks
  assertTrue "TERM once the renew deadline passed since the last renewal ($dt ms)" \
    "[ $dt -ge 9500 ] && [ $dt -lt 11000 ]"
  # (the prog writes its TERM time once its trap runs, a little late)
  assertTrue "SIGKILL --kill-after (1 s) after TERM ($dk ms)" "[ $dk -ge 900 ] && [ $dk -lt 2000 ]"
  wait "$a"; rc=$?
  assertEquals "a exits 111" 111 "$rc"
  assertContains "a says why" "$(cat "$TMP/a.log")" "lost lease $ns/lk: no renewal succeeded within the renew deadline"
}

# prog ends and leaves a process behind in its group: the leftover is
# stopped before the lease is released and rs-lease exits with prog's code.
test_prog_leftovers_stopped() {
  need_cluster || return
  ns=$(new_ns lease)
  rs-lease --lease-namespace "$ns" --identity a lk \
    sh -c "sleep 600 & echo \$! > $TMP/left.pid; exit 3" 2>"$TMP/a.log"
  assertEquals "prog's code" 3 $?
  assertTrue "the leftover is gone" "dead $(cat "$TMP/left.pid")"
  assertEquals "released" "" "$(holder "$ns" lk)"
}

# start_copy ID NS [RS-APPLY FLAGS]: an instance (lib.sh start_instance)
# under leader election for the Lease NS/rs-controller, default timings;
# the rs-lease pid in LEASE_PID.
start_copy() {
  LNS=$2 SHARD_GROUP=rs-controller INSTANCE_LEADER=1 INSTANCE_TIMING= \
    INSTANCE_APPLY_FLAGS="-v 2 ${3:-}" start_instance "$1" || return 1
  LEASE_PID=$(cat "$TMP/$1/lease.pid")
}
# started ID: its pipeline's stages are started.
started() { grep -q '^rs-pipeline: started: ' "$TMP/$1/pipeline.log"; }

# prog_group PID: the process group of prog under rs-lease PID (the
# guard's child).
prog_group() {
  _g=$(pgrep -P "$1" | head -1)
  [ -n "$_g" ] && pgrep -P "$_g" | head -1
}

count_live_is() { [ "$(count_live "$1" "$2")" -eq "$3" ]; }

# The leader killed in the middle of a scale-up to 40: its pipeline dies
# with it, the other copy takes over and makes the rest, no pod twice. The
# copies create at 4 pods a second (rs-apply --kube-api-qps 4), so that
# the kill lands with some of the 40 made and not all.
test_controller_under_two_copies() {
  need_cluster || return
  local made
  ns=$(new_ns lease)
  rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
  start_copy c1 "$ns" "--kube-api-qps 4 --kube-api-burst 1"; p1=$LEASE_PID
  start_copy c2 "$ns" "--kube-api-qps 4 --kube-api-burst 1"; p2=$LEASE_PID
  assertTrue "one copy holds the lease" "wait_for 15 holder_set $ns rs-controller"
  lead=$(holder "$ns" rs-controller)
  if [ "$lead" = c1 ]; then other=c2 lp=$p1; else other=c1 lp=$p2; fi
  assertTrue "the leader's pipeline runs" "wait_for 10 started $lead"
  grp=$(prog_group "$lp")
  assertNotNull "the leader's prog group" "$grp"
  make_rs "$ns" web 40
  assertTrue "the scale-up under way" "wait_for 60 sh -c '[ \$(kubectl -n $ns get pods -o name | wc -l) -ge 6 ]'"
  kill9 "$lp"
  assertTrue "the leader's pipeline dies with its rs-lease" "wait_for 10 group_dead $grp"
  made=$(count_live "$ns" app=web)
  echo "the leader killed with $made of 40 pods made"
  assertTrue "killed in the middle of the scale-up ($made of 40 made)" "[ $made -ge 6 ] && [ $made -lt 40 ]"
  assertContains "the leader created them" "$(grep 'rs-apply\]' "$TMP/$lead/pipeline.log")" "creating"
  assertFalse "the other's rs-apply never started" "started $other"
  assertTrue "the other copy takes over" "wait_for 30 holder_is $ns rs-controller $other"
  assertTrue "40 pods" "wait_for 60 count_live_is $ns app=web 40"
  sleep 3
  assertEquals "exactly 40 pods" 40 "$(count_live "$ns" app=web)"
  assertEquals "no pod created twice" 40 "$(pod_adds "$ns")"
  assertContains "the new leader created the rest" "$(grep 'rs-apply\]' "$TMP/$other/pipeline.log")" "creating"
}

. "$SHUNIT2"
