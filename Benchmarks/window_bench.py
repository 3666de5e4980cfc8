#!/usr/bin/env python3
"""herald at Apple-like latency: throughput and peak RSS against the in-flight window.

A real campaign meets a 20-150 ms round trip to APNs, so throughput is connections x streams /
latency, and a sender needs many streams in flight. This starts the nginx stand-in answering each
push LATENCY_MS (50) after its body was read (start.sh --latency-ms), then for each window
(1x200, 1x1000, 4x1000, 8x1000 by default; WINDOWS="1x1000 4x1000" to choose) runs release
`herald run` end to end on a WINDOW_ROWS (200000) campaign under GNU time, and h2load with the
same connections x streams on the same request shape. It prints, per window: herald's rate end to
end, its rate while sending (first to last attempt in deliveries.csv: h2load only sends), how
many recipients were attempted exactly once, h2load's rate, the theoretical connections x streams
/ latency, and herald's peak RSS; and writes bench-out/window.json with the ratios.

Usage: window_bench.py [HERALD_BINARY]   (default .build/release/herald)
Skips (exit 0, with a message) without nginx-light or h2load.
"""
import csv, datetime, json, os, random, shutil, sys

import standin_bench as sb


def send_phase(deliveries):
    """The sending phase alone, from deliveries.csv: first attempt to last attempt. herald's rate
    above is end to end (reading and deduplicating the audience into the state file before the
    first push, the reports after the last), h2load's is sending only; this is the like-for-like
    figure. Also counts the recipients attempted exactly once (the issue's "every recipient sent
    once")."""
    first = last = None
    once = attempted = 0
    with open(deliveries, newline="") as f:
        for row in csv.DictReader(f):
            if row["attempts"] == "1":
                once += 1
            a, b = row["first_attempt_at"], row["last_attempt_at"]
            attempted += bool(a)
            if a and (first is None or a < first):
                first = a
            if b and (last is None or b > last):
                last = b
    out = {"attempted_once": once}
    if first and last:
        parse = lambda t: datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ")
        seconds = (parse(last) - parse(first)).total_seconds()
        out["send_seconds"] = round(seconds, 2)
        if seconds > 0:
            out["send_rate"] = round(attempted / seconds, 1)
    return out


def main():
    herald = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(sb.ROOT, ".build/release/herald"))
    if not (shutil.which("nginx") and shutil.which("h2load") and os.path.exists("/usr/lib/nginx/modules/ngx_http_echo_module.so")):
        print("window bench skipped: needs nginx-light and nghttp2-client (apt-get install -y nginx-light nghttp2-client)")
        return
    rows = int(os.environ.get("WINDOW_ROWS", "200000"))
    latency = int(os.environ.get("LATENCY_MS", "50"))
    windows = [tuple(int(x) for x in w.split("x")) for w in os.environ.get("WINDOWS", "1x200 1x1000 4x1000 8x1000").split()]
    for d in ("jobs", "state", "reports", "data"):
        os.makedirs(os.path.join(sb.WORK, d), exist_ok=True)
    data = os.path.join(sb.WORK, "data")
    audience = os.path.join(data, f"audience_{rows}.csv.gz")
    sb.gen_audience(audience, rows)
    payload = os.path.join(data, "payload.json")
    with open(payload, "w") as f:
        json.dump(sb.PAYLOAD, f, separators=(",", ":"))
    uris = os.path.join(data, "h2load_uris.txt")
    rnd = random.Random(3)
    si = sb.StandIn(sb.free_port())
    with open(uris, "w") as f:
        for i in range(20000):
            f.write(f"{si.url}/3/device/{sb.token(rnd, i)}\n")
    si.stop()
    si.start(latency_ms=latency)
    results = []
    try:
        jwt = sb.make_jwt(si.key)
        for connections, streams in windows:
            name = f"window-{connections}x{streams}"
            job = sb.write_job(name, audience, si, connections, streams)
            h = sb.run_herald(herald, job, name)
            h.update(send_phase(os.path.join(sb.WORK, "reports", name, "deliveries.csv")))
            peer = sb.run_h2load(si, jwt, payload, uris, min(rows, 200000), connections, streams)
            ceiling = connections * streams * 1000 / latency
            row = {"window": f"{connections}x{streams}", "latency_ms": latency, "herald": h, "h2load": peer,
                   "theoretical_rate": ceiling}
            if "rate" in h and "rate" in peer:
                row["herald_over_h2load"] = round(h["rate"] / peer["rate"], 2)
            if "send_rate" in h and "rate" in peer:
                row["send_phase_over_h2load"] = round(h["send_rate"] / peer["rate"], 2)
            if "rate" in h:
                row["herald_over_theoretical"] = round(h["rate"] / ceiling, 2)
            if "send_rate" in h:
                row["send_phase_over_theoretical"] = round(h["send_rate"] / ceiling, 2)
            results.append(row)
            sb.log(f"{connections}x{streams} at {latency} ms: herald {h.get('rate', h.get('error'))}/s "
                   f"(peak RSS {h.get('peak_rss_mib')} MiB; sending alone {h.get('send_rate')}/s, "
                   f"{h.get('attempted_once')} of {h.get('recipients')} attempted once), "
                   f"h2load {peer.get('rate', peer.get('error'))}/s, theoretical {ceiling:,.0f}/s")
    finally:
        si.stop()
    os.makedirs(sb.OUT, exist_ok=True)
    name = "window.json"
    with open(os.path.join(sb.OUT, name), "w") as f:
        json.dump(results, f, indent=2)
    print(f"window bench: figures in {os.path.join(sb.OUT, name)}")


if __name__ == "__main__":
    main()
