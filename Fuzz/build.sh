#!/usr/bin/env bash
# Builds every fuzz target (Fuzz/*.c, one LLVMFuzzerTestOneInput each) with CHTTP2Client's sources,
# under libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer, into the directory given
# (default .build/fuzz). CC overrides the compiler: it must be a clang with libFuzzer (the Swift
# toolchain's has it; `make fuzz-check` finds one and says what is missing otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-.build/fuzz}"
. Fuzz/toolchain.sh
mkdir -p "$out"
# UBSan's findings abort like ASan's (-fno-sanitize-recover), so libFuzzer reports them as crashes.
flags=(-g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
       -ISources/CHTTP2Client/include -ISources/CHTTP2Client)
for src in Fuzz/*.c; do
  t="$(basename "$src" .c)"
  echo "fuzz: building $t"
  "$cc" "${flags[@]}" "${ld[@]}" "$src" Sources/CHTTP2Client/*.c -lnghttp2 -lssl -lcrypto -o "$out/$t"
done
