#!/usr/bin/env bash
# Writes herald's man page (mdoc) from the binary's own command tree:
#   packaging/manpage.sh HERALD_BINARY SCRATCH_PATH OUT.1
# swift-argument-parser's GenerateManual plugin would build every product of the package first
# (herald-bench, render-bench, test support) in a configuration of its own, relinking herald without
# --static-swift-stdlib; so this only has the plugin build its generate-manual tool (its --help
# does that and nothing else, offline, from the checked-out dependency) and runs that tool on the
# binary make release built.
set -euo pipefail
bin=${1:?usage: manpage.sh HERALD_BINARY SCRATCH_PATH OUT.1}
scratch=${2:?}
out=${3:?}
fail() { echo "manpage.sh: $*" >&2; exit 1; }
[ -x "$bin" ] || fail "$bin not found: run make release"
swift package --scratch-path "$scratch" plugin generate-manual --help > /dev/null \
  || fail "swift package plugin generate-manual could not build its tool"
tool=$(find "$scratch" -maxdepth 3 -type f -name generate-manual-tool -perm -u+x -print -quit)
[ -n "$tool" ] || fail "no generate-manual-tool under $scratch after building the plugin's tool"
# A fixed date (the last commit's, else SOURCE_DATE_EPOCH's, else today's) keeps the page, and
# so the .deb, the same for the same source.
date=$(git -C "$(dirname "$0")" log -1 --format=%cs 2>/dev/null || true)
if [ -z "$date" ] && [ -n "${SOURCE_DATE_EPOCH:-}" ]; then date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%F); fi
[ -n "$date" ] || date=$(date -u +%F)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$tool" "$bin" --date "$date" --section 1 --output-directory "$work"
[ -s "$work/herald.1" ] || fail "generate-manual wrote no herald.1 (it wrote: $(ls "$work"))"
mkdir -p "$(dirname "$out")"
mv "$work/herald.1" "$out"
