#!/usr/bin/env python3
"""herald's benchmark harness (`make bench`): end-to-end recipients/second of a generated campaign
against the built-in simulator over TLS + HTTP/2 on loopback. Writes bench-out/figures.json.

Usage: run_bench.py HERALD_BINARY [ROWS]
The audience is generated on the fly (never committed) with gen_audience.py.
Also: dedup + checkpoint alone on 1,000,000 tokens (herald-bench state, beside the herald binary), and the
time of rerunning a finished 1,000,000-recipient campaign against its first run (RESUME_ROWS overrides).
"""
import json, os, shutil, subprocess, sys, time

def main():
    herald = os.path.abspath(sys.argv[1])
    rows = int(sys.argv[2]) if len(sys.argv) > 2 else 100_000
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(os.path.dirname(here), "bench-out")
    work = os.path.join(out, "e2e")
    sys.path.insert(0, here)
    import e2e_bench   # end to end: medians of 3 runs per shape and peak RSS (bench-out/e2e.json)
    e2e = e2e_bench.bench(herald, rows, repeat=int(os.environ.get("E2E_REPEAT", "3")))
    figures = {"rows": rows, "runs": [{"connections": r["connections"], "streams_per_connection": r["streams_per_connection"],
                                       "recipients_per_second": r["median_recipients_per_second"], "peak_rss_mib": r["peak_rss_mib"]}
                                      for r in e2e["runs"]]}
    figures["state"] = state_bench(os.path.join(os.path.dirname(herald), "herald-bench"))
    figures["resume"] = resume_bench(herald, here, work, int(os.environ.get("RESUME_ROWS", "1000000")))
    subprocess.run([sys.executable, os.path.join(here, "audience_bench.py"), herald], check=True)   # reading: bench-out/audience.json
    if shutil.which("h2load"):   # nghttp2-client: the simulator under a C load tool, bench-out/sim.json
        subprocess.run([sys.executable, os.path.join(here, "sim_bench.py"), herald], check=True)
    else:
        print("sim bench skipped: h2load not installed (apt-get install nghttp2-client)")
    subprocess.run([sys.executable, os.path.join(here, "standin_bench.py"), herald], check=True)   # vs curl/h2load/aioapns on nginx: bench-out/standin.json
    subprocess.run([sys.executable, os.path.join(here, "instructions_bench.py"), herald], check=True)   # instructions per push (callgrind): bench-out/instructions.json
    subprocess.run([sys.executable, os.path.join(here, "window_bench.py"), herald], check=True)   # 50 ms latency, RSS against the in-flight window: bench-out/window.json
    subprocess.run([sys.executable, os.path.join(here, "schedule_bench.py"), herald], check=True)   # what a schedule costs: bench-out/schedule.json
    subprocess.run([sys.executable, os.path.join(here, "broadcast_bench.py"), herald], check=True)   # 10,000 broadcast channels at 25 ms: bench-out/broadcast.json
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "figures.json"), "w") as f:
        json.dump(figures, f, indent=2)
    print(f"figures written to {os.path.join(out, 'figures.json')}")
    subprocess.run([sys.executable, os.path.join(here, "render_bench.py")], check=True)  # payload rendering, one core: bench-out/render.json
    subprocess.run([sys.executable, os.path.join(here, "throttle_bench.py"), herald], check=True)  # throttle.rate accuracy over 10 s: bench-out/throttle.json
    subprocess.run([sys.executable, os.path.join(here, "report_bench.py"), herald], check=True)  # herald report from the state file: bench-out/report*.json

def state_bench(bench):
    """Dedup + checkpoint alone (target >= 300,000 recipients/s), with synchronous=FULL and NORMAL."""
    p = subprocess.run([bench, "state", "1000000"], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"bench: herald-bench state failed: {p.stderr}")
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    for r in results:
        print(f"state {r['rows']:,} tokens, synchronous={r['synchronous']}: dedup + checkpoint {r['ingest_rows_per_second']:,} rows/s "
              f"({r['ingest_seconds']} s, {r['duplicates']:,} duplicates); send checkpoints (inflight + answer) "
              f"{r['send_checkpoints_per_second']:,} recipients/s")
    return results

def resume_bench(herald, here, work, rows):
    """A finished campaign run again: time against the first run (target < 10 %)."""
    audience = os.path.join(work, "resume-audience.csv.gz")
    subprocess.run([sys.executable, os.path.join(here, "gen_audience.py"), audience, str(rows)], check=True)
    job = os.path.join(work, "jobs", "resume.yaml")
    with open(job, "w") as f:
        f.write("""campaign: bench-resume
audience: { files: [../resume-audience.csv.gz], locale_field: locale, id_field: id }
apns: { endpoint: simulator, topic: com.example.app, connections: 2, streams_per_connection: 200 }
push:
  template: { aps: { alert: { title: "Hi {{first_name|there}}", body: "{{unread}} new in {{city}}" } } }
""")
    times = []
    for attempt in ("first run", "rerun of the finished campaign"):
        started = time.monotonic()
        p = subprocess.run([herald, "run", job], capture_output=True, text=True)
        times.append(time.monotonic() - started)
        if p.returncode != 0:
            print(p.stdout, p.stderr, file=sys.stderr)
            sys.exit(f"bench: {attempt} exited {p.returncode}")
    ratio = times[1] / times[0]
    print(f"resume {rows:,} recipients: first run {times[0]:.2f} s, rerun of the finished campaign {times[1]:.2f} s "
          f"= {ratio * 100:.1f} % of the first run")
    return {"rows": rows, "first_seconds": round(times[0], 3), "rerun_seconds": round(times[1], 3), "ratio": round(ratio, 4)}

if __name__ == "__main__":
    main()
