#!/usr/bin/env bash
# Certificates for the stand-in APNs, made with the openssl CLI: a throwaway CA, a server
# certificate for 127.0.0.1/localhost (and Apple's host names) signed by it, and an ES256 provider
# key in Apple's .p8 format (PKCS#8 PEM, P-256) for token authentication.
#   gen_certs.sh [DIR]     default DIR: Benchmarks/standin/certs (kept; FORCE=1 makes new ones)
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
D="${1:-$HERE/certs}"
mkdir -p "$D"
cd "$D"
[[ "${FORCE:-0}" == 1 ]] && rm -f ca.* server.* AuthKey_*.p8
umask 077

if [[ ! -f ca.pem ]]; then
  openssl ecparam -name prime256v1 -genkey -noout -out ca.key
  openssl req -x509 -new -key ca.key -sha256 -days 3650 -out ca.pem \
    -subj "/CN=herald stand-in APNs CA" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
fi

if [[ ! -f server.pem ]]; then
  # P-256: the cheapest handshake; the bulk cost is AES-GCM either way.
  openssl ecparam -name prime256v1 -genkey -noout -out server.key
  openssl req -new -key server.key -subj "/CN=api.push.apple.com" -out server.csr
  cat > server.ext <<'EXT'
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,DNS:api.push.apple.com,DNS:api.sandbox.push.apple.com,IP:127.0.0.1
EXT
  openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 800 -sha256 -extfile server.ext -out server.pem 2>/dev/null
  rm -f server.csr server.ext
fi

if ! ls AuthKey_*.p8 >/dev/null 2>&1; then
  openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out AuthKey_ABC123DEFG.p8
fi
chmod 600 ./*.key ./*.p8
chmod 644 ca.pem server.pem
echo "CA:     $D/ca.pem"
echo "server: $D/server.pem (SAN 127.0.0.1, localhost, api[.sandbox].push.apple.com)"
echo "p8 key: $D/AuthKey_ABC123DEFG.p8 (key id ABC123DEFG, any team id)"
