#!/usr/bin/env bash
# The package's proof (`make test-package`): the .deb installed with apt-get into a clean Debian 12
# (bookworm) root that has no Swift toolchain, then, inside that root, herald --version, herald sim
# on a loopback port and a small campaign against it with the installed binary, the demo campaign
# from the installed examples, ldd of the installed binary, and the completions, man page and docs
# where `make install` puts them.
#
#   packaging/test-package.sh dist/herald_VERSION_ARCH.deb
#
# Needs root (debootstrap, chroot, mount). The root is made once with debootstrap --variant=minbase
# (what debian:12-slim is built from, so apt-get installs here what the Containerfile's apt-get
# installs) and kept in HERALD_PACKAGE_CACHE (default /var/cache/herald-test-package) with the .debs
# apt fetched; every run works on an overlay of it (a copy where overlayfs is missing), thrown away
# at the end, so each run starts from the clean root. DEBIAN_MIRROR overrides deb.debian.org.
# Any failing step stops the run with "test-package: FAILED at <step>".
set -euo pipefail

deb_arg=${1:?usage: packaging/test-package.sh dist/herald_VERSION_ARCH.deb}
cache=${HERALD_PACKAGE_CACHE:-/var/cache/herald-test-package}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

step=""
run=""
root=""
sim_pid=""
mounts=()

step() { step=$1; echo "test-package: -- $step"; }
fail() { echo "test-package: $*" >&2; exit 1; }

# Inside the root, with an environment of its own: nothing of the host's PATH (which names the
# toolchain's bin directory) or of its variables comes in.
root_env=(/usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
          HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive)
in_root() { chroot "$root" "${root_env[@]}" "$@"; }

mount_in() {   # mount_in TARGET mount-arguments…
  local target=$1; shift
  mkdir -p "$target"
  mount "$@" "$target"
  mounts+=("$target")
}

cleanup() {
  local rc=$?
  set +e
  if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then kill "$sim_pid"; wait "$sim_pid" 2>/dev/null; fi
  # Anything else still running inside the root would keep its mounts busy.
  if [ -n "$root" ]; then
    local p
    for p in /proc/[0-9]*; do
      [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -KILL "${p#/proc/}" 2>/dev/null
    done
  fi
  local i
  for (( i=${#mounts[@]}-1; i>=0; i-- )); do
    umount "${mounts[$i]}" 2>/dev/null || umount -l "${mounts[$i]}"
  done
  if [ -n "$run" ]; then
    # Never delete through a mount that is still there (a bound /dev would be the host's).
    if grep -q " $run[/ ]" /proc/self/mountinfo; then
      echo "test-package: left $run in place: something is still mounted under it" >&2
    else
      rm -rf "$run"
    fi
  fi
  if [ $rc -ne 0 ]; then
    echo "test-package: FAILED at '$step' (exit $rc)" >&2
  else
    echo "test-package: passed"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "prerequisites"
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot and mount)"
command -v debootstrap >/dev/null || fail "debootstrap not found: apt-get install debootstrap (make package-test-deps)"
deb=$(readlink -f "$deb_arg")
[ -f "$deb" ] || fail "$deb_arg not found: run make deb"
version=$(dpkg-deb -f "$deb" Version)
arch=$(dpkg-deb -f "$deb" Architecture)
# The toolchain's root on this machine (/opt/swift for /opt/swift/usr/bin/swift): the installed
# binary must load nothing from there, and the root must not have it.
toolchain=""
if swift_bin=$(command -v swift 2>/dev/null); then
  toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$swift_bin")")")")
fi
case $toolchain in /|/usr) toolchain="";; esac

step "the cached Debian 12 root ($cache)"
base=$cache/bookworm-$arch
if [ ! -f "$base/.herald-base-complete" ]; then
  mkdir -p "$cache"
  rm -rf "$base.partial"
  debootstrap --variant=minbase --arch="$arch" bookworm "$base.partial" "$mirror" > "$cache/debootstrap.log" 2>&1 \
    || { tail -n 20 "$cache/debootstrap.log" >&2; fail "debootstrap failed (log: $cache/debootstrap.log)"; }
  cat > "$base.partial/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security_mirror bookworm-security main
EOF
  touch "$base.partial/.herald-base-complete"
  rm -rf "$base"
  mv "$base.partial" "$base"
fi
mkdir -p "$cache/apt-archives/partial"

step "a fresh root from the cache"
run=$(mktemp -d /tmp/herald-test-package.XXXXXX)
root=$run/root
mkdir -p "$root" "$run/upper" "$run/work"
if mount -t overlay overlay -o "lowerdir=$base,upperdir=$run/upper,workdir=$run/work" "$root" 2>/dev/null; then
  mounts+=("$root")
else
  cp -a "$base/." "$root/"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"

step "mount /proc and /dev in the root"
mount_in "$root/proc" -t proc proc
mount_in "$root/dev" --bind /dev
mount_in "$root/var/cache/apt/archives" --bind "$cache/apt-archives"

step "no Swift toolchain in the root"
if in_root sh -c 'command -v swift || command -v swiftc'; then fail "the root has a Swift toolchain on PATH"; fi
[ -z "$toolchain" ] || [ ! -e "$root$toolchain" ] || fail "the root has $toolchain"
found=$(find "$root" -xdev \( -name 'libswiftCore.so*' -o -name 'libFoundation.so*' -o -name 'libdispatch.so*' \) -print -quit)
[ -z "$found" ] || fail "the root has the Swift runtime: $found"

step "apt-get update in the root"
in_root apt-get update -qq

step "apt-get install ./$(basename "$deb") resolves herald's dependencies from Debian"
mkdir -p "$root/tmp/pkg"
cp "$deb" "$root/tmp/pkg/"
in_root sh -c "cd /tmp/pkg && apt-get install -y -q --no-install-recommends ./$(basename "$deb")" > "$run/apt-install.log" 2>&1 \
  || { tail -n 30 "$run/apt-install.log" >&2; fail "apt-get install failed"; }
grep -E '^(Setting up|Unpacking) ' "$run/apt-install.log" | sed 's/^/    /' | grep 'Setting up' || true
[ "$(in_root dpkg-query -W -f '${Status}' herald)" = "install ok installed" ] || fail "dpkg does not list herald as installed"
[ "$(in_root dpkg -S /usr/bin/herald | cut -d: -f1)" = herald ] || fail "/usr/bin/herald is not the package's"

step "herald --version"
got=$(in_root herald --version)
echo "$got" | sed 's/^/    /'
# The first line is herald's own version; the libraries' versions follow.
first=${got%%$'\n'*}
[ "$first" = "herald $version" ] || fail "herald --version printed '$first', the package is $version"

step "ldd of the installed binary names no toolchain path"
libs=$(in_root ldd /usr/bin/herald)
echo "$libs" | sed 's/^/    /'
if grep -q 'not found' <<< "$libs"; then fail "unresolved libraries: $(grep 'not found' <<< "$libs")"; fi
if grep -Eq 'libswift|libFoundation|libdispatch|libBlocksRuntime' <<< "$libs"; then fail "the binary loads the Swift runtime"; fi
if [ -n "$toolchain" ] && grep -q "$toolchain/" <<< "$libs"; then fail "the binary loads from $toolchain"; fi

step "completions, man page and docs where make install puts them (PREFIX=/usr)"
for f in /usr/share/bash-completion/completions/herald /usr/share/zsh/vendor-completions/_herald \
         /usr/share/fish/vendor_completions.d/herald.fish /usr/share/man/man1/herald.1.gz \
         /usr/share/doc/herald/README.md /usr/share/doc/herald/docs/installing.md \
         /usr/share/doc/herald/examples/jobs/demo.yaml; do
  [ -s "$root$f" ] || fail "$f is missing or empty"
  in_root dpkg -S "$f" > /dev/null || fail "$f is not the package's"
done
# Each completion script is what the installed binary itself generates.
for shell in bash zsh fish; do
  case $shell in
    bash) f=/usr/share/bash-completion/completions/herald;;
    zsh) f=/usr/share/zsh/vendor-completions/_herald;;
    fish) f=/usr/share/fish/vendor_completions.d/herald.fish;;
  esac
  in_root herald --generate-completion-script "$shell" | cmp -s - "$root$f" || fail "$f differs from herald --generate-completion-script $shell"
done
man=$(zcat "$root/usr/share/man/man1/herald.1.gz") || fail "herald.1.gz is not gzip"
grep -q '^\.Dt HERALD 1' <<< "$man" || fail "herald.1.gz is not herald's man page"
grep -q '^\.It Em sim$' <<< "$man" || fail "herald.1.gz does not describe herald sim"

step "herald sim on a loopback port"
camp=$root/tmp/campaign
mkdir -p "$camp/jobs" "$camp/secrets"
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$camp/secrets/AuthKey_ABC123DEFG.p8" 2>/dev/null \
  || fail "openssl could not make a P-256 key"
# Started as a simple command, not through in_root, so that $! is the process that becomes herald
# sim (chroot and env exec it) and SIGTERM reaches the simulator itself.
chroot "$root" "${root_env[@]}" herald sim --host 127.0.0.1 --port 0 --ca-out /tmp/campaign/sim-ca.pem --team-id DEF123GHIJ --key-id ABC123DEFG \
  --auth-key /tmp/campaign/secrets/AuthKey_ABC123DEFG.p8 --bundle-id com.example.app --unregistered-prefix dead \
  > "$run/sim.out" 2> "$run/sim.err" &
sim_pid=$!
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's|^listening on https://127\.0\.0\.1:\([0-9]*\)$|\1|p' "$run/sim.out")
  [ -n "$port" ] && break
  kill -0 "$sim_pid" 2>/dev/null || { cat "$run/sim.err" >&2; fail "herald sim exited before listening"; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$run/sim.err" >&2; fail "herald sim did not print 'listening on' within 30 s"; }
[ -s "$camp/sim-ca.pem" ] || fail "herald sim wrote no --ca-out"

step "a campaign against herald sim with the installed binary"
rows=40
# Every tenth token answered 410 Unregistered; the recipients' zones (an all-day schedule, so all
# are due at once) are looked up by the static binary: names with a / in the ICU data linked into
# it, a name without one (Japan) only if the root's tz database (tzdata, in Depends) has the file.
zones=(Europe/Paris America/New_York Asia/Kolkata Japan)
{
  echo "id,token,first_name,tz"
  for i in $(seq 1 $rows); do
    prefix=$([ $((i % 10)) = 0 ] && echo dead || echo 0abc)
    printf 'u%d,%s%060d,Name%d,%s\n' "$i" "$prefix" "$i" "$i" "${zones[$((i % 4))]}"
  done
} > "$camp/audience.csv"
cat > "$camp/jobs/package-check.yaml" <<EOF
campaign: package-check
audience: { files: [../audience.csv], token_field: token, id_field: id, timezone_field: tz }
schedule: { local_time: { from: "00:00", to: "24:00" } }
apns:
  endpoint: https://127.0.0.1:$port
  ca_file: ../sim-ca.pem
  topic: com.example.app
  auth: { team_id: DEF123GHIJ, key_id: ABC123DEFG, key_file: ../secrets/AuthKey_ABC123DEFG.p8 }
push:
  type: alert
  template: { aps: { alert: { title: "Package check", body: "Hi {{first_name|there}}" } } }
EOF
rc=0
in_root sh -c 'cd /tmp/campaign && herald run jobs/package-check.yaml' > "$run/run.out" 2>&1 || rc=$?
[ $rc = 0 ] || { tail -n 30 "$run/run.out" >&2; fail "herald run exited $rc"; }
summary=$camp/reports/package-check/summary.json
[ -s "$summary" ] || fail "no reports/package-check/summary.json"
python3 - "$summary" "$rows" <<'EOF' || fail "the campaign's summary.json is not what herald sim answered"
import json, sys
s = json.load(open(sys.argv[1])); rows = int(sys.argv[2]); c = s["counts"]
dead = rows // 10
by_hour = s.get("sends_by_local_hour") or []
ok = (c["rows"] == rows and c["invalid"] == 0 and c["distinct"] == rows and c["sent"] == rows - dead
      and c["failed"] == dead and s.get("unregistered") == dead and s["exit_code"] == 0 and sum(by_hour) == rows - dead)
print(f"    summary: rows {c['rows']}, invalid {c['invalid']}, sent {c['sent']}, failed {c['failed']} "
      f"(unregistered {s.get('unregistered')}), sent by local hour {sum(by_hour)}, exit {s['exit_code']}")
sys.exit(0 if ok else 1)
EOF
kill -TERM "$sim_pid"
rc=0
wait "$sim_pid" || rc=$?
sim_pid=""
[ $rc = 0 ] || fail "herald sim exited $rc on SIGTERM"
grep -q "^stopped after $rows requests" "$run/sim.out" || fail "herald sim did not answer $rows requests: $(tail -n1 "$run/sim.out")"

step "the demo campaign from the installed examples"
in_root sh -c 'cp -r /usr/share/doc/herald/examples /tmp/demo && herald run /tmp/demo/jobs/demo.yaml' > "$run/demo.out" 2>&1 \
  || { tail -n 30 "$run/demo.out" >&2; fail "herald run of the installed demo failed"; }
[ -s "$root/tmp/demo/reports/demo-spring-sale/summary.html" ] || fail "the demo wrote no summary.html"

step "done"
echo "test-package: herald $version ($arch) installed into a clean Debian 12 root without Swift and ran there"
