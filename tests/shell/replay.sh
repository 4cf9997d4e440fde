#!/bin/bash
# run-all: no cluster
# Replay tests of rs-sync's decisions, no cluster needed: every folder of
# tests/replay/cases is one shunit2 test. rs-sync --once replays the case's
# events.ndjson with the case's args; the intents must pass the invariants
# of doc/intents.md (checked here for every case) and the case's expect.jq
# (jq -s over the intents, must print true). Cases come from
# tests/replay/gen.sh; its first comment line says what a case checks.
#   RS_BIN=$PWD/build/bin bash tests/shell/replay.sh
#   REPLAY_CASES="rank-* scale-up-partial" bash tests/shell/replay.sh
. "$(dirname "$0")/lib.sh"

REPLAY=$top/tests/replay
CASES=$REPLAY/cases
RS_SYNC=$RS_BIN/rs-sync
EXP_TOOL=${EXP_TOOL:-$RS_BIN/../test/exp-tool}
[ -x "$EXP_TOOL" ] || EXP_TOOL=$top/build/test/exp-tool
MIN_CASES=45
cases_ran=0

# Intents must be NDJSON for the one key, exactly one end and last, ops in
# the order adopt/release < create|delete < status < end, at most one
# create, delete and status, and nothing but claims in an adoption round.
INVARIANTS='
def rank: {"adopt": 0, "release": 0, "create": 1, "delete": 1, "status": 2, "end": 3}[.];
map(.op) as $ops
| if length == 0 then "no intents"
  elif any(.[]; .key != $key) then "an intent for another key than \($key)"
  elif any($ops[]; rank == null) then "unknown op in \($ops)"
  elif ($ops | map(select(. == "end")) | length) != 1 then "not exactly one end: \($ops)"
  elif $ops[-1] != "end" then "end is not last: \($ops)"
  elif ($ops | map(rank)) != ($ops | map(rank) | sort) then "ops out of order: \($ops)"
  elif ($ops | map(select(. == "create" or . == "delete" or . == "status")) | length) !=
      ($ops | map(select(. == "create" or . == "delete" or . == "status")) | unique | length)
    then "a repeated create, delete or status: \($ops)"
  elif ($ops | index("create")) != null and ($ops | index("delete")) != null
    then "create and delete in one round"
  elif ($ops | index("adopt")) != null and any($ops[]; . == "create" or . == "delete" or . == "status")
    then "create, delete or status in a round with adoptions: \($ops)"
  else "ok" end'

# The intents, shortened for a failure message: no owner, template or
# object beyond its status.
show_intents() {
	jq -c 'del(.owner, .template)
	    | if .object then .object = {status: .object.status} else . end' \
	    <"$1" 2>/dev/null | head -40 | sed 's/^/    /'
	[ -s "$1" ] || echo "    (none)"
}

run_case() {
	_name=$1 _d=$CASES/$1 _w=$TMP/cases/$1
	mkdir -p "$_w"
	for _f in events.ndjson args expect.jq; do
		if [ ! -f "$_d/$_f" ]; then
			fail "case $_name: no $_f"
			return 0
		fi
	done
	_what=$(sed -n '1s/^# //p' "$_d/expect.jq")
	_args=$(cat "$_d/args")
	if [ -f "$_d/setup" ]; then
		_exp=$_w/expectations
		rm -f "$_exp"
		if ! EXP=$_exp EXP_TOOL=$EXP_TOOL sh -e "$_d/setup" >"$_w/setup.log" 2>&1; then
			fail "case $_name: setup failed: $(cat "$_w/setup.log")"
			return 0
		fi
		_args=${_args//@EXP@/$_exp}
	fi
	set -f
	# shellcheck disable=SC2086
	set -- $_args
	set +f
	_key= _prev=
	for _a; do
		[ "$_prev" = --once ] && _key=$_a
		_prev=$_a
	done
	cases_ran=$((cases_ran + 1))
	"$RS_SYNC" "$@" <"$_d/events.ndjson" >"$_w/intents" 2>"$_w/stderr"
	_rc=$?
	if [ $_rc -ne 0 ]; then
		fail "case $_name: rs-sync $* exited $_rc:
$(tail -5 "$_w/stderr")"
		return 0
	fi
	_inv=$(jq -rs --arg key "$_key" "$INVARIANTS" <"$_w/intents" 2>&1)
	if [ "$_inv" != ok ]; then
		fail "case $_name: bad intents: $_inv
$(show_intents "$_w/intents")"
		return 0
	fi
	_got=$(jq -s -L "$REPLAY" -f "$_d/expect.jq" <"$_w/intents" 2>&1)
	if [ "$_got" != true ]; then
		fail "case $_name: $_what
  expect.jq printed: $_got
  intents:
$(show_intents "$_w/intents")"
	fi
	return 0
}

testAllCasesRan() {
	_n=$(find "$CASES" -mindepth 1 -maxdepth 1 -type d | wc -l)
	assertTrue "at least $MIN_CASES cases (found $_n in $CASES)" "[ $_n -ge $MIN_CASES ]"
	if [ -z "${REPLAY_CASES:-}" ]; then
		assertEquals "cases run" "$_n" "$cases_ran"
	fi
}

# The checked-in fixtures are what gen.sh writes: a case edited by hand
# without the generator (or the reverse) fails here.
testFixturesMatchGenerator() {
	_out=$TMP/generated/cases
	if ! bash "$REPLAY/gen.sh" "$_out" >"$TMP/gen.log" 2>&1; then
		fail "gen.sh failed: $(cat "$TMP/gen.log")"
		return 0
	fi
	_diff=$(diff -r "$CASES" "$_out" 2>&1 | head -20)
	assertEquals "tests/replay/cases differ from gen.sh's output (run tests/replay/gen.sh)" "" "$_diff"
}

# rs-sync's read position per resource (sync_read_rv: what the stale-cache
# guard compares our writes with), after each line of a stream: none
# before the resource's SYNCED; then SYNCED's resourceVersion, each
# event's object's (final state unknown or not, lower or not: the last
# one read) and each BOOKMARK's; BOOKMARKs of other resources or without
# a resourceVersion change nothing, and no line of it is refused.
# --once -v 1 says where it stopped; each prefix of the stream is one run.
RS_OBJ='"apiVersion":"apps/v1","kind":"ReplicaSet","spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}}}}'
READ_RV_STREAM='{"type":"ADDED","resource":"replicasets","object":{"metadata":{"name":"web","namespace":"ns","uid":"u-rs","resourceVersion":"5"},'$RS_OBJ'}}
{"type":"SYNCED","resource":"replicasets","at":1767225590.5,"resourceVersion":"10"}
{"type":"ADDED","resource":"pods","object":{"metadata":{"name":"a","namespace":"ns","uid":"u-a","resourceVersion":"8"}}}
{"type":"SYNCED","resource":"pods","resourceVersion":"11"}
{"type":"MODIFIED","resource":"pods","object":{"metadata":{"name":"a","namespace":"ns","uid":"u-a","resourceVersion":"12"}}}
{"type":"BOOKMARK","resource":"replicasets","at":1767225591.5,"resourceVersion":"15"}
{"type":"DELETED","resource":"pods","final_state_unknown":true,"object":{"metadata":{"name":"b","namespace":"ns","uid":"u-b","resourceVersion":"9"}}}
{"type":"BOOKMARK","resource":"pods","resourceVersion":"20"}
{"type":"BOOKMARK","resource":"deployments","resourceVersion":"99"}
{"type":"BOOKMARK","resource":"pods"}
{"type":"MODIFIED","resource":"replicasets","object":{"metadata":{"name":"web","namespace":"ns","uid":"u-rs","resourceVersion":"21"},'$RS_OBJ'}}
{"type":"DELETED","resource":"pods","object":{"metadata":{"name":"a","namespace":"ns","uid":"u-a","resourceVersion":"22"}}}
{"type":"DELETED","resource":"replicasets","object":{"metadata":{"name":"web","namespace":"ns","uid":"u-rs","resourceVersion":"23"},'$RS_OBJ'}}
{"type":"SYNCED","resource":"pods","resourceVersion":"30"}
{"type":"SYNCED","resource":"pods"}'
# after line N: "PODS RS" ("-" for none)
READ_RV_WANT='- -
- 10
- 10
11 10
12 10
12 15
9 15
20 15
20 15
20 15
20 21
22 21
22 23
30 23
- 23'

# read_rv_after N [RS-SYNC FLAGS]: "PODS RS" after the first N lines.
read_rv_after() {
	_n=$1; shift
	printf '%s\n' "$READ_RV_STREAM" | head -n "$_n" |
	    "$RS_SYNC" --once ns/web -v 1 "$@" 2>"$TMP/readrv.err" >/dev/null
	sed -n "s/.*read up to resourceVersion '\([0-9]*\)' of pods and '\([0-9]*\)' of .*/\1 \2/p" \
	    "$TMP/readrv.err" | sed 's/^ /- /; s/ $/ -/'
}

testReadResourceVersions() {
	_lines=$(printf '%s\n' "$READ_RV_STREAM" | wc -l)
	_got=$(for _i in $(seq 1 "$_lines"); do read_rv_after "$_i"; done)
	assertEquals "read resourceVersions (pods replicasets) after each line" \
	    "$READ_RV_WANT" "$_got"
	read_rv_after "$_lines" >/dev/null
	assertEquals "no line refused or warned about: $(grep -v '] ' "$TMP/readrv.err")" \
	    "" "$(grep -E 'warning|skipped,' "$TMP/readrv.err")"
	assertTrue "every line read, none skipped" \
	    "grep -q 'replayed $_lines events (0 skipped)' $TMP/readrv.err"
	# a ReplicationController manager reads replicationcontrollers', not
	# replicasets'
	_rc=$(printf '%s\n' "$READ_RV_STREAM" | sed 's/"replicasets"/"replicationcontrollers"/' |
	    head -n 2 | "$RS_SYNC" --once ns/web --kind rc -v 1 2>&1 >/dev/null |
	    grep -o "read up to .*")
	assertEquals "--kind rc" "read up to resourceVersion '' of pods and '10' of replicationcontrollers" "$_rc"
}

suite() {
	for _d in "$CASES"/*/; do
		_n=$(basename "$_d")
		if [ -n "${REPLAY_CASES:-}" ]; then
			_sel=0
			set -f
			for _p in $REPLAY_CASES; do
				# shellcheck disable=SC2254
				case $_n in $_p) _sel=1 ;; esac
			done
			set +f
			[ $_sel = 1 ] || continue
		fi
		_fn=test_${_n//[^A-Za-z0-9_]/_}
		eval "$_fn() { run_case '$_n'; }"
		suite_addTest "$_fn"
	done
	suite_addTest testReadResourceVersions
	suite_addTest testAllCasesRan
	[ -n "${REPLAY_CASES:-}" ] || suite_addTest testFixturesMatchGenerator
}

. "$SHUNIT2"
