# Sourced from the repository's root by build.sh and sanitize/exit-check.sh: `cc`, the compiler
# (CC, else the Swift toolchain's clang, else clang), and `ld`, -fuse-ld=lld when lld is beside it
# or on PATH: lld links the sanitizer runtimes without gold's noise about their symbols.
cc="${CC:-}"
if [ -z "$cc" ]; then
  if [ -x /opt/swift/usr/bin/clang ]; then cc=/opt/swift/usr/bin/clang; else cc=clang; fi
fi
ld=()
lld="$(dirname "$(command -v "$cc")")/ld.lld"
if [ -x "$lld" ] || command -v ld.lld >/dev/null; then ld=(-fuse-ld=lld); fi
