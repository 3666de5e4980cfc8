#!/usr/bin/env bash
# Prints the .deb's Depends for a herald binary, from what the binary really loads:
#   packaging/depends.sh .build/release/herald
#   -> libc6 (>= 2.34), libcurl4, ...
# Each NEEDED soname (objdump -p) goes through packaging/debian-deps.txt. Fails, naming the
# library, when a soname is missing from that table, when it comes from the Swift toolchain
# (libswift*, Foundation, dispatch: the binary was not linked with --static-swift-stdlib), when
# ldd resolves any library from the toolchain's directory, or when dpkg on this machine says the
# library belongs to another package than the table does.
set -euo pipefail
bin=${1:?usage: packaging/depends.sh HERALD_BINARY}
here=$(cd "$(dirname "$0")" && pwd)
table=$here/debian-deps.txt
fail() { echo "depends.sh: $*" >&2; exit 1; }
command -v objdump >/dev/null || fail "objdump not found (apt-get install binutils)"
[ -x "$bin" ] || fail "$bin is not an executable"

# The toolchain's root (/opt/swift for /opt/swift/usr/bin/swift), when one is on PATH.
toolchain=""
if swift_bin=$(command -v swift 2>/dev/null); then
  toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$swift_bin")")")")
fi

needed=$(objdump -p "$bin" | awk '$1 == "NEEDED" { print $2 }')
[ -n "$needed" ] || fail "$bin has no NEEDED entries (not a dynamic ELF binary?)"

packages=()
add() { local p; for p in "${packages[@]}"; do [ "$p" = "$1" ] && return; done; packages+=("$1"); }
for so in $needed; do
  case $so in
    libswift*|libFoundation*|lib_Foundation*|libdispatch*|libBlocksRuntime*|libicu*swift*|libXCTest*)
      fail "$bin needs $so from the Swift toolchain: build it with 'make release' (--static-swift-stdlib)";;
  esac
  pkg=$(awk -v so="$so" '$1 == so { print $2 }' "$table")
  [ -n "$pkg" ] || fail "$bin needs $so, which $table does not map to a Debian package: add a line for it"
  # Cross-check the table where this machine's dpkg owns the library.
  if command -v dpkg >/dev/null && command -v ldconfig >/dev/null; then
    path=$(ldconfig -p | awk -v so="$so" '$1 == so && !seen { print $NF; seen = 1 }')
    if [ -n "$path" ]; then
      owner=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path" 2>/dev/null || true)
      owner=${owner%%:*}
      if [ -n "$owner" ] && [ "$owner" != "$pkg" ]; then
        fail "$so is in $owner on this machine, but $table says $pkg"
      fi
    fi
  fi
  add "$pkg"
done

# Nothing may come from the toolchain's directory even through RUNPATH.
resolved=$(ldd "$bin")
if grep -q "not found" <<< "$resolved"; then
  fail "ldd cannot resolve every library of $bin: $(grep 'not found' <<< "$resolved" | tr -s ' \t' ' ')"
fi
if [ -n "$toolchain" ] && [ "$toolchain" != "/" ] && [ "$toolchain" != "/usr" ] && grep -q "$toolchain/" <<< "$resolved"; then
  fail "$bin loads libraries from the Swift toolchain ($toolchain): $(grep "$toolchain/" <<< "$resolved" | awk '{print $1}' | tr '\n' ' ')"
fi

# Runtime data herald reads (soname "-").
for pkg in $(awk '$1 == "-" { print $2 }' "$table"); do add "$pkg"; done

# libc6 at least as new as the newest GLIBC_ symbol version the binary uses.
glibc=$(objdump -T "$bin" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n1)
out=()
for p in "${packages[@]}"; do
  if [ "$p" = libc6 ] && [ -n "$glibc" ]; then out+=("libc6 (>= $glibc)"); else out+=("$p"); fi
done
(IFS=,; echo "${out[*]}" | sed 's/,/, /g')
