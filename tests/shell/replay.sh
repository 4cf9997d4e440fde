#!/bin/bash
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
	suite_addTest testAllCasesRan
	[ -n "${REPLAY_CASES:-}" ] || suite_addTest testFixturesMatchGenerator
}

. "$SHUNIT2"
