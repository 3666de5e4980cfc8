#!/usr/bin/env bash
# Start the stand-in APNs (nginx, HTTP/2 over TLS) on 127.0.0.1 with a private prefix
# (Benchmarks/standin/run/, never /etc/nginx).
#   start.sh [--port 18443] [--cpu N] [--goaway-after N]
#   --cpu N           pin nginx to core N with taskset (the benchmark: server on 1, client on 0)
#   --goaway-after N  GOAWAY after N requests per connection (default: never, 1e9)
#   --latency-ms N    answer each push N ms after its body was read (echo_sleep), as Apple's
#                     servers answer 20-150 ms away; default 0 (at once)
# Prints the URL, the CA and the .p8 key; stop.sh stops it (using run/nginx.pid).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
RUN="$HERE/run"
CERTS="$HERE/certs"
PORT=18443 CPU="" MAX_REQUESTS=1000000000 LATENCY_MS=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --port) PORT="$2"; shift ;;
    --cpu) CPU="$2"; shift ;;
    --goaway-after) MAX_REQUESTS="$2"; shift ;;
    --latency-ms) LATENCY_MS="$2"; shift ;;
    *) echo "start.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done

command -v nginx >/dev/null && [[ -f /usr/lib/nginx/modules/ngx_http_echo_module.so ]] || {
  echo "start.sh: needs nginx with the echo module: apt-get install -y nginx-light" >&2; exit 1; }
[[ -f "$CERTS/server.pem" ]] || "$HERE/gen_certs.sh" "$CERTS" >/dev/null

if [[ -s "$RUN/nginx.pid" ]] && kill -0 "$(cat "$RUN/nginx.pid")" 2>/dev/null; then
  echo "start.sh: already running (pid $(cat "$RUN/nginx.pid")); run stop.sh first" >&2; exit 1
fi
[[ "$LATENCY_MS" =~ ^[0-9]+$ ]] || { echo "start.sh: --latency-ms takes whole milliseconds, not $LATENCY_MS" >&2; exit 2; }
LATENCY=""
(( LATENCY_MS > 0 )) && LATENCY="echo_sleep $(printf '%d.%03d' $((LATENCY_MS / 1000)) $((LATENCY_MS % 1000)));"
mkdir -p "$RUN/conf" "$RUN/logs" "$RUN/tmp"
sed -e "s|@RUN@|$RUN|g" -e "s|@CERTS@|$CERTS|g" -e "s|@LISTEN@|127.0.0.1:$PORT|g" \
    -e "s|@MAX_REQUESTS@|$MAX_REQUESTS|g" -e "s|@LATENCY@|$LATENCY|g" "$HERE/nginx.conf.in" > "$RUN/conf/nginx.conf"

NGINX=(nginx -p "$RUN" -e "$RUN/logs/error.log" -c "$RUN/conf/nginx.conf")
[[ -n "$CPU" ]] && NGINX=(taskset -c "$CPU" "${NGINX[@]}")
"${NGINX[@]}" -t -q
"${NGINX[@]}"
for _ in $(seq 50); do [[ -s "$RUN/nginx.pid" ]] && break; sleep 0.1; done
[[ -s "$RUN/nginx.pid" ]] || { echo "start.sh: nginx did not start; see $RUN/logs/error.log" >&2; exit 1; }
echo "url:    https://127.0.0.1:$PORT"
echo "ca:     $CERTS/ca.pem"
echo "p8 key: $CERTS/AuthKey_ABC123DEFG.p8"
echo "pid:    $(cat "$RUN/nginx.pid")"
