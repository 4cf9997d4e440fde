# lib.sh: sourced by every shunit2 suite. Gives each suite its own state
# directory and namespace on the shared test cluster, and cleans both up.
#   . "$(dirname "$0")/lib.sh"   at the top of a suite, then define tests,
#   then end the suite with:  . "$SHUNIT2"
top=$(cd "$(dirname "$0")/../.." && pwd)
SHUNIT2=${SHUNIT2:-/usr/bin/shunit2}
[ -f "$SHUNIT2" ] || SHUNIT2=/usr/share/shunit2/shunit2
RS_BIN=${RS_BIN:-$top/build/bin}
PATH="$RS_BIN:$PATH"
[ -n "${K8S_BIN:-}" ] && PATH="$K8S_BIN:$PATH"
export PATH
SUITE=$(basename "$0" .sh)
RS_STATE_DIR=$(mktemp -d "/tmp/rs-state-$SUITE.XXXXXX")
export RS_STATE_DIR
chmod 0700 "$RS_STATE_DIR"
TMP=$RS_STATE_DIR/tmp
mkdir -p "$TMP"
# Background processes a test started; killed by rs_cleanup.
RS_PIDS=

rs_bg() {  # rs_bg CMD...: start CMD in the background, remembered for cleanup
  "$@" &
  RS_PIDS="$RS_PIDS $!"
}

rs_cleanup() {
  for p in $RS_PIDS; do kill "$p" 2>/dev/null; done
  for p in $RS_PIDS; do wait "$p" 2>/dev/null; done
  RS_PIDS=
}

# need_cluster: skip the suite's test (shunit2 startSkipping) with no cluster.
need_cluster() {
  if [ -z "${KUBECONFIG:-}" ] || [ ! -f "$KUBECONFIG" ]; then
    startSkipping
    return 1
  fi
  return 0
}

# new_ns NAME: a fresh namespace for one test; prints its name.
new_ns() {
  ns="$1-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
  kubectl create namespace "$ns" >/dev/null || return 1
  echo "$ns"
}

# wait_for SECONDS CMD...: retry CMD every 0.2 s until it succeeds.
wait_for() {
  _t=$1; shift
  _end=$(( $(date +%s) + _t ))
  while ! "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge "$_end" ] && return 1
    sleep 0.2
  done
  return 0
}

oneTimeTearDown() {
  rs_cleanup
  rm -rf "$RS_STATE_DIR"
}
