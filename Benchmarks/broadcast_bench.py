#!/usr/bin/env python3
"""Broadcast throughput: a Live Activity broadcast campaign to many channels at Apple-like latency.

A broadcast (`POST /4/broadcasts/apps/<bundle>`) is one request per channel, answered a round trip
later like a device push, so its throughput is bounded by the requests kept in flight: connections x
streams / latency when each connection carries many broadcasts at once, connections / latency when it
carries one at a time. This writes an audience of BROADCAST_CHANNELS (10000) distinct channel ids
(`audience.channel_field`), then for each number of connections (BROADCAST_CONNECTIONS, "1 4") runs
release `herald run` end to end against the in-process simulator (`apns.endpoint: simulator`, which
takes every well-formed channel id of a broadcast job as created) answering LATENCY_MS (25) late, under
GNU time. It prints, per run: channels sent, the rate end to end (channels / wall time), the rate while
sending (first attempt to last answer in deliveries.csv), the two ceilings, and herald's peak RSS; and
writes bench-out/broadcast.json.

Usage: broadcast_bench.py [HERALD_BINARY]   (default .build/release/herald)
Environment: BROADCAST_CHANNELS (10000), BROADCAST_CONNECTIONS ("1 4"), BROADCAST_STREAMS (500,
`apns.streams_per_connection`), LATENCY_MS (25). The job uses only keys every herald with broadcasts
reads, so the same script measures an older build beside a newer one.
"""
import base64, datetime, json, os, random, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "bench-out")


def log(msg):
    print(f"broadcast: {msg}", flush=True)


def write_audience(path, channels):
    """One distinct channel id per row, base64 as `herald channels create` prints them; the same
    ids on every run (seeded), so runs of two builds meet the same audience."""
    rnd = random.Random(channels)
    with open(path, "w") as f:
        f.write("channel\n")
        for _ in range(channels):
            f.write(base64.b64encode(rnd.randbytes(16)).decode() + "\n")


def write_job(work, name, connections, streams, latency):
    job = os.path.join(work, "jobs", name + ".yaml")
    with open(job, "w") as f:
        f.write(f"""campaign: {name}
audience: {{ files: [../channels.csv], channel_field: channel }}
apns:
  endpoint: simulator
  topic: com.example.scores
  connections: {connections}
  streams_per_connection: {streams}
  simulator: {{ latency_ms: {latency} }}
push:
  type: liveactivity
  priority: 10
  template: {{ aps: {{ event: update, timestamp: auto, content-state: {{ home: 2, away: 0, minute: 61 }} }} }}
state: ../state/{name}.sqlite
reports: ../reports/{name}
""")
    return job


def send_phase(deliveries):
    """The sending phase from deliveries.csv: the first attempt's start to the last answer (an
    attempt's start plus its latency_ms), without reading the audience before it and the reports
    after it."""
    import csv
    parse = lambda t: datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%S.%fZ")
    first = last = None
    attempted = once = 0
    with open(deliveries, newline="") as f:
        for row in csv.DictReader(f):
            if not row["first_attempt_at"]:
                continue
            attempted += 1
            once += row["attempts"] == "1"
            start = parse(row["first_attempt_at"])
            latency = float(row["latency_ms"] or 0)
            answered = parse(row["last_attempt_at"]) + datetime.timedelta(milliseconds=latency)
            first = start if first is None or start < first else first
            last = answered if last is None or answered > last else last
    out = {"attempted": attempted, "attempted_once": once}
    if first and last:
        seconds = (last - first).total_seconds()
        out["send_seconds"] = round(seconds, 3)
        if seconds > 0:
            out["send_rate"] = round(attempted / seconds, 1)
    return out


def run_one(herald, work, connections, streams, latency, channels):
    name = f"broadcast-{connections}x{streams}"
    job = write_job(work, name, connections, streams, latency)
    rss_path = os.path.join(work, name + ".rss")
    timer = ["/usr/bin/time", "-f", "%U %S %M", "-o", rss_path] if os.path.exists("/usr/bin/time") else []
    started = time.monotonic()
    p = subprocess.run(timer + [herald, "run", job], capture_output=True, text=True)
    wall = time.monotonic() - started
    if p.returncode != 0:
        print(p.stdout, p.stderr, file=sys.stderr)
        sys.exit(f"broadcast_bench: herald run exited {p.returncode}")
    with open(os.path.join(work, "reports", name, "summary.json")) as f:
        summary = json.load(f)
    c = summary["counts"]
    row = {"connections": connections, "streams_per_connection": streams, "latency_ms": latency, "channels": channels,
           "distinct": c["distinct"], "sent": c["sent"], "failed": c["failed"], "wall_seconds": round(wall, 2),
           "rate": round(c["distinct"] / wall, 1), "summary_sends_per_second": summary.get("sends_per_second"),
           "latency_p50_ms": summary.get("latency_p50_ms"), "connections_opened": summary.get("connections_opened"),
           "one_at_a_time_ceiling": round(connections * 1000 / latency, 1),
           "window_ceiling": round(connections * streams * 1000 / latency, 1)}
    row.update(send_phase(os.path.join(work, "reports", name, "deliveries.csv")))
    if timer:
        with open(rss_path) as f:
            fields = f.read().split()
        if len(fields) >= 3 and fields[-1].isdigit():
            row["peak_rss_mib"] = round(int(fields[-1]) / 1024, 1)
            row["cpu_seconds"] = round(float(fields[-3]) + float(fields[-2]), 2)
    if c["sent"] != channels:
        log(f"warning: {c['sent']:,} of {channels:,} channels sent ({summary.get('by_reason')})")
    log(f"{connections} connection(s) x {streams} streams at {latency} ms: {c['sent']:,} of {channels:,} channels sent; "
        f"end to end {row['rate']:,}/s ({row['wall_seconds']} s); sending {row.get('send_rate', 0):,}/s "
        f"({row.get('attempted_once'):,} attempted once); ceilings {row['one_at_a_time_ceiling']:,}/s one at a time, "
        f"{row['window_ceiling']:,}/s with every stream; peak RSS {row.get('peak_rss_mib')} MiB")
    return row


def main():
    herald = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(HERE), ".build/release/herald"))
    channels = int(os.environ.get("BROADCAST_CHANNELS", "10000"))
    latency = int(os.environ.get("LATENCY_MS", "25"))
    streams = int(os.environ.get("BROADCAST_STREAMS", "500"))
    connection_counts = [int(x) for x in os.environ.get("BROADCAST_CONNECTIONS", "1 4").split()]
    work = tempfile.mkdtemp(prefix="herald-broadcast-bench-")
    results = []
    try:
        for d in ("jobs", "state", "reports"):
            os.makedirs(os.path.join(work, d))
        write_audience(os.path.join(work, "channels.csv"), channels)
        for connections in connection_counts:
            results.append(run_one(herald, work, connections, streams, latency, channels))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "broadcast.json"), "w") as f:
        json.dump({"herald": herald, "load_average": os.getloadavg()[0], "runs": results}, f, indent=2)
    print(f"broadcast bench: figures in {os.path.join(OUT, 'broadcast.json')}")


if __name__ == "__main__":
    main()
