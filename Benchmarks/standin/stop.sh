#!/usr/bin/env bash
# Stop the stand-in started by start.sh: TERM to the pid nginx recorded, only if that pid is
# still our nginx (its command line names our private config), so a reused pid is never signalled.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
PIDFILE="$HERE/run/nginx.pid"
[[ -s "$PIDFILE" ]] || { echo "not running"; exit 0; }
PID="$(cat "$PIDFILE")"
if ! tr '\0' ' ' < "/proc/$PID/cmdline" 2>/dev/null | grep -q -- "$HERE/run/conf/nginx.conf"; then
  echo "pid $PID is not our nginx; removing the stale $PIDFILE"; rm -f "$PIDFILE"; exit 0
fi
kill -TERM "$PID"
for _ in $(seq 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$PID" 2>/dev/null; then echo "stop.sh: pid $PID still alive after 5 s" >&2; exit 1; fi
rm -f "$PIDFILE"
echo "stopped (pid $PID)"
