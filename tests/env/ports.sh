# ports.sh: sourced by tests/env/cluster and tests/env/node (bash).
# free_port prints a TCP port on 127.0.0.1 that nobody listens on, drawn
# from 20000-65535 outside the kernel's ephemeral range: a port inside it
# that is free when checked can be given to some client's connect before
# our server binds it. The range is read at each call
# (/proc/sys/net/ipv4/ip_local_port_range), since a host may have moved it.
free_port() {
  local lo=32768 hi=60999 p n a b
  read -r lo hi </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  # [a, b) below the range, [hi+1, 65536) above it
  a=20000 b=$lo
  [ "$b" -gt "$a" ] || b=$a
  n=$(( (b - a) + (65535 - hi) ))
  [ "$n" -gt 0 ] || { a=1024 b=$lo; n=$(( (b - a) + (65535 - hi) )); }
  [ "$n" -gt 0 ] || return 1
  for _ in $(seq 1 200); do
    p=$(( (RANDOM * 32768 + RANDOM) % n ))
    if [ "$p" -lt $((b - a)) ]; then p=$((a + p)); else p=$((hi + 1 + p - (b - a))); fi
    (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null || { echo $p; return 0; }
  done
  return 1
}
