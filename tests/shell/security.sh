#!/bin/bash
# Security: TLS is verified unless the kubeconfig says insecure (a wrong CA
# or server name fails with a clear TLS error for rs-watch and rs-apply);
# tokens, client keys, passwords and Authorization headers never reach a
# log, at any verbosity, in either log format; the queue socket and the
# expectations file are 0600 in a 0700 directory and refused to other users
# (run as nobody with setpriv), by mode and by the server's peer check; the
# RBAC in deploy/ grants no wildcard and no verb beyond what the controller
# needs (a deploy/ without manifests fails).
. "$(dirname "$0")/lib.sh"

EXP_TOOL=${EXP_TOOL:-$RS_BIN/../test/exp-tool}
[ -x "$EXP_TOOL" ] || EXP_TOOL=$top/build/test/exp-tool

# --- fixtures ----------------------------------------------------------------

server() { sed -n 's/^    server: //p' "$KUBECONFIG" | head -1; }

# kc FILE CLUSTER-YAML USER-YAML: a kubeconfig of one context
kc() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: $2
users:
- name: u
  user: $3
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
EOF
  chmod 0600 "$1"
}

oneTimeSetUp() {
  need_cluster || return
  ns=$(new_ns security)
  NS=$ns
  kubectl -n "$NS" create serviceaccount rs-sec >/dev/null
  kubectl create clusterrolebinding "rs-sec-$NS" --clusterrole cluster-admin \
    --serviceaccount "$NS:rs-sec" >/dev/null
  TOKEN=$(kubectl -n "$NS" create token rs-sec --duration 1h)
  CA=$RS_TEST_CLUSTER/ca.crt
  SRV=$(server)
  kc "$TMP/token.kubeconfig" "{server: \"$SRV\", certificate-authority: \"$CA\"}" "{token: \"$TOKEN\"}"
  printf '%s\n' "$TOKEN" >"$TMP/token"
  chmod 0600 "$TMP/token"
  kc "$TMP/tokenfile.kubeconfig" "{server: \"$SRV\", certificate-authority: \"$CA\"}" "{tokenFile: \"$TMP/token\"}"
  kc "$TMP/certdata.kubeconfig" "{server: \"$SRV\", certificate-authority-data: \"$(base64 -w0 "$CA")\"}" \
    "{client-certificate-data: \"$(base64 -w0 "$RS_TEST_CLUSTER/admin.crt")\", client-key-data: \"$(base64 -w0 "$RS_TEST_CLUSTER/admin.key")\"}"
  cat >"$TMP/cred.sh" <<EOF
#!/bin/sh
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "\$(cat '$TMP/token')"
EOF
  chmod 0700 "$TMP/cred.sh"
  kc "$TMP/exec.kubeconfig" "{server: \"$SRV\", certificate-authority: \"$CA\"}" \
    "{exec: {apiVersion: client.authentication.k8s.io/v1, command: \"$TMP/cred.sh\", interactiveMode: Never}}"
  # the same apiserver through a CA that did not sign its certificate
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=wrong-ca" \
    -keyout "$TMP/wrong-ca.key" -out "$TMP/wrong-ca.crt" 2>/dev/null
  kc "$TMP/wrongca.kubeconfig" "{server: \"$SRV\", certificate-authority: \"$TMP/wrong-ca.crt\"}" "{token: \"$TOKEN\"}"
  kc "$TMP/wrongname.kubeconfig" "{server: \"$SRV\", certificate-authority: \"$CA\", tls-server-name: wrong.example}" "{token: \"$TOKEN\"}"
  kc "$TMP/noca.kubeconfig" "{server: \"$SRV\"}" "{token: \"$TOKEN\"}"
  kc "$TMP/insecure.kubeconfig" "{server: \"$SRV\", insecure-skip-tls-verify: true}" "{token: \"$TOKEN\"}"
  kc "$TMP/sni.kubeconfig" "{server: \"$SRV\", certificate-authority: \"$CA\", tls-server-name: kubernetes.default.svc}" "{token: \"$TOKEN\"}"
  kc "$TMP/basic.kubeconfig" "{server: \"$SRV\", certificate-authority: \"$CA\"}" "{username: rs-sec-user, password: s3cr3t-Passw0rd-xyzzy}"
  kubectl -n "$NS" apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: registry.k8s.io/pause:3.10}]}
EOF
}

oneTimeTearDown() {
  [ -n "${NS:-}" ] && kubectl delete clusterrolebinding "rs-sec-$NS" >/dev/null 2>&1
  rs_cleanup
  rm -rf "$RS_STATE_DIR"
}

# intents NAME: a create of one pod for ReplicaSet NS/web, then its end
intents() {
  _rs=$(kubectl -n "$NS" get rs web -o json)
  jq -cn --argjson rs "$_rs" --arg name "$1" '
    {apiVersion: "apps/v1", kind: "ReplicaSet", namespace: $rs.metadata.namespace,
     name: "web", uid: $rs.metadata.uid, resourceVersion: $rs.metadata.resourceVersion} as $o |
    ({op: "create", key: "\($o.namespace)/web", owner: $o, count: 1,
      template: {metadata: {labels: {app: "web", try: $name}},
        spec: {containers: [{name: "c", image: "registry.k8s.io/pause:3.10"}]}}},
     {op: "end", key: "\($o.namespace)/web", owner: $o})'
}

# --- TLS ---------------------------------------------------------------------

# watch_gets KUBECONFIG [SECONDS]: rs-watch lists through it (prints
# SYNCED) within SECONDS (10); stderr in $TMP/err.
watch_gets() {
  timeout "${2:-10}" rs-watch --kubeconfig "$1" -n "$NS" replicasets 2>"$TMP/err" | grep -q -m1 '"SYNCED"'
}

test_tls_wrong_ca_fails_clearly() {
  need_cluster || return
  assertFalse "rs-watch refuses a server its CA did not sign" "watch_gets '$TMP/wrongca.kubeconfig' 4"
  assertTrue "rs-watch says why: $(head -1 "$TMP/err")" \
    "grep -qE 'certificate verification failed .*(certificate|issuer)' '$TMP/err'"
  intents wrong-ca | rs-apply --kubeconfig "$TMP/wrongca.kubeconfig" --no-queue -v 1 \
    >/dev/null 2>"$TMP/err"
  assertTrue "rs-apply says why: $(head -1 "$TMP/err")" \
    "grep -qE 'unable to create a pod: certificate verification failed' '$TMP/err'"
  assertEquals "no pod created" 0 "$(kubectl -n "$NS" get pods -l try=wrong-ca -o name | wc -l)"
}

test_tls_server_name_checked() {
  need_cluster || return
  assertFalse "a name the certificate does not carry is refused" "watch_gets '$TMP/wrongname.kubeconfig' 4"
  assertTrue "says so: $(head -1 "$TMP/err")" "grep -q 'certificate verification failed.*wrong.example' '$TMP/err'"
  intents wrong-name | rs-apply --kubeconfig "$TMP/wrongname.kubeconfig" --no-queue \
    >/dev/null 2>"$TMP/err"
  assertTrue "rs-apply says so" "grep -q 'certificate verification failed' '$TMP/err'"
  assertTrue "a tls-server-name the certificate carries works" "watch_gets '$TMP/sni.kubeconfig'"
}

test_tls_verified_by_default_insecure_only_when_asked() {
  need_cluster || return
  # no CA in the kubeconfig: the system's trust store, which does not know
  # the test CA
  assertFalse "no CA given: still verified" "watch_gets '$TMP/noca.kubeconfig' 4"
  assertTrue "says so: $(head -1 "$TMP/err")" "grep -q 'certificate verification failed' '$TMP/err'"
  assertTrue "insecure-skip-tls-verify: true is obeyed" "watch_gets '$TMP/insecure.kubeconfig'"
  intents insecure | rs-apply --kubeconfig "$TMP/insecure.kubeconfig" --no-queue 2>"$TMP/err"
  assertEquals "rs-apply writes when insecure is asked" 1 \
    "$(kubectl -n "$NS" get pods -l try=insecure -o name | wc -l)"
}

# --- secrets in logs -----------------------------------------------------------

# secrets: fixed strings that must never appear in a log: the token and
# pieces of it, lines of the client key and of its base64, the password.
secrets() {
  echo "$TOKEN"
  echo "$TOKEN" | cut -d. -f2 | cut -c1-40
  echo "$TOKEN" | cut -d. -f3 | cut -c1-40
  grep -v -- '-----' "$RS_TEST_CLUSTER/admin.key" | head -3
  base64 -w0 "$RS_TEST_CLUSTER/admin.key" | cut -c 60-120
  echo s3cr3t-Passw0rd-xyzzy
  echo 'PRIVATE KEY'
}

# leaks FILE: the secrets and headers FILE shows, one a line.
leaks() {
  secrets | grep -v '^$' | grep -F -f - -o "$1" | sort -u
  grep -ioE 'authorization: *[a-z]+ *[^ ]{0,12}|bearer [a-z0-9._-]{8,}' "$1" | sort -u
}

# clean WHAT FILE [EMPTY-OK]: nothing secret in FILE, which is not empty
# unless EMPTY-OK (so that a silent tool does not pass for a careful one).
clean() {
  _l=$(leaks "$2")
  [ -n "${3:-}" ] || assertTrue "$1 logged something" "[ -s '$2' ]"
  assertEquals "$1: secrets in the log" "" "$(echo "$_l" | cut -c1-20)"
}

# run_tools KUBECONFIG-NAME V FORMAT TAG: rs-watch, rs-apply (one create)
# and rs-lease when built, with that kubeconfig at -v V; their logs are
# checked.
run_tools() {
  _f=$TMP/log-$4
  _e=; [ "$2" -eq 0 ] && _e=1
  timeout 2 rs-watch --kubeconfig "$TMP/$1.kubeconfig" -v "$2" --log-format "$3" \
    -n "$NS" replicasets pods >"$_f.out" 2>"$_f.watch"
  clean "rs-watch $1 -v $2 $3" "$_f.watch" $_e
  assertEquals "rs-watch $1: secrets on stdout" "" "$(leaks "$_f.out")"
  intents "$4" | rs-apply --kubeconfig "$TMP/$1.kubeconfig" --no-queue \
    -v "$2" --log-format "$3" >/dev/null 2>"$_f.apply"
  clean "rs-apply $1 -v $2 $3" "$_f.apply" $_e
  if command -v rs-lease >/dev/null 2>&1; then
    timeout 20 rs-lease --kubeconfig "$TMP/$1.kubeconfig" -v "$2" --log-format "$3" \
      --lease-namespace "$NS" "lease-$4" true >/dev/null 2>"$_f.lease"
    clean "rs-lease $1 -v $2 $3" "$_f.lease" 1
  fi
}

created() { kubectl -n "$NS" get pods -l "try=$1" -o name | grep -q .; }

test_no_secret_in_logs_at_any_verbosity() {
  need_cluster || return
  for k in token tokenfile certdata exec basic; do
    run_tools $k 10 text "$k"
  done
  run_tools token 10 json token-json
  run_tools token 4 text token-v4
  run_tools token 0 text token-v0
  # the credentials were used, not only held: the writes went through
  for k in token tokenfile certdata exec token-json; do
    assertTrue "rs-apply wrote with the $k credentials" "created $k"
  done
  assertFalse "basic auth is refused by this apiserver" "created basic"
  # a token the apiserver refuses (401): not echoed either
  kc "$TMP/badtoken.kubeconfig" "{server: \"$SRV\", certificate-authority: \"$CA\"}" "{token: \"${TOKEN}x\"}"
  timeout 3 rs-watch --kubeconfig "$TMP/badtoken.kubeconfig" -v 10 -n "$NS" pods >/dev/null 2>"$TMP/err.401"
  assertTrue "the 401 is reported" "grep -qiE '401|unauthori' '$TMP/err.401'"
  clean "rs-watch, refused token" "$TMP/err.401"
}

# --- the socket and the expectations file ----------------------------------

# as_nobody CMD...: CMD as user nobody, no groups
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

nobody_can_run() {
  as_nobody "$RS_BIN/rs-queue" --help >/dev/null 2>&1
}

test_queue_socket_private() {
  command -v setpriv >/dev/null || { skip_test "no setpriv (util-linux)"; return; }
  [ "$(id -u)" -eq 0 ] || { skip_test "needs root to run as nobody"; return; }
  nobody_can_run || { skip_test "nobody cannot run $RS_BIN/rs-queue"; return; }
  d=$RS_STATE_DIR/qs
  RS_STATE_DIR=$d rs-queue serve 2>"$TMP/q.log" &
  q=$!
  wait_for 10 test -S "$d/queue.sock"
  assertEquals "socket mode" 600 "$(stat -c %a "$d/queue.sock")"
  assertEquals "state directory mode" 700 "$(stat -c %a "$d")"
  # the state directory's parents let nobody through: only the state
  # directory and the socket keep it out
  chmod 0711 "$RS_STATE_DIR"
  as_nobody "$RS_BIN/rs-queue" --queue "$d/queue.sock" add ns/x >/dev/null 2>"$TMP/err"
  rc=$?
  assertNotEquals "nobody refused by the directory" 0 "$rc"
  assertTrue "says so: $(cat "$TMP/err")" "grep -qi 'permission denied' '$TMP/err'"
  chmod 0711 "$d"
  as_nobody "$RS_BIN/rs-queue" --queue "$d/queue.sock" add ns/x >/dev/null 2>"$TMP/err"
  rc=$?
  assertNotEquals "nobody refused by the socket's mode" 0 "$rc"
  assertTrue "says so: $(cat "$TMP/err")" "grep -qi 'permission denied' '$TMP/err'"
  # with the socket opened up by mistake, the server's own peer check
  # still refuses another user
  chmod 0666 "$d/queue.sock"
  as_nobody "$RS_BIN/rs-queue" --queue "$d/queue.sock" add ns/x >/dev/null 2>"$TMP/err"
  rc=$?
  chmod 0700 "$d" "$RS_STATE_DIR"; chmod 0600 "$d/queue.sock"
  assertNotEquals "nobody refused by the server" 0 "$rc"
  assertTrue "the server says so" "grep -q 'refusing a client of another user' '$TMP/q.log'"
  assertEquals "nothing was queued" 0 "$(rs-queue --queue "$d/queue.sock" len)"
  kill $q; wait $q 2>/dev/null
  # a state directory others may enter is refused
  mkdir -m 0777 "$RS_STATE_DIR/open"
  RS_STATE_DIR=$RS_STATE_DIR/open timeout 5 rs-queue serve 2>"$TMP/err"
  rc=$?
  assertTrue "a 0777 state directory refused (exit $rc): $(head -1 "$TMP/err")" \
    "[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ ! -S '$RS_STATE_DIR/open/queue.sock' ]"
  assertTrue "says why: $(head -1 "$TMP/err")" "grep -qE 'others.*want 0700' '$TMP/err'"
}

test_expectations_file_private() {
  command -v setpriv >/dev/null || { skip_test "no setpriv (util-linux)"; return; }
  [ "$(id -u)" -eq 0 ] || { skip_test "needs root to run as nobody"; return; }
  d=$RS_STATE_DIR/es
  mkdir -m 0700 "$d"
  f=$d/expectations
  "$EXP_TOOL" "$f" create >/dev/null
  "$EXP_TOOL" "$f" expect-creations ns/web 3 >/dev/null
  assertEquals "file mode" 600 "$(stat -c %a "$f")"
  # only the file's own mode protects it now
  chmod 0711 "$RS_STATE_DIR"; chmod 0755 "$d"
  as_nobody cat "$f" >/dev/null 2>"$TMP/err"
  rc=$?
  assertNotEquals "nobody cannot read it" 0 "$rc"
  assertTrue "permission denied" "grep -qi 'permission denied' '$TMP/err'"
  as_nobody "$RS_BIN/rs-sync" --expectations-dump --expectations "$f" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertNotEquals "rs-sync as nobody refused" 0 "$rc"
  assertTrue "says why: $(head -1 "$TMP/err")" "grep -qi 'permission denied' '$TMP/err'"
  assertEquals "nothing dumped" "" "$(cat "$TMP/out")"
  chmod 0700 "$RS_STATE_DIR"
  # opened by its owner, a file others may read is refused, and so is a
  # symbolic link, and a file of another user
  chmod 0644 "$f"
  rs-sync --expectations-dump --expectations "$f" >/dev/null 2>"$TMP/err"
  rc=$?
  assertNotEquals "a 0644 file refused" 0 "$rc"
  assertTrue "says why: $(head -1 "$TMP/err")" "grep -qiE 'group or others|mode' '$TMP/err'"
  chmod 0600 "$f"
  ln -s "$f" "$d/link"
  rs-sync --expectations-dump --expectations "$d/link" >/dev/null 2>"$TMP/err"
  rc=$?
  assertNotEquals "a symbolic link refused" 0 "$rc"
  assertTrue "says why: $(head -1 "$TMP/err")" "grep -qiE 'symbolic link|link' '$TMP/err'"
  cp "$f" "$d/theirs"; chown nobody "$d/theirs"
  rs-sync --expectations-dump --expectations "$d/theirs" >/dev/null 2>"$TMP/err"
  rc=$?
  assertNotEquals "another user's file refused" 0 "$rc"
  assertTrue "says why: $(head -1 "$TMP/err")" "grep -qiE 'another user|owned' '$TMP/err'"
  rs-sync --expectations-dump --expectations "$f" >"$TMP/out" 2>"$TMP/err"
  assertTrue "its own 0600 file still opens" "grep -q 'ns/web' '$TMP/out'"
  chmod 0700 "$d"
}

# --- RBAC ------------------------------------------------------------------------

# The least the controller needs (upstream's replicaset-controller role, plus
# leases for leader election, and for shard mode, deploy/sharded's Role
# alone, the delete of stale member Leases and of another B's): resource ->
# verbs. tests/shell/rbac.sh checks which overlay may grant what.
RBAC_ALLOWED='{
  "pods": ["get", "list", "watch", "create", "delete", "patch"],
  "replicasets": ["get", "list", "watch", "update", "patch"],
  "replicationcontrollers": ["get", "list", "watch", "update", "patch"],
  "replicasets/status": ["get", "update", "patch"],
  "replicationcontrollers/status": ["get", "update", "patch"],
  "replicasets/finalizers": ["update"],
  "replicationcontrollers/finalizers": ["update"],
  "events": ["create", "update", "patch"],
  "leases": ["get", "list", "watch", "create", "update", "patch", "delete"]
}'

test_rbac_least_privilege() {
  need_cluster || return   # kubectl maps the manifests' kinds by discovery
  files=$(find "$top/deploy" -name '*.yaml' -o -name '*.yml' -o -name '*.json' | sort)
  [ -n "$files" ] || { fail "no manifests in deploy/"; return; }
  # every Role and ClusterRole rule, as JSON, without a cluster
  rules=$(for f in $files; do
    kubectl create --dry-run=client -o json -f "$f" 2>/dev/null
  done | jq -c '(if .kind == "List" then .items[] else . end)
      | select(.kind == "Role" or .kind == "ClusterRole") | .metadata.name as $n
      | .rules[]? | . + {role: $n}')
  assertTrue "deploy/ has Role or ClusterRole rules" "[ -n '$rules' ]"
  echo "$rules" | sed 's/^/  rule: /'
  bad=$(echo "$rules" | jq -r --argjson ok "$RBAC_ALLOWED" '
    . as $r
    | if ([.verbs[]?, .resources[]?, .apiGroups[]?, .resourceNames[]?] | index("*")) != null
      then "\($r.role): wildcard in \($r | del(.role) | tostring)"
      elif (.nonResourceURLs // []) | length > 0 then "\($r.role): nonResourceURLs \(.nonResourceURLs)"
      else (.resources[]? as $res
        | if $ok[$res] == null then "\($r.role): resource \($res) not needed"
          else (.verbs[] | select(. as $v | $ok[$res] | index($v) | not)
            | "\($r.role): verb \(.) on \($res) not needed") end)
      end')
  assertEquals "RBAC beyond the least that works" "" "$bad"
  for f in $files; do
    b=$(kubectl create --dry-run=client -o json -f "$f" 2>/dev/null | jq -r '
      (if .kind == "List" then .items[] else . end)
      | select(.kind == "ClusterRoleBinding" or .kind == "RoleBinding")
      | select(.roleRef.name == "cluster-admin" or .roleRef.name == "admin" or .roleRef.name == "edit")
      | .metadata.name')
    assertEquals "$f binds no built-in broad role" "" "$b"
  done
}

. "$SHUNIT2"
