# certs.sh: sourced by tests/env/cluster, tests/env/node and tests/node.
# client_cert CADIR OUT SUBJECT: a client certificate and key, OUT.crt and
# OUT.key (0600), signed by CADIR/ca.crt and ca.key, for SUBJECT
# ("/O=group/CN=user", as the API server reads them).
client_cert() {
  printf 'extendedKeyUsage=clientAuth\n' >"$2.ext" &&
  openssl req -newkey rsa:2048 -nodes -subj "$3" -keyout "$2.key" -out "$2.csr" 2>/dev/null &&
  openssl x509 -req -in "$2.csr" -CA "$1/ca.crt" -CAkey "$1/ca.key" -CAcreateserial \
    -CAserial "$2.srl" -days 3650 -extfile "$2.ext" -out "$2.crt" 2>/dev/null &&
  chmod 0600 "$2.key" && rm -f "$2.ext" "$2.csr" "$2.srl"
}
