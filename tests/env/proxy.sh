# tests/env/proxy.sh: a faultproxy (tests/tools/faultproxy.c) between a
# client and a test cluster's kube-apiserver. Sourced by bash, by
# tests/shell/faults.sh and bench/faults/run; the caller sets FAULTPROXY
# (the binary, build/test/faultproxy).
#   start_proxy DIR CLUSTER KUBECONFIG
#       the proxy in front of CLUSTER's apiserver (its pid appended to
#       DIR/pids, log DIR/proxy.log, commands through the FIFO
#       DIR/proxy.ctl) and DIR/proxy.kubeconfig: KUBECONFIG pointed at it
#       (same CA: the server cert names 127.0.0.1 whatever the port).
#       1 when the proxy has not said its port within 10 s.
#   proxy COMMAND DIR   up, down, drop, cut, mute or stats (faultproxy.c says
#                       what each does)
#   apiserver_port CLUSTER

apiserver_port() { sed -n 's/^APISERVER_PORT=//p' "$1/env"; }

start_proxy() {
  local d=$1 c=$2 kc=$3 port
  port=$(apiserver_port "$c")
  rm -f "$d/proxy.port"
  "$FAULTPROXY" -v 1 --control "$d/proxy.ctl" --port-file "$d/proxy.port" 0 "$port" \
    2>>"$d/proxy.log" &
  echo $! >>"$d/pids"
  for _ in $(seq 1 100); do [ -s "$d/proxy.port" ] && break; sleep 0.1; done
  [ -s "$d/proxy.port" ] || return 1
  sed "s#https://127.0.0.1:$port#https://127.0.0.1:$(cat "$d/proxy.port")#" \
    "$kc" >"$d/proxy.kubeconfig"
  chmod 0600 "$d/proxy.kubeconfig"
}

proxy() { echo "$1" >"$2/proxy.ctl"; }
