# client.sh: libcommon's API client (kubeconfig, credentials, TLS, errors,
# streams, the multi interface) against the real test apiserver, through
# build/test/kube-request.
. "$(dirname "$0")/lib.sh"

KR=${KR:-$top/build/test/kube-request}
# free_port
. "$top/tests/env/ports.sh"

# The test cluster's server URL and CA file, from the admin kubeconfig.
cluster_info() {
  SERVER=$(cluster_server)
  CA=$TMP/cluster-ca.crt
  kubectl config view --raw --minify --flatten \
    -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' | base64 -d >"$CA"
  PORT=${SERVER##*:}
  # The admin's client certificate, inline as -data fields.
  ADMIN="    client-certificate-data: $(kubectl config view --raw --minify --flatten \
    -o jsonpath='{.users[0].user.client-certificate-data}')
    client-key-data: $(kubectl config view --raw --minify --flatten \
    -o jsonpath='{.users[0].user.client-key-data}')"
}

# write_kc FILE USER-YAML [CLUSTER-EXTRA-YAML]: a kubeconfig for the test
# server with the given user stanza (indented under "user:").
write_kc() {
  kubeconfig_write "$1" "$SERVER" "    certificate-authority: $CA
${3:-}" "$2"
}

# make_sa NS: a ServiceAccount "bot" that may read pods and configmaps in
# NS (not secrets); prints a token for it.
make_sa() {
  role_sa "$1" bot get,list,watch pods,configmaps &&
  kubectl -n "$1" create token bot
}

test_client_certificate() {
  need_cluster || return
  "$KR" GET /api/v1/namespaces/default >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "exit code; stderr: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/out")" '"name":"default"'
  # The apiserver offers HTTP/2 over TLS, and the client takes it.
  assertEquals "HTTP/2 200" "$(cat "$TMP/err")"
}

test_bearer_token() {
  need_cluster || return
  cluster_info
  ns=$(new_ns tok)
  token=$(make_sa "$ns")
  assertNotNull "no token" "$token"
  write_kc "$TMP/kc" "    token: $token"
  "$KR" --kubeconfig "$TMP/kc" GET "/api/v1/namespaces/$ns/pods" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "exit code; stderr: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/out")" '"kind":"PodList"'
  # A token the server does not know: 401, refused.
  write_kc "$TMP/kc" "    token: not-a-valid-token"
  "$KR" --kubeconfig "$TMP/kc" GET "/api/v1/namespaces/$ns/pods" >/dev/null 2>"$TMP/err"
  assertEquals 1 $?
  assertContains "$(cat "$TMP/err")" "unable to GET /api/v1/namespaces/$ns/pods: Unauthorized"
}

test_forbidden_reports_status() {
  need_cluster || return
  cluster_info
  ns=$(new_ns forbid)
  token=$(make_sa "$ns")
  write_kc "$TMP/kc" "    token: $token"
  "$KR" --kubeconfig "$TMP/kc" GET "/api/v1/namespaces/$ns/secrets" >/dev/null 2>"$TMP/err"
  assertEquals 1 $?
  assertContains "$(cat "$TMP/err")" "HTTP/2 403"
  assertContains "$(cat "$TMP/err")" \
    "kube-request: fatal: unable to GET /api/v1/namespaces/$ns/secrets: Forbidden: secrets is forbidden: User \"system:serviceaccount:$ns:bot\" cannot list resource \"secrets\""
}

test_not_found() {
  need_cluster || return
  ns=$(new_ns nf)
  "$KR" GET "/api/v1/namespaces/$ns/configmaps/nope" >"$TMP/out" 2>"$TMP/err"
  assertEquals 1 $?
  assertContains "$(cat "$TMP/err")" "HTTP/2 404"
  assertContains "$(cat "$TMP/err")" ": NotFound: configmaps \"nope\" not found"
  # The Status body itself is still printed.
  assertContains "$(cat "$TMP/out")" '"reason":"NotFound"'
}

test_post_and_delete() {
  need_cluster || return
  ns=$(new_ns post)
  "$KR" POST "/api/v1/namespaces/$ns/configmaps" \
    '{"metadata":{"name":"cm"},"data":{"k":"v"}}' >/dev/null 2>"$TMP/err"
  rc=$?
  assertEquals "POST; stderr: $(cat "$TMP/err")" 0 "$rc"
  assertEquals "v" "$(kubectl -n "$ns" get configmap cm -o jsonpath='{.data.k}')"
  echo '{"metadata":{"name":"cm"},"data":{"k":"v"}}' |
    "$KR" POST "/api/v1/namespaces/$ns/configmaps" - >/dev/null 2>"$TMP/err"
  assertEquals 1 $?
  assertContains "$(cat "$TMP/err")" ": AlreadyExists: "
  "$KR" --content-type application/merge-patch+json PATCH \
    "/api/v1/namespaces/$ns/configmaps/cm" '{"data":{"k":"w"}}' >/dev/null 2>&1
  assertEquals "PATCH" 0 $?
  assertEquals "w" "$(kubectl -n "$ns" get configmap cm -o jsonpath='{.data.k}')"
  "$KR" DELETE "/api/v1/namespaces/$ns/configmaps/cm" >/dev/null 2>&1
  assertEquals "DELETE" 0 $?
  assertFalse "still there" "kubectl -n $ns get configmap cm"
}

test_token_file() {
  need_cluster || return
  cluster_info
  ns=$(new_ns tf)
  mkdir -p "$TMP/tf"
  make_sa "$ns" >"$TMP/tf/token"
  # A relative path: relative to the kubeconfig's directory.
  write_kc "$TMP/tf/kc" "    tokenFile: token"
  (cd / && "$KR" --kubeconfig "$TMP/tf/kc" GET "/api/v1/namespaces/$ns/configmaps") >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "exit code; stderr: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/out")" '"kind":"ConfigMapList"'
  rm -f "$TMP/tf/token"
  "$KR" --kubeconfig "$TMP/tf/kc" GET "/api/v1/namespaces/$ns/configmaps" >/dev/null 2>"$TMP/err"
  assertEquals 100 $?
  assertContains "$(cat "$TMP/err")" "$TMP/tf/token"
}

# The plugin prints a token that the server refuses the first time it runs
# and the real one after: the 401 must make the client run it again.
write_plugin() {
  cat >"$TMP/plugin.sh" <<'EOF'
#!/bin/sh
n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n + 1)); echo $n >"$COUNT"
printf '%s\n' "$KUBERNETES_EXEC_INFO" >"$COUNT.info"
if [ $n -eq 1 ] || [ "$ALWAYS_BAD" = 1 ]; then t=expired-token; else t=$(cat "$TOKFILE"); fi
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"2099-01-01T00:00:00Z"}}\n' "$t"
EOF
  chmod +x "$TMP/plugin.sh"
}

test_exec_plugin() {
  need_cluster || return
  cluster_info
  ns=$(new_ns exec)
  make_sa "$ns" >"$TMP/exec-token"
  write_plugin
  rm -f "$TMP/count"
  write_kc "$TMP/kc" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugin.sh
      interactiveMode: Never
      provideClusterInfo: true
      env: [{name: COUNT, value: $TMP/count}, {name: TOKFILE, value: $TMP/exec-token}, {name: ALWAYS_BAD, value: '0'}]"
  "$KR" --kubeconfig "$TMP/kc" -v 4 GET "/api/v1/namespaces/$ns/pods" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "exit code; stderr: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/out")" '"kind":"PodList"'
  assertEquals "plugin runs" 2 "$(cat "$TMP/count")"
  assertContains "$(cat "$TMP/err")" "running the plugin again"
  info=$(cat "$TMP/count.info")
  assertContains "$info" '"kind":"ExecCredential"'
  assertContains "$info" '"apiVersion":"client.authentication.k8s.io/v1"'
  assertContains "$info" '"interactive":false'
  assertContains "$info" "\"server\":\"$SERVER\""
  assertContains "$info" '"certificate-authority-data":"LS0t'
  # A plugin whose token never works: one retry, then Unauthorized.
  rm -f "$TMP/count"
  sed -i "s/value: '0'/value: '1'/" "$TMP/kc"
  "$KR" --kubeconfig "$TMP/kc" GET "/api/v1/namespaces/$ns/pods" >/dev/null 2>"$TMP/err"
  assertEquals 1 $?
  assertEquals "plugin runs" 2 "$(cat "$TMP/count")"
  assertContains "$(cat "$TMP/err")" ": Unauthorized: "
}

test_exec_plugin_client_certificate() {
  need_cluster || return
  cluster_info
  # The admin's certificate and key, as PEM strings in an ExecCredential.
  cert=$(kubectl config view --raw --minify --flatten \
    -o jsonpath='{.users[0].user.client-certificate-data}' | base64 -d | awk '{printf "%s\\n", $0}')
  key=$(kubectl config view --raw --minify --flatten \
    -o jsonpath='{.users[0].user.client-key-data}' | base64 -d | awk '{printf "%s\\n", $0}')
  printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"clientCertificateData":"%s","clientKeyData":"%s"}}\n' \
    "$cert" "$key" >"$TMP/cred.json"
  printf '#!/bin/sh\ncat "%s"\n' "$TMP/cred.json" >"$TMP/cert-plugin.sh"
  chmod +x "$TMP/cert-plugin.sh"
  write_kc "$TMP/kc" "    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: $TMP/cert-plugin.sh"
  # Only system:masters may read kube-system's secrets.
  "$KR" --kubeconfig "$TMP/kc" GET /api/v1/namespaces/kube-system/secrets >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "stderr: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/out")" '"kind":"SecretList"'
}

test_proxy_url() {
  need_cluster || return
  cluster_info
  # A proxy that is not there: the request must go to it, and fail,
  # even with NO_PROXY naming the server.
  write_kc "$TMP/kc" "$ADMIN" "    proxy-url: http://127.0.0.1:1"
  NO_PROXY=127.0.0.1 no_proxy=127.0.0.1 \
    "$KR" --kubeconfig "$TMP/kc" GET /version >/dev/null 2>"$TMP/err"
  assertEquals 111 $?
  assertContains "$(cat "$TMP/err")" "127.0.0.1 port 1"
}

test_exec_plugin_missing() {
  need_cluster || return
  cluster_info
  write_kc "$TMP/kc" "    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: rs-no-such-plugin
      installHint: install it with your package manager"
  "$KR" --kubeconfig "$TMP/kc" GET /api >/dev/null 2>"$TMP/err"
  assertNotEquals 0 $?
  assertContains "$(cat "$TMP/err")" "executable rs-no-such-plugin not found: install it with your package manager"
}

test_wrong_ca() {
  need_cluster || return
  cluster_info
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=other-ca" \
    -keyout "$TMP/other.key" -out "$TMP/other.crt" 2>/dev/null
  CA=$TMP/other.crt
  write_kc "$TMP/kc" "    token: whatever"
  "$KR" --kubeconfig "$TMP/kc" GET /api >/dev/null 2>"$TMP/err"
  assertEquals 111 $?
  assertContains "$(cat "$TMP/err")" "kube-request: fatal: unable to GET /api: TLS error: certificate verification failed for $SERVER"
  # Nothing reached the server: no HTTP status was printed.
  assertNotContains "$(cat "$TMP/err")" "HTTP/"
}

test_tls_server_name() {
  need_cluster || return
  cluster_info
  # The serving certificate names kubernetes.default, not this one.
  write_kc "$TMP/kc" "    token: x" "    tls-server-name: wrong.example"
  "$KR" --kubeconfig "$TMP/kc" GET /version >/dev/null 2>"$TMP/err"
  assertEquals 111 $?
  assertContains "$(cat "$TMP/err")" "certificate verification failed"
  write_kc "$TMP/kc" "$ADMIN" "    tls-server-name: kubernetes.default"
  "$KR" --kubeconfig "$TMP/kc" GET /version >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "stderr: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/out")" '"gitVersion"'
  # Client certificate and CA from base64 -data fields.
  write_kc "$TMP/kc" "$ADMIN"
  sed -i "s|certificate-authority: .*|certificate-authority-data: $(base64 -w0 "$CA")|" "$TMP/kc"
  "$KR" --kubeconfig "$TMP/kc" GET /api/v1/namespaces/kube-system >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "stderr: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/out")" '"name":"kube-system"'
}

# The same TLS checks on the direct HTTP/2 client (kube-request --direct,
# one request through rs_kube_submit): a CA that did not sign the server's
# certificate, a tls-server-name it does not name, and the right one
# (dialled at the server's address, verified against that name), the CA
# from a -data field (the client certificate always is), and
# insecure-skip-tls-verify.
test_direct_tls() {
  need_cluster || return
  cluster_info
  kr="$KR --direct -v 1 --parallel 1"
  real_ca=$CA
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=other-ca" \
    -keyout "$TMP/other.key" -out "$TMP/other.crt" 2>/dev/null
  CA=$TMP/other.crt
  write_kc "$TMP/kc" "    token: whatever"
  CA=$real_ca
  $kr --kubeconfig "$TMP/kc" GET /api >/dev/null 2>"$TMP/err"
  assertEquals "wrong CA" 111 $?
  assertContains "$(cat "$TMP/err")" "on direct HTTP/2"
  assertContains "$(cat "$TMP/err")" "TLS error: certificate verification failed for $SERVER"
  assertContains "$(cat "$TMP/err")" "0 sent, 0 found no server"
  assertEquals "no HTTP status printed" 0 "$(grep -c '^HTTP/' "$TMP/err")"
  write_kc "$TMP/kc" "    token: x" "    tls-server-name: wrong.example"
  $kr --kubeconfig "$TMP/kc" GET /version >/dev/null 2>"$TMP/err"
  assertEquals "wrong name" 111 $?
  assertContains "$(cat "$TMP/err")" "certificate verification failed"
  write_kc "$TMP/kc" "$ADMIN" "    tls-server-name: kubernetes.default"
  $kr --kubeconfig "$TMP/kc" GET /version >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "tls-server-name: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/err")" "on direct HTTP/2"
  assertContains "$(cat "$TMP/out")" '"gitVersion"'
  write_kc "$TMP/kc" "$ADMIN" "    tls-server-name: wrong.example
    insecure-skip-tls-verify: true"
  sed -i "/certificate-authority: /d" "$TMP/kc"
  $kr --kubeconfig "$TMP/kc" GET /version >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "insecure: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/out")" '"gitVersion"'
  write_kc "$TMP/kc" "$ADMIN"
  sed -i "s|certificate-authority: .*|certificate-authority-data: $(base64 -w0 "$CA")|" "$TMP/kc"
  $kr --kubeconfig "$TMP/kc" GET /api/v1/namespaces/kube-system >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "-data fields: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/err")" "on direct HTTP/2"
  assertContains "$(cat "$TMP/out")" '"name":"kube-system"'
}

# A server without HTTP/2 (ALPN): the direct client hands the requests
# waiting, none sent, to libcurl for good, whether the server picks no
# protocol or refuses h2 with an alert.
test_direct_falls_back_without_h2() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=h1" \
    -keyout "$TMP/h1.key" -out "$TMP/h1.crt" 2>/dev/null
  for alpn in "" "-alpn http/1.1"; do
    port=$(free_port)
    # shellcheck disable=SC2086  # $alpn: no flag, or a flag and its value
    openssl s_server -quiet -www $alpn -key "$TMP/h1.key" -cert "$TMP/h1.crt" \
      -accept "127.0.0.1:$port" >/dev/null 2>&1 &
    spid=$!
    wait_for 10 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null || fail "no TLS server"
    kubeconfig_write "$TMP/h1.kc" "https://127.0.0.1:$port" "    insecure-skip-tls-verify: true" "    token: t"
    "$KR" --kubeconfig "$TMP/h1.kc" --direct -v 1 --parallel 3 GET /version >/dev/null 2>"$TMP/err"
    rc=$?
    kill "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    assertEquals "${alpn:-no ALPN}: $(tail -1 "$TMP/err")" 0 "$rc"
    assertContains "$(cat "$TMP/err")" "on libcurl from now on: the server does not offer HTTP/2 (ALPN)"
    assertEquals "${alpn:-no ALPN}: answered over HTTP/1.1" 3 "$(grep -c '^HTTP/1.1 200$' "$TMP/err")"
  done
}

test_connection_refused() {
  need_cluster || return
  "$KR" --master https://127.0.0.1:1 GET /api >/dev/null 2>"$TMP/err"
  assertEquals 111 $?
  assertContains "$(cat "$TMP/err")" "unable to GET /api: network error: unable to reach https://127.0.0.1:1"
}

test_missing_explicit_kubeconfig() {
  need_cluster || return
  "$KR" --kubeconfig "$TMP/absent" GET /api >/dev/null 2>"$TMP/err"
  assertEquals 100 $?
  assertContains "$(cat "$TMP/err")" "kubeconfig $TMP/absent: no such file"
}

# --direct: the asynchronous requests on libcommon's own HTTP/2 client
# (libcommon/kube_h2.c, rs-apply's writes), not libcurl: answers and error
# answers per request, one body borrowed by all, and failures told as
# libcurl's are (no server: not sent, and no server there; a server that
# never answers: a timeout, not sent).
test_direct_http2() {
  need_cluster || return
  ns=$(new_ns h2d)
  "$KR" --direct -v 4 --parallel 50 GET "/api/v1/namespaces/$ns" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "stderr: $(tail -2 "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/err")" "on direct HTTP/2 (libnghttp2"
  assertContains "$(cat "$TMP/err")" "HTTP/2: dialling 127.0.0.1"
  assertEquals 50 "$(grep -c '^HTTP/2 200$' "$TMP/err")"
  assertEquals 50 "$(grep -c "\"name\":\"$ns\"" "$TMP/out")"
  assertContains "$(cat "$TMP/err")" "50 requests: 50 ok, 0 refused, 0 failed"
  assertContains "$(cat "$TMP/err")" "; 1 new connections, 50 over HTTP/2"
  assertContains "$(cat "$TMP/err")" "50 sent, 0 found no server"
  val=$(printf '%6000s' '' | tr ' ' x)
  body="{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"generateName\":\"d-\"},\"data\":{\"v\":\"$val\"}}"
  "$KR" --direct --parallel 20 --borrowed POST "/api/v1/namespaces/$ns/configmaps" "$body" >"$TMP/resp" 2>"$TMP/err"
  rc=$?
  assertEquals "stderr: $(tail -2 "$TMP/err")" 0 "$rc"
  assertEquals "created whole" 20 "$(kubectl -n "$ns" get configmaps -o json |
    jq '[.items[] | select(.metadata.name | startswith("d-")) | select(.data.v | length == 6000)] | length')"
  assertEquals "answers whole" 20 "$(jq -s '[.[] | select(.data.v | length == 6000)] | length' "$TMP/resp")"
  "$KR" --direct --parallel 5 GET "/api/v1/namespaces/$ns/configmaps/nope" >/dev/null 2>"$TMP/err"
  assertEquals "404s" 1 $?
  assertEquals 5 "$(grep -c '^HTTP/2 404$' "$TMP/err")"
  # nothing listens: not sent, no server there
  "$KR" --direct --master https://127.0.0.1:1 --parallel 3 GET /version >/dev/null 2>"$TMP/err"
  assertEquals "no server" 111 $?
  assertContains "$(cat "$TMP/err")" "3 requests: 0 ok, 0 refused, 3 failed"
  assertContains "$(cat "$TMP/err")" "0 sent, 3 found no server"
  assertContains "$(cat "$TMP/err")" "unable to reach https://127.0.0.1:1: Failed to connect"
  # a listener that never answers the TLS handshake: the connect timeout
  python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
print(s.getsockname()[1], flush=True); time.sleep(30)' >"$TMP/port" &
  lpid=$!
  wait_for 10 test -s "$TMP/port" || fail "no silent listener"
  "$KR" --direct --timeout 1 --master "https://127.0.0.1:$(cat "$TMP/port")" --parallel 3 GET /version >/dev/null 2>"$TMP/err"
  rc=$?
  kill "$lpid" 2>/dev/null
  wait "$lpid" 2>/dev/null
  assertEquals "a timeout: $(tail -1 "$TMP/err")" 111 "$rc"
  assertContains "$(cat "$TMP/err")" "0 sent, 0 found no server"
  assertContains "$(cat "$TMP/err")" "timed out: https://127.0.0.1:"
}

# rs_kube_free with requests not finished (kube_multi_drop): three watches
# in flight (answered 200, their bodies still coming) and two still in the
# rate limiter's queue (--qps 0.05: the fourth would start 20 s later),
# on the direct HTTP/2 client and on libcurl, under valgrind: no callback
# runs for them, nothing leaks, no bad read or write, and the server sees
# the watches end.
test_free_with_requests_in_flight() {
  need_cluster || return
  ns=$(new_ns drop)
  watches() {
    kubectl get --raw /metrics | mawk '/^apiserver_longrunning_requests\{/ &&
      /resource="podtemplates"/ && /scope="namespace"/ && /verb="WATCH"/ { n += $NF }
      END { print n + 0 }'
  }
  watches_are() { [ "$(watches)" -eq "$1" ]; }
  for client in --direct ""; do
    # shellcheck disable=SC2086  # $client: one flag or none
    valgrind -q --error-exitcode=99 --leak-check=full \
      --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
      "$KR" $client -v 4 --qps 0.05 --burst 3 --parallel 5 \
      GET "/api/v1/namespaces/$ns/podtemplates?watch=1&timeoutSeconds=120" \
      >"$TMP/out" 2>"$TMP/err" &
    pid=$!
    wait_for 60 watches_are 3 || fail "${client:-libcurl}: not three watches in flight ($(watches))"
    kill -TERM "$pid"
    wait "$pid"
    rc=$?
    assertEquals "${client:-libcurl}: exit status (99: valgrind's report): $(tail -20 "$TMP/err")" 0 "$rc"
    assertContains "${client:-libcurl}" "$(cat "$TMP/err")" \
      "stopped with 5 of 5 requests not finished: dropped, no callback (0 answered)"
    grep -q '^HTTP/' "$TMP/err" && fail "${client:-libcurl}: a callback ran: $(grep '^HTTP/' "$TMP/err")"
    if [ -n "$client" ]; then
      grep -q 'HTTP/2 connection to .* up' "$TMP/err" || fail "no direct connection: $(head -5 "$TMP/err")"
    else
      grep -q 'HTTP/2 connection' "$TMP/err" && fail "libcurl's run went direct"
    fi
    wait_for 30 watches_are 0 || fail "${client:-libcurl}: watches still open on the server ($(watches))"
  done
}

test_parallel() {
  need_cluster || return
  ns=$(new_ns par)
  "$KR" --parallel 50 GET "/api/v1/namespaces/$ns" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "stderr: $(tail -1 "$TMP/err")" 0 "$rc"
  assertEquals 50 "$(grep -c '^HTTP/2 200$' "$TMP/err")"
  assertEquals 50 "$(grep -c "\"name\":\"$ns\"" "$TMP/out")"
  assertContains "$(cat "$TMP/err")" "50 requests: 50 ok, 0 refused, 0 failed"
  # Multiplexed over HTTP/2: one connection (two if a race opened one more).
  conns=$(sed -n 's/.*; \([0-9]*\) new connections.*/\1/p' "$TMP/err")
  assertTrue "new connections: $conns" "[ '$conns' -ge 1 ] && [ '$conns' -le 2 ]"
  # Errors come back per request too.
  "$KR" --parallel 5 GET "/api/v1/namespaces/$ns/configmaps/nope" >/dev/null 2>"$TMP/err"
  assertEquals 1 $?
  assertEquals 5 "$(grep -c '^HTTP/2 404$' "$TMP/err")"
}

# A body the caller keeps (rs_kube_submit_borrowed, as rs-apply's creates
# of a batch share one) reaches the server whole in every copy at once, and
# answers larger than an asynchronous transfer's receive buffer come back
# whole.
test_parallel_borrowed_body() {
  need_cluster || return
  ns=$(new_ns bor)
  val=$(printf '%6000s' '' | tr ' ' x)  # answers pass the 4 KiB receive buffer
  body="{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"generateName\":\"b-\"},\"data\":{\"v\":\"$val\"}}"
  "$KR" --parallel 40 --borrowed POST "/api/v1/namespaces/$ns/configmaps" "$body" >"$TMP/resp" 2>"$TMP/err"
  rc=$?
  assertEquals "stderr: $(tail -1 "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/err")" "40 requests: 40 ok, 0 refused, 0 failed"
  assertEquals 40 "$(grep -c "\"v\":\"$val\"" "$TMP/resp")"
  "$KR" GET "/api/v1/namespaces/$ns/configmaps" >"$TMP/out" 2>/dev/null
  assertEquals 40 "$(jq "[.items[] | select(.data.v == \"$val\")] | length" "$TMP/out")"
}

test_keepalive_and_threads() {
  need_cluster || return
  # Blocking calls one after the other reuse one kept-alive connection.
  "$KR" --threads 1 --repeat 20 GET /api/v1/namespaces/default >/dev/null 2>"$TMP/err"
  assertEquals 0 $?
  assertContains "$(cat "$TMP/err")" "20 requests: 20 ok, 0 refused, 0 failed"
  assertContains "$(cat "$TMP/err")" "; 1 new connections, 20 over HTTP/2"
  # From several threads at once: one connection per thread at most.
  "$KR" --threads 4 --repeat 10 GET /api/v1/namespaces/default >/dev/null 2>"$TMP/err"
  assertEquals 0 $?
  assertContains "$(cat "$TMP/err")" "40 requests: 40 ok, 0 refused, 0 failed"
  conns=$(sed -n 's/.*; \([0-9]*\) new connections.*/\1/p' "$TMP/err")
  assertTrue "new connections: $conns" "[ '$conns' -ge 1 ] && [ '$conns' -le 4 ]"
}

test_rate_limit() {
  need_cluster || return
  # 11 requests at 10/s with a burst of 1: the last waits about 1 s.
  "$KR" --qps 10 --burst 1 --parallel 11 GET /version >/dev/null 2>"$TMP/err"
  assertEquals 0 $?
  ms=$(sed -n 's/.* failed in \([0-9]*\) ms.*/\1/p' "$TMP/err")
  assertTrue "limited run took $ms ms" "[ '$ms' -ge 950 ] && [ '$ms' -lt 3000 ]"
  "$KR" --parallel 11 GET /version >/dev/null 2>"$TMP/err"
  ms=$(sed -n 's/.* failed in \([0-9]*\) ms.*/\1/p' "$TMP/err")
  assertTrue "unlimited run took $ms ms" "[ '$ms' -lt 900 ]"
}

test_in_cluster() {
  need_cluster || return
  cluster_info
  ns=$(new_ns incl)
  sa=$TMP/sa
  mkdir -p "$sa"
  make_sa "$ns" >"$sa/token"
  cp "$CA" "$sa/ca.crt"
  echo "$ns" >"$sa/namespace"
  mkdir -p "$TMP/emptyhome"
  env -u KUBECONFIG HOME="$TMP/emptyhome" RS_SERVICEACCOUNT_DIR="$sa" \
    KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$PORT" \
    "$KR" -v 4 GET "/api/v1/namespaces/$ns/configmaps" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  assertEquals "stderr: $(cat "$TMP/err")" 0 "$rc"
  assertContains "$(cat "$TMP/err")" "using in-cluster configuration: server https://127.0.0.1:$PORT"
  assertContains "$(cat "$TMP/out")" '"kind":"ConfigMapList"'
  # The service account may not read secrets: proves its token was used.
  env -u KUBECONFIG HOME="$TMP/emptyhome" RS_SERVICEACCOUNT_DIR="$sa" \
    KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT="$PORT" \
    "$KR" GET "/api/v1/namespaces/$ns/secrets" >/dev/null 2>"$TMP/err"
  assertEquals 1 $?
  assertContains "$(cat "$TMP/err")" "system:serviceaccount:$ns:bot"
  # Without the service variables there is no configuration at all.
  env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST HOME="$TMP/emptyhome" \
    RS_SERVICEACCOUNT_DIR="$sa" "$KR" GET /api >/dev/null 2>"$TMP/err"
  assertEquals 100 $?
  assertContains "$(cat "$TMP/err")" "no configuration"
}

test_secrets_never_logged() {
  need_cluster || return
  cluster_info
  ns=$(new_ns log)
  token=$(make_sa "$ns")
  write_kc "$TMP/kc" "    token: $token"
  "$KR" --kubeconfig "$TMP/kc" -v 10 GET "/api/v1/namespaces/$ns/pods" >/dev/null 2>"$TMP/err"
  "$KR" --kubeconfig "$TMP/kc" -v 10 GET "/api/v1/namespaces/$ns/secrets" >/dev/null 2>>"$TMP/err"
  "$KR" --kubeconfig "$TMP/kc" -v 10 --parallel 3 GET "/api/v1/namespaces/$ns/pods" >/dev/null 2>>"$TMP/err"
  # The requests were logged (so the log is on), the token never.
  assertContains "$(cat "$TMP/err")" "GET $SERVER/api/v1/namespaces/$ns/pods 200 in"
  assertContains "$(cat "$TMP/err")" "response body: "
  assertFalse "token on stderr" "grep -qF -- '$token' '$TMP/err'"
  assertFalse "token prefix on stderr" "grep -qF -- '${token%??????????}' '$TMP/err'"
  assertFalse "Authorization on stderr" "grep -qi 'authorization' '$TMP/err'"
  # The same through an exec plugin.
  printf '%s' "$token" >"$TMP/exec-token"
  write_plugin
  echo 1 >"$TMP/count"
  write_kc "$TMP/kc" "    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: $TMP/plugin.sh
      env: [{name: COUNT, value: $TMP/count}, {name: TOKFILE, value: $TMP/exec-token}]"
  "$KR" --kubeconfig "$TMP/kc" -v 10 GET "/api/v1/namespaces/$ns/pods" >/dev/null 2>"$TMP/err"
  assertEquals 0 $?
  assertFalse "exec token on stderr" "grep -qF -- '$token' '$TMP/err'"
}

test_watch_stream() {
  need_cluster || return
  ns=$(new_ns watch)
  ( sleep 1; kubectl -n "$ns" create configmap first >/dev/null
    kubectl -n "$ns" create configmap second >/dev/null ) &
  "$KR" --watch --timeout 4 GET "/api/v1/namespaces/$ns/configmaps?watch=1" >"$TMP/out" 2>"$TMP/err"
  rc=$?
  wait
  assertEquals "stderr: $(cat "$TMP/err")" 0 $rc
  assertEquals 2 "$(grep -c '^{"type":"ADDED"' "$TMP/out")"
  assertContains "$(sed -n 1p "$TMP/out")" '"name":"first"'
  assertContains "$(sed -n 2p "$TMP/out")" '"name":"second"'
  # The stop flag: SIGTERM ends an open watch at once, and cleanly.
  "$KR" --watch GET "/api/v1/namespaces/$ns/configmaps?watch=1" >/dev/null 2>"$TMP/err" &
  pid=$!
  sleep 1
  t0=$(date +%s%N)
  kill -TERM $pid
  for _ in $(seq 1 50); do kill -0 $pid 2>/dev/null || break; sleep 0.05; done
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if kill -0 $pid 2>/dev/null; then
    kill -KILL $pid
    fail "the watch did not stop on SIGTERM"
  fi
  wait $pid
  rc=$?
  assertEquals 0 $rc
  assertTrue "stop took $ms ms" "[ $ms -lt 1000 ]"
  # An error answer to a watch is reported like any other.
  "$KR" --watch GET "/api/v1/namespaces/$ns/nothings?watch=1" >/dev/null 2>"$TMP/err"
  assertEquals 1 $?
  assertContains "$(cat "$TMP/err")" ": NotFound: "
}

. "$SHUNIT2"
