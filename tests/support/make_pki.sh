#!/bin/sh
# Test certificates, made with openssl at test time (shared by the service's
# TLS tests, the C++ client test, the CLI's remote test and the Python client
# test): in DIR, a CA (ca.{crt,key}), a server certificate for
# localhost/127.0.0.1 signed by it (server.{crt,key}), a client certificate
# signed by it (client.{crt,key}), and a second, unrelated CA
# (wrong-ca.{crt,key}); the keys 0600. Valid for 2 days. openssl's output goes to
# DIR/openssl.log; exit status non-zero when a step fails.
#
# Usage: make_pki.sh DIR
set -e
cd "$1"
exec >openssl.log 2>&1
ca() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$1" -keyout "$1.key" -out "$1.crt"
}
leaf() {
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$1" -keyout "$1.key" -out "$1.csr"
  printf '%s\n' "$2" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
    -extfile "$1.ext" -out "$1.crt"
}
ca ca
ca wrong-ca
leaf server 'subjectAltName=DNS:localhost,IP:127.0.0.1'
leaf client 'extendedKeyUsage=clientAuth'
# tether-server refuses a private key others can read (--strict-file-modes).
chmod 0600 ./*.key
