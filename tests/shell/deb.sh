#!/bin/bash
# deb.sh: the Debian package as an operator installs it. `make deb`'s
# script builds it from this tree and dpkg installs it on this machine;
# then the controller it installed runs for real against the test cluster:
#   - under s6: the installed rs-svscan lays out the installed service
#     directories and runs them as the system user rs-controller, and the
#     end-to-end scenarios of e2e.sh run against it (the installed tools
#     only: this tree's build/bin leaves PATH);
#   - under systemd: this machine's PID 1 is not systemd, so a systemd
#     boots in a container (systemd-nspawn over this machine's /usr and
#     /etc, a fresh /run and /var, the host's network to reach the test
#     cluster) and starts the installed units; systemd-analyze verify
#     checks them on the host.
# At the end the package is purged, and the system user removed if this
# suite made it. A package someone else installed is never touched: each
# test skips, saying so; except under CI (CI=true, a fresh machine), where
# it is purged first, so that the tests run. One run at a time on a
# machine (a lock in /run/lock).
. "$(dirname "$0")/lib.sh"
E2E_SCENARIOS_ONLY=1 . "$(dirname "$0")/e2e.sh"

# The tools are the installed ones: this tree's build/bin leaves PATH.
PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -vxF "$RS_BIN" | paste -sd: -)
export PATH

LOCK=/run/lock/rs-controller-deb-test.lock
UNITS="rs-queue.service rs-pipeline.service rs-metrics.service rs-rc-queue.service rs-rc-pipeline.service rs-controller.target"
LIBEXEC=/usr/libexec/rs-controller
INSTALLED=      # this suite installed the package
NOT_OURS=       # why the suite skips
USER_MADE=      # the package's postinst made the user during this suite
PKG=            # the s6 tree's directory, owned by the system user
SCAN= SVSCAN=
NSPAWN= SD_PID= SD_NAME=rs-deb-test-$$ SD_DIR=
METRICS_PORT=$(( 20000 + RANDOM % 20000 ))

apt_get() { DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=300 "$@"; }
installed() { dpkg-query -W -f '${Status}' rs-controller 2>/dev/null | grep -q ' installed$'; }

oneTimeSetUp() {
  local deb
  need_cluster || return
  if [ "$(id -u)" -ne 0 ]; then NOT_OURS="installing a package needs root"; return 0; fi
  exec 9>"$LOCK"
  flock -w 900 9 || { echo "deb.sh: another run still holds $LOCK" >&2; return 1; }
  if installed && [ "${CI:-}" = true ]; then
    echo "deb.sh: CI: purging the rs-controller package found installed"
    apt_get purge rs-controller >"$TMP/purge.log" 2>&1 || { cat "$TMP/purge.log" >&2; return 1; }
  fi
  if installed; then
    NOT_OURS="rs-controller is installed on this machine already: not replacing it (CI=true purges it)"
    return 0
  fi
  getent passwd rs-controller >/dev/null || USER_MADE=1
  # lintian runs as a test of its own (test_lintian_clean)
  deb=$(RS_DEB_LINT=0 "$top/deploy/build-deb" "$TMP/deb" 2>"$TMP/build-deb.log") ||
    { cat "$TMP/build-deb.log" >&2; return 1; }
  echo "deb.sh: built $deb"
  # as the README says, with apt (which waits for another dpkg to finish)
  apt_get install --no-install-recommends "$deb" >"$TMP/install.log" 2>&1 ||
    { cat "$TMP/install.log" >&2; return 1; }
  INSTALLED=1
}

# Twice, as shunit2 calls it (at the end and on exit): each step once.
oneTimeTearDown() {
  [ -n "$SVSCAN" ] && stop_svscan
  [ -n "$NSPAWN" ] && poweroff_container
  rs_cleanup
  if [ -n "$INSTALLED" ]; then
    apt_get purge rs-controller >"$TMP/purge.log" 2>&1 || cat "$TMP/purge.log" >&2
    # deluser takes the group with the user
    [ -n "$USER_MADE" ] && deluser --system --quiet rs-controller >/dev/null 2>&1
    INSTALLED=
  fi
  rm -rf "${PKG:-}" "${SD_DIR:-}"
  PKG= SD_DIR=
  if [ "${RS_KEEP_LOGS:-}" ] && [ -d "$TMP" ]; then mkdir -p "$RS_KEEP_LOGS" && cp -r "$TMP" "$RS_KEEP_LOGS/"; fi
  rm -rf "$RS_STATE_DIR"
  return 0
}

# The order matters: the package's checks, the s6 tree and e2e.sh's
# scenarios against it, its stop, then systemd (never two controllers on
# the cluster at once).
# Without the package of this tree installed (NOT_OURS), each test skips
# and says why: run-all counts them, and CI fails them.
suite() {
  local t
  for t in test_lintian_clean test_package_contents test_depends_from_the_libraries \
      test_units_verify test_s6_runs_the_installed_controller \
      $(sed -n 's/^\(test_[A-Za-z0-9_]*\)().*/\1/p' "$(dirname "$0")/e2e.sh") \
      test_s6_restarts_a_killed_pipeline test_s6_stops_clean test_systemd_starts_the_units; do
    [ -n "$NOT_OURS" ] && eval "$t() { skip_test \"\$NOT_OURS\"; }"
    suite_addTest "$t"
  done
}

# make deb's check: no error, no warning (the overrides say why)
test_lintian_clean() {
  lintian --fail-on error,warning "$TMP"/deb/rs-controller_*.changes >"$TMP/lintian.log" 2>&1
  rc=$?
  assertEquals "lintian: $(cat "$TMP/lintian.log")" 0 "$rc"
}

test_package_contents() {
  local t
  for t in rs-watch rs-sync rs-apply rs-queue rs-lease rs-metrics; do
    assertEquals "$t on PATH" "/usr/bin/$t" "$(command -v "$t")"
    assertTrue "$t(1)" "[ -f /usr/share/man/man1/$t.1.gz ]"
    "$t" --help >/dev/null
    assertEquals "$t --help" 0 $?
  done
  assertContains "this tree's rs-queue" "$(rs-queue --help)" "--drain-timeout"
  assertTrue "rs-svscan and rs-pipeline" "[ -x $LIBEXEC/rs-svscan ] && [ -x $LIBEXEC/rs-pipeline ]"
  assertTrue "the s6 service directories" "[ -x $LIBEXEC/s6/rs-queue/run ] && [ -x $LIBEXEC/s6/rs-pipeline/finish ]"
  assertEquals "notification-fd stays data" 644 "$(stat -c %a $LIBEXEC/s6/rs-queue/notification-fd)"
  assertContains "the env file is a conffile" "$(dpkg-query -W -f '${Conffiles}' rs-controller)" "/etc/rs-controller/env"
  for t in $UNITS; do
    assertTrue "$t installed" "[ -f /lib/systemd/system/$t ]"
    assertEquals "$t not enabled" disabled "$(systemctl --root=/ is-enabled "$t")"
  done
  assertNotContains "units name the installed tools" "$(cat /lib/systemd/system/rs-*.service)" /usr/local
  # the system user: no login, no home
  assertEquals "system user" "/nonexistent:/usr/sbin/nologin" "$(getent passwd rs-controller | cut -d: -f6,7)"
  assertTrue "a system uid" "[ $(id -u rs-controller) -lt 1000 ]"
}

# Every library a tool links (NEEDED) comes from a package that Depends
# names: ${shlibs:Depends} at work.
test_depends_from_the_libraries() {
  local depends so pkg d triplet
  depends=$(dpkg-query -W -f '${Depends}' rs-controller)
  triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
  for so in $(for t in /usr/bin/rs-*; do objdump -p "$t" | awk '$1 == "NEEDED" { print $2 }'; done | sort -u); do
    # where dpkg knows it: /lib or /usr/lib (merged /usr, not in dpkg's view)
    pkg=
    for d in "/usr/lib/$triplet" "/lib/$triplet"; do
      pkg=$(dpkg -S "$d/$so" 2>/dev/null | cut -d: -f1)
      [ -n "$pkg" ] && break
    done
    assertNotNull "$so belongs to a package" "$pkg"
    case ", $depends," in
    *", $pkg "*|*", $pkg,"*) ;;
    *) fail "Depends ($depends) does not name $pkg, which has $so" ;;
    esac
  done
}

test_units_verify() {
  local t paths=
  for t in $UNITS; do paths="$paths /lib/systemd/system/$t"; done
  # shellcheck disable=SC2086
  systemd-analyze verify $paths >"$TMP/verify.log" 2>&1
  rc=$?
  assertEquals "systemd-analyze verify: $(cat "$TMP/verify.log")" 0 "$rc"
}

# kubeconfig_for_user FILE: the test cluster's kubeconfig, certificates
# inline, readable by the system user only.
kubeconfig_for_user() {
  kubectl config view --raw --flatten >"$1" &&
    chown rs-controller:rs-controller "$1" && chmod 0600 "$1"
}

# owned_exe PID: "USER EXE" of a process.
owned_exe() { echo "$(stat -c %U "/proc/$1") $(readlink "/proc/$1/exe")"; }

test_s6_runs_the_installed_controller() {
  local pids p t
  PKG=$(mktemp -d /tmp/rs-deb-s6.XXXXXX) && chown rs-controller:rs-controller "$PKG" &&
    kubeconfig_for_user "$PKG/kubeconfig" || { fail "no directory for the s6 tree"; return; }
  SCAN=$PKG/scan
  # as an operator would run it: the system user, a plain PATH, the flags
  # of e2e.sh's controller
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    RS_APPLY_FLAGS="--kube-api-qps 200 --kube-api-burst 400 -v 2" RS_SYNC_FLAGS="-v 2" \
    RS_METRICS_FLAGS="--listen 127.0.0.1:$METRICS_PORT" \
    s6-setuidgid rs-controller "$LIBEXEC/rs-svscan" --kubeconfig "$PKG/kubeconfig" \
    --state-dir "$PKG/state" "$SCAN" >"$TMP/svscan.log" 2>&1 9>&- &
  SVSCAN=$!
  # the recorder of e2e.sh's checks (pod_adds, pod_peak)
  rs_bg rs-watch pods >"$TMP/pods.ndjson" 2>"$TMP/podwatch.log" 9>&-
  assertTrue "rs-queue up and ready" \
    "wait_for 20 sh -c 's6-svstat \"$SCAN/rs-queue\" | grep -q \"^up .*ready\"'"
  assertTrue "the pipeline up: $(cat "$TMP/svscan.log")" "wait_for 20 pipeline_pids"
  pids=$(pipeline_pids)
  set -- $pids
  assertContains "rs-pipeline is the installed one" "$(tr '\0' ' ' <"/proc/$1/cmdline")" "$LIBEXEC/rs-pipeline"
  shift
  for t in rs-watch rs-sync rs-apply; do
    assertEquals "$t" "rs-controller /usr/bin/$t" "$(owned_exe "$1")"
    shift
  done
  p=$(s6_stage_pid rs-queue)
  assertEquals "rs-queue" "rs-controller /usr/bin/rs-queue" "$(owned_exe "$p")"
  assertEquals "the socket" "rs-controller 600" "$(stat -c '%U %a' "$PKG/state/queue.sock")"
  assertTrue "rs-metrics answers /healthz" "wait_for 10 curl -fsS http://127.0.0.1:$METRICS_PORT/healthz"
  assertTrue "the pipeline logs through s6-log" \
    "wait_for 10 grep -q 'rs-pipeline: started' '$SCAN/.log/rs-pipeline/current'"
}

# As s6.sh does with the tree's service directories, once: the installed
# ./finish and run scripts bring the pipeline back.
test_s6_restarts_a_killed_pipeline() {
  local old ns
  assertTrue "pipeline up" "wait_for 20 pipeline_pids"
  old=$(pipeline_pids)
  kill -KILL "$(s6_stage_pid rs-sync)"
  # shellcheck disable=SC2086
  assertTrue "the old pipeline gone ($old)" "wait_for 25 none_running $old"
  assertTrue "a new pipeline" "wait_for 20 pipeline_pids"
  ns=$(new_ns deb-s6-kill)
  make_rs "$ns" web 3
  assertTrue "3 pods" "wait_count $ns app=web 3 30"
  sleep 2
  assertEquals "creates" 3 "$(pod_adds "$ns")"
}

test_s6_stops_clean() {
  assertTrue "s6-svscan exits on s6-svscanctl -t" stop_svscan
  assertTrue "no process of the system user left: $(pgrep -a -u rs-controller)" \
    "wait_for 10 sh -c '! pgrep -u rs-controller'"
}

# sd CMD...: CMD in the container (its mount and pid namespaces), where
# systemctl finds the container's systemd.
sd() { nsenter -t "$SD_PID" -m -p -- "$@"; }

sd_up() {
  case $(sd systemctl is-system-running 2>/dev/null) in running|degraded) return 0 ;; esac
  return 1
}

# sd_settled UNIT: neither running nor on its way up or down.
sd_settled() {
  case $(sd systemctl is-active "$1") in inactive|failed) return 0 ;; esac
  return 1
}

# boot_container: systemd as PID 1 of a container over this machine's
# /usr and /etc (read-only; /run, /var, /tmp fresh), booted to
# basic.target only: none of the host's services. /etc/rs-controller is
# SD_DIR: the package's env file plus this test's flags, and a
# kubeconfig. The host's network: the test cluster is on its loopback.
# No systemd on the host to register with (--register=no --keep-unit).
boot_container() {
  SD_DIR=$(mktemp -d /tmp/rs-deb-sd.XXXXXX) && chmod 0755 "$SD_DIR" || return 1
  { cat /etc/rs-controller/env
    echo "RS_APPLY_FLAGS=--kube-api-qps 200 --kube-api-burst 400 -v 2"
    echo "RS_METRICS_FLAGS=--listen 127.0.0.1:$METRICS_PORT"
  } >"$SD_DIR/env" && kubeconfig_for_user "$SD_DIR/kubeconfig" || return 1
  systemd-nspawn --quiet -D / --volatile=yes --register=no --keep-unit -M "$SD_NAME" \
    --bind-ro=/etc --bind-ro="$SD_DIR:/etc/rs-controller" \
    -b -- systemd.unit=basic.target >"$TMP/nspawn.log" 2>&1 </dev/null 9>&- &
  NSPAWN=$!
  wait_for 20 pgrep -P "$NSPAWN" -x systemd || return 1
  SD_PID=$(pgrep -P "$NSPAWN" -x systemd)
  wait_for 60 sd_up
}

poweroff_container() {
  kill -TERM "$NSPAWN" 2>/dev/null
  wait_for 30 none_running "$NSPAWN" || kill -KILL "$NSPAWN" 2>/dev/null
  wait "$NSPAWN" 2>/dev/null
  NSPAWN=
  # what nspawn cannot remove itself without a systemd on the host
  rmdir "/run/systemd/nspawn/propagate/$SD_NAME" 2>/dev/null
  return 0
}

test_systemd_starts_the_units() {
  local ns old u log
  # make deps installs systemd-container; a machine where a container
  # cannot boot fails here rather than pass on systemd-analyze alone
  if ! command -v systemd-nspawn >/dev/null || ! boot_container; then
    fail "systemd did not boot in a container: $(tail -n 5 "$TMP/nspawn.log" 2>/dev/null)"
    return
  fi
  assertEquals "not enabled" disabled "$(sd systemctl is-enabled rs-controller.target)"
  sd systemctl start rs-controller.target
  assertEquals "start" 0 $?
  for u in rs-queue rs-pipeline rs-metrics; do
    assertTrue "$u active" "wait_for 20 sd systemctl is-active --quiet $u.service"
  done
  assertEquals "the socket, in RuntimeDirectory" "rs-controller 600" \
    "$(sd stat -c '%U %a' /run/rs-controller/queue.sock)"
  assertTrue "the stages run" "wait_for 20 pgrep -u rs-controller -x rs-sync"
  old=$(pgrep -u rs-controller -x rs-sync)
  assertEquals "rs-sync" "rs-controller /usr/bin/rs-sync" "$(owned_exe "$old")"
  assertTrue "rs-metrics answers /healthz" "wait_for 10 curl -fsS http://127.0.0.1:$METRICS_PORT/healthz"
  ns=$(new_ns deb-systemd)
  make_rs "$ns" web 3
  assertTrue "3 pods" "wait_count $ns app=web 3 30"
  # a stage killed: rs-pipeline stops the rest, systemd restarts the unit
  kill -KILL "$old"
  assertTrue "a new rs-sync" \
    "wait_for 30 sh -c 'p=\$(pgrep -u rs-controller -x rs-sync) && [ \"\$p\" != $old ]'"
  assertTrue "restarted by systemd" "[ $(sd systemctl show -p NRestarts --value rs-pipeline.service) -ge 1 ]"
  kubectl -n "$ns" scale rs web --replicas 5 >/dev/null
  assertTrue "5 pods" "wait_count $ns app=web 5 30"
  sleep 2
  assertEquals "creates" 5 "$(pod_adds "$ns")"
  # PartOf: the units stop with the target, the queue after the pipeline
  sd systemctl stop rs-controller.target
  for u in rs-pipeline rs-metrics rs-queue; do
    wait_for 30 sd_settled "$u.service"
    assertEquals "$u stopped cleanly" inactive "$(sd systemctl is-active $u.service)"
  done
  assertTrue "no process of the system user left: $(pgrep -a -u rs-controller)" \
    "wait_for 10 sh -c '! pgrep -u rs-controller'"
  # the pipeline stopped first (After=rs-queue.service): nothing was out
  log=$(sd journalctl -b -q -u rs-queue.service -o cat)
  assertContains "rs-queue shut down: $log" "$log" "queue replicaset: shut down"
  assertNotContains "rs-queue drained: $log" "$log" "keys processing"
  poweroff_container
}

. "$SHUNIT2"
