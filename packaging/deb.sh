#!/usr/bin/env bash
# Builds dist/herald_VERSION_ARCH.deb with dpkg-deb (no network, no debhelper):
#   HERALD_BINARY=… MANPAGE=… VERSION=… packaging/deb.sh OUT_DIR
# The files are packaging/stage.sh's under /usr; Depends is packaging/depends.sh's reading of the
# binary. No maintainer scripts: the package only adds files (man-db and bash-completion pick
# theirs up by path).
set -euo pipefail
out=${1:?usage: packaging/deb.sh OUT_DIR}
: "${HERALD_BINARY:?}" "${MANPAGE:?}" "${VERSION:?}"
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "deb.sh: $*" >&2; exit 1; }
command -v dpkg-deb >/dev/null || fail "dpkg-deb not found (apt-get install dpkg)"
arch=$(dpkg --print-architecture)
maintainer=${MAINTAINER:-herald maintainers <herald@localhost>}
depends=$("$here/depends.sh" "$HERALD_BINARY")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
DESTDIR=$root PREFIX=/usr ZSH_COMPLETION_DIR=/usr/share/zsh/vendor-completions \
  HERALD_BINARY=$HERALD_BINARY MANPAGE=$MANPAGE "$here/stage.sh"
installed_kib=$(du -sk --apparent-size "$root" | cut -f1)
install -d -m 0755 "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CONTROL
Package: herald
Version: $VERSION
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $installed_kib
Depends: $depends
Section: net
Priority: optional
Description: bulk push-campaign runner for Apple Push Notification service
 herald sends push campaigns to APNs from CSV or NDJSON audience files,
 checkpointing every recipient in SQLite so that a rerun resumes where the
 last run stopped. It includes an APNs simulator (herald sim) to rehearse
 campaigns. The Swift runtime is linked in: no Swift toolchain is needed.
CONTROL
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | sort -z | xargs -0 md5sum) > "$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/control" "$root/DEBIAN/md5sums"
mkdir -p "$out"
# One herald .deb in dist/: the Containerfile installs dist/herald_*.deb.
rm -f "$out"/herald_*.deb
deb=$out/herald_${VERSION}_${arch}.deb
# A fixed mtime for every file (the last commit's) keeps the .deb the same for the same source.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}
find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" > /dev/null
echo "$deb"
