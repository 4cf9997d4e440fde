#!/bin/bash
# image.sh: the image of `make image` works. deploy/build-image brings it up
# to date first (quick when the tree is unchanged: the package, the base and
# podman's layers are cached; a cold build takes minutes). Then it runs
# under podman as users run it: --read-only (and no tmpfs of podman's own
# on /run or /tmp), --user 65532, the one writable place a tmpfs at
# /run/rs-controller, the kubeconfig of deploy/base's ServiceAccount (a
# token, nothing more) mounted read-only, leader election. It must run as
# uid 65532 on a read-only root, create exactly the pods of a ReplicaSet
# through a scale cycle (lib.sh's check_scale_cycle), answer /healthz, and
# stop cleanly on `podman stop`: exit 0, the Lease released, no error line
# in its log.
# Needs root and podman, runc, mmdebstrap (make deps-image): skipped
# without them.
. "$(dirname "$0")/lib.sh"

IMAGE=localhost/rs-controller:latest
CTR=rs-image-test-$$
PODMAN="podman --runtime runc --cgroup-manager cgroupfs"
KC=$RS_STATE_DIR/kubeconfig
PORT=
SKIP=

oneTimeSetUp() {
  if [ "$(id -u)" != 0 ]; then SKIP="needs root"; return 0; fi
  if ! sh "$top/tests/deps.sh" check image 2>/dev/null; then
    SKIP="needs podman, runc, mmdebstrap (make deps-image)"; return 0
  fi
  [ -n "${KUBECONFIG:-}" ] || return 0
  echo "image.sh: deploy/build-image (cached unless the tree changed; log in $TMP/build-image.log)"
  sh "$top/deploy/build-image" >"$TMP/build-image.log" 2>&1 ||
    { tail -n 30 "$TMP/build-image.log" >&2; SKIP="unable to build the image"; return 1; }
  grep 'build-image: built' "$TMP/build-image.log"
  kubectl apply -k "$top/deploy/base" >"$TMP/apply.out" 2>&1 || { cat "$TMP/apply.out" >&2; return 1; }
  # deploy/base's ServiceAccount's token, readable by 65532 only
  sa_kubeconfig "$KC" rs-controller rs-controller && chown 65532:65532 "$KC" || return 1
  PORT=$(free_port) || return 1
  rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log"
  start_container
}

oneTimeTearDown() {
  $PODMAN rm -f -t 0 "$CTR" >/dev/null 2>&1
  rs_cleanup
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then mkdir -p "$RS_KEEP_LOGS" && cp -r "$TMP" "$RS_KEEP_LOGS/"; fi
  rm -rf "$RS_STATE_DIR"
}

need_image() {
  if [ -n "$SKIP" ]; then skip_test "$SKIP"; return 1; fi
  need_cluster
}


free_port() {  # a TCP port on 127.0.0.1 nobody listens on
  local p
  for _ in $(seq 1 100); do
    p=$(( 20000 + RANDOM % 12000 ))
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo "$p"; return 0; }
  done
  return 1
}

start_container() {
  # shellcheck disable=SC2086
  $PODMAN run -d --name "$CTR" \
    --read-only --read-only-tmpfs=false --user 65532:65532 \
    --network host --ulimit nofile=20000:20000 --ulimit nproc=10000:10000 \
    --tmpfs /run/rs-controller:rw,exec,U \
    -v "$KC:/etc/rs-controller/kubeconfig:ro" \
    -e RS_METRICS_FLAGS="--listen 127.0.0.1:$PORT --stages=" \
    -e RS_LEASE_FLAGS="--lease-namespace rs-controller" \
    "$IMAGE" --kubeconfig /etc/rs-controller/kubeconfig --leader-elect -v 2 \
    --log-root - --state-dir /run/rs-controller/state /run/rs-controller/service \
    >"$TMP/run.out" 2>&1 || { cat "$TMP/run.out" >&2; return 1; }
  wait_for 30 sh -c "$PODMAN logs $CTR 2>&1 | grep -q 'rs-pipeline: started'" ||
    { $PODMAN logs "$CTR" >&2; return 1; }
}

logs() { $PODMAN logs "$CTR" 2>&1; }

test_runs_as_65532_on_a_read_only_root() {
  need_image || return 0
  assertEquals "podman says read-only" true \
    "$($PODMAN inspect --format '{{.HostConfig.ReadonlyRootfs}}' "$CTR")"
  assertEquals "/ is mounted ro" ro \
    "$($PODMAN exec "$CTR" awk '$2 == "/" { split($4, o, ","); print o[1] }' /proc/mounts)"
  out=$($PODMAN exec "$CTR" sh -c 'touch /usr/x /etc/x /run/x /tmp/x 2>&1; echo rc=$?')
  assertContains "nothing written outside the volume: $out" "$out" "Read-only file system"
  assertContains "nothing written outside the volume: $out" "$out" "rc=1"
  assertEquals "/tmp is no tmpfs of podman's" "" \
    "$($PODMAN exec "$CTR" awk '$2 == "/tmp" || $2 == "/run"' /proc/mounts)"
  # every process of the container, s6-svscan (PID 1) included
  uids=$($PODMAN exec "$CTR" sh -c 'for s in /proc/[0-9]*/status; do awk "/^Uid:/ { print \$2, \$3, \$4, \$5 }" $s; done' | tr ' ' '\n' | sort -u | tr '\n' ' ')
  assertEquals "every uid is 65532" "65532 " "$uids"
  assertEquals "PID 1 is s6-svscan" s6-svscan "$($PODMAN exec "$CTR" cat /proc/1/comm)"
  assertTrue "rs-svscan laid out the services in the volume" \
    "logs | grep -q 'laid out /run/rs-controller/service: rs-queue rs-pipeline rs-metrics'"
}

test_healthz() {
  need_image || return 0
  assertTrue "/healthz 200 on 127.0.0.1:$PORT" \
    "wait_for 20 curl -sf http://127.0.0.1:$PORT/healthz"
  assertTrue "/readyz 200 once synced (the leader)" \
    "wait_for 20 curl -sf http://127.0.0.1:$PORT/readyz"
  assertTrue "it holds the Lease" "logs | grep -q 'acquired lease rs-controller/rs-controller-replicaset'"
}

test_replicaset_exact_counts() {
  need_image || return 0
  ns=$(new_ns image)
  make_rs "$ns" web 3
  # 3 -> 10 -> 2, a pod deleted and replaced, -> 0: 11 creates
  check_scale_cycle rs "$ns"
  assertEquals "never more than 10 at once" 10 "$(pod_peak "$ns")"
}

# Last (shunit2 runs tests in file order).
test_zz_podman_stop_is_clean() {
  need_image || return 0
  local before
  # The controller sees the whole shared cluster, where other suites leave
  # ReplicaSets it may warn about (a quota they filled): what the stop
  # logs is what is judged.
  before=$(logs | wc -l)
  assertTrue "podman stop" "$PODMAN stop -t 30 $CTR"
  assertEquals "exit code 0" 0 "$($PODMAN inspect --format '{{.State.ExitCode}}' "$CTR")"
  logs >"$TMP/container.log"
  tail -n +"$((before + 1))" "$TMP/container.log" >"$TMP/stop.log"
  assertEquals "no error line while stopping" "" \
    "$(grep -E '(^|: )(fatal|error):|^[EF][0-9]{4} ' "$TMP/stop.log")"
  assertEquals "no stage ended badly" "" "$(grep -E 'exited [1-9]|killed by signal' "$TMP/container.log")"
  assertTrue "the Lease released" "grep -q 'released lease rs-controller/rs-controller-replicaset' '$TMP/container.log'"
  assertTrue "the queue shut down last" \
    "[ \"\$(grep -nE 'released lease|queue replicaset: shut down' '$TMP/container.log' | tail -1 | grep -c 'shut down')\" = 1 ]"
}

. "$SHUNIT2"
