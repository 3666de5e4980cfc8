#!/usr/bin/env bash
# Installs herald's files under DESTDIR/PREFIX: what `make install` does, and what `make deb` and
# `make dist` pack. Every path comes from the environment (the Makefile passes them):
#   HERALD_BINARY  the built binary (make release's)
#   MANPAGE        the generated herald.1 (packaging/manpage.sh)
#   DESTDIR        staging root, empty for a real install
#   PREFIX         /usr/local by default; /usr for the .deb
#   BINDIR MANDIR DOCDIR BASH_COMPLETION_DIR ZSH_COMPLETION_DIR FISH_COMPLETION_DIR  (defaults below)
set -euo pipefail
fail() { echo "stage.sh: $*" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
: "${HERALD_BINARY:?}" "${MANPAGE:?}"
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
BINDIR=${BINDIR:-$PREFIX/bin}
MANDIR=${MANDIR:-$PREFIX/share/man}
DOCDIR=${DOCDIR:-$PREFIX/share/doc/herald}
# bash-completion loads completions/<command> on first use; zsh reads site-functions under
# /usr/local (Debian's zsh: vendor-completions under /usr, which the .deb passes); fish reads
# vendor_completions.d under every XDG data directory.
BASH_COMPLETION_DIR=${BASH_COMPLETION_DIR:-$PREFIX/share/bash-completion/completions}
ZSH_COMPLETION_DIR=${ZSH_COMPLETION_DIR:-$PREFIX/share/zsh/site-functions}
FISH_COMPLETION_DIR=${FISH_COMPLETION_DIR:-$PREFIX/share/fish/vendor_completions.d}
[ -x "$HERALD_BINARY" ] || fail "$HERALD_BINARY not found: run make release"
[ -s "$MANPAGE" ] || fail "$MANPAGE not found: run make man"

d() { echo "$DESTDIR$1"; }
install -d "$(d "$BINDIR")" "$(d "$MANDIR/man1")" "$(d "$DOCDIR/docs")" "$(d "$DOCDIR/examples/jobs")" \
           "$(d "$DOCDIR/examples/samples/templates")" \
           "$(d "$BASH_COMPLETION_DIR")" "$(d "$ZSH_COMPLETION_DIR")" "$(d "$FISH_COMPLETION_DIR")"
install -m 0755 "$HERALD_BINARY" "$(d "$BINDIR")/herald"
# Debug info is most of a release binary's size and nothing an operator's server uses.
if [ "${STRIP:-1}" = 1 ] && command -v strip >/dev/null; then strip --strip-debug "$(d "$BINDIR")/herald"; fi

# Completions from the binary itself (swift-argument-parser), so they always match its options.
"$HERALD_BINARY" --generate-completion-script bash > "$(d "$BASH_COMPLETION_DIR")/herald"
"$HERALD_BINARY" --generate-completion-script zsh  > "$(d "$ZSH_COMPLETION_DIR")/_herald"
"$HERALD_BINARY" --generate-completion-script fish > "$(d "$FISH_COMPLETION_DIR")/herald.fish"
chmod 0644 "$(d "$BASH_COMPLETION_DIR")/herald" "$(d "$ZSH_COMPLETION_DIR")/_herald" "$(d "$FISH_COMPLETION_DIR")/herald.fish"

gzip -9n < "$MANPAGE" > "$(d "$MANDIR/man1")/herald.1.gz"
chmod 0644 "$(d "$MANDIR/man1")/herald.1.gz"

# The README and docs/ keep their layout, so the README's links to docs/… work where they land.
install -m 0644 "$root/README.md" "$root/CHANGELOG.md" "$(d "$DOCDIR")/"
install -m 0644 "$root"/docs/*.md "$(d "$DOCDIR/docs")/"
# The demo campaign (make demo's), runnable from a copy: its paths are relative to the job file.
install -m 0644 "$root/jobs/demo.yaml" "$(d "$DOCDIR/examples/jobs")/"
install -m 0644 "$root/samples/demo-audience.csv.gz" "$(d "$DOCDIR/examples/samples")/"
install -m 0644 "$root"/samples/templates/*.json "$(d "$DOCDIR/examples/samples/templates")/"
