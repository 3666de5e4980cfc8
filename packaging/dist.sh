#!/usr/bin/env bash
# Builds dist/herald-VERSION-linux-ARCH.tar.gz: packaging/stage.sh's files for PREFIX=/usr/local
# under one top directory, to unpack with
#   tar -xzf herald-VERSION-linux-ARCH.tar.gz -C /usr/local --strip-components=1
# The libraries it needs are the .deb's Depends (packaging/depends.sh), written beside the docs as
# DEPENDS so the tarball says what to install.
set -euo pipefail
out=${1:?usage: packaging/dist.sh OUT_DIR}
: "${HERALD_BINARY:?}" "${MANPAGE:?}" "${VERSION:?}"
here=$(cd "$(dirname "$0")" && pwd)
arch=$(uname -m)
name=herald-$VERSION-linux-$arch
depends=$("$here/depends.sh" "$HERALD_BINARY")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DESTDIR=$work/stage PREFIX=/usr/local HERALD_BINARY=$HERALD_BINARY MANPAGE=$MANPAGE "$here/stage.sh"
mv "$work/stage/usr/local" "$work/$name"
echo "Debian 12 packages herald needs: $depends" > "$work/$name/share/doc/herald/DEPENDS"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}
mkdir -p "$out"
tarball=$out/$name.tar.gz
tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" -cf - "$name" | gzip -9n > "$tarball"
echo "$tarball"
