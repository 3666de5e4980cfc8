#!/usr/bin/env python3
"""Rate accuracy of `throttle.rate` and `throttle.silent_rate` over real time (a benchmark figure, never a test).

For each configured rate, runs `herald run` against the in-process simulator (TLS + HTTP/2) with an
audience large enough to keep sending for more than 11 s, reads the arrival time of every request
from the simulator's request log, and counts the requests that arrived in the 10 s that follow the
first second (the first second holds the token bucket's initial burst, one second deep). Prints
achieved vs configured rate and the error; writes bench-out/throttle.json.

Usage: throttle_bench.py [HERALD_BINARY] [--seconds 10] [--rates 50,500,2000] [--silent-rates 50]
The target is ±10 % over 10 s. A rate the binary cannot reach unthrottled (a debug build sends
about 1,000/s here) measures the sender, not the throttle.
"""
import argparse, json, os, shutil, subprocess, sys, tempfile


def run_one(herald, work, name, rate, push_type, seconds):
    os.makedirs(os.path.join(work, name, "jobs"), exist_ok=True)
    count = int(rate * (seconds + 3)) + 10
    with open(os.path.join(work, name, "audience.csv"), "w") as f:
        f.write("token\n")
        for i in range(count):
            f.write("%064x\n" % (i + 1))
    if push_type == "background":
        push = "push: { type: background, template: { aps: { content-available: 1 } } }"
        throttle = f"throttle: {{ silent_rate: {rate}, silent_per_device_per_hour: 0 }}"
    else:
        push = "push: { template: { aps: { alert: hello } } }"
        throttle = f"throttle: {{ rate: {rate} }}"
    job = os.path.join(work, name, "jobs", "job.yaml")
    log = os.path.join(work, name, "requests.ndjson")
    with open(job, "w") as f:
        f.write(f"""campaign: {name}
audience: {{ files: [../audience.csv] }}
apns: {{ endpoint: simulator, topic: com.example.app, streams_per_connection: 500, simulator: {{ log: ../requests.ndjson }} }}
{push}
{throttle}
""")
    p = subprocess.run([herald, "run", job], capture_output=True, text=True)
    if p.returncode != 0:
        print(p.stdout, p.stderr, file=sys.stderr)
        sys.exit(f"throttle_bench: herald run exited {p.returncode}")
    times = []
    with open(log) as f:
        for line in f:
            o = json.loads(line)
            if "time_ms" in o:
                times.append(o["time_ms"] / 1000.0)
    times.sort()
    start = times[0] + 1.0
    end = start + seconds
    inside = sum(1 for t in times if start <= t < end)
    achieved = inside / seconds
    error = (achieved - rate) / rate * 100
    first_second = sum(1 for t in times if t < start)
    print(f"throttle {push_type:10s} configured {rate:>8,.1f}/s  achieved {achieved:>9,.1f}/s over {seconds:.0f} s  "
          f"error {error:+.1f} %  (first second: {first_second} incl. the burst)")
    return {"push_type": push_type, "configured": rate, "achieved": round(achieved, 2), "error_percent": round(error, 2),
            "seconds": seconds, "requests_in_window": inside, "first_second": first_second}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("herald", nargs="?", default=".build/release/herald")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rates", default="50,500,2000")
    parser.add_argument("--silent-rates", default="50")
    args = parser.parse_args()
    herald = os.path.abspath(args.herald)
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(os.path.dirname(here), "bench-out")
    work = tempfile.mkdtemp(prefix="herald-throttle-bench-")
    results = []
    try:
        for r in [float(x) for x in args.rates.split(",") if x]:
            results.append(run_one(herald, work, f"rate-{r:g}", r, "alert", args.seconds))
        for r in [float(x) for x in args.silent_rates.split(",") if x]:
            results.append(run_one(herald, work, f"silent-{r:g}", r, "background", args.seconds))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "throttle.json"), "w") as f:
        json.dump({"runs": results}, f, indent=2)
    print(f"throttle figures written to {os.path.join(out, 'throttle.json')}")


if __name__ == "__main__":
    main()
