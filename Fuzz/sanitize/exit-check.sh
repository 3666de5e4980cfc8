#!/usr/bin/env bash
# `make sanitize`'s first step: openssl_thread_exit.c built with CHTTP2Client's sources under
# AddressSanitizer and UndefinedBehaviorSanitizer into the file given, and run; any report fails.
# The compiler as for the fuzz targets (Fuzz/toolchain.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${1:-.build-asan/exit-check}"
. Fuzz/toolchain.sh
mkdir -p "$(dirname "$bin")"
"$cc" -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all "${ld[@]}" \
  -ISources/CHTTP2Client/include -ISources/CHTTP2Client \
  Fuzz/sanitize/openssl_thread_exit.c Sources/CHTTP2Client/*.c -lnghttp2 -lssl -lcrypto -lpthread -o "$bin"
if "$bin"; then
  echo "sanitize: a thread ending with OpenSSL while the process exits loses nothing"
else
  echo "sanitize: FAILED: $bin (openssl_thread_exit.c) reported the above" >&2
  exit 1
fi
