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
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "jobs"))
    audience = os.path.join(work, "audience.csv.gz")
    subprocess.run([sys.executable, os.path.join(here, "gen_audience.py"), audience, str(rows)], check=True)
    figures = {"rows": rows, "runs": []}
    for connections, streams in [(1, 200), (2, 200)]:
        campaign = f"bench-{connections}x{streams}"
        job = os.path.join(work, "jobs", campaign + ".yaml")
        with open(job, "w") as f:
            f.write(f"""campaign: {campaign}
audience: {{ files: [../audience.csv.gz], locale_field: locale, id_field: id }}
apns: {{ endpoint: simulator, topic: com.example.app, connections: {connections}, streams_per_connection: {streams} }}
push:
  template: {{ aps: {{ alert: {{ title: "Hi {{{{first_name|there}}}}", body: "{{{{unread}}}} new in {{{{city}}}}" }}, badge: "{{{{unread:int}}}}" }} }}
""")
        started = time.monotonic()
        p = subprocess.run([herald, "run", job], capture_output=True, text=True)
        elapsed = time.monotonic() - started
        if p.returncode != 0:
            print(p.stdout, p.stderr, file=sys.stderr)
            sys.exit(f"bench: herald run exited {p.returncode}")
        with open(os.path.join(work, "reports", campaign, "summary.json")) as f:
            summary = json.load(f)
        sent = summary["counts"]["sent"]
        run = {"connections": connections, "streams_per_connection": streams, "recipients": summary["counts"]["distinct"],
               "sent": sent, "wall_seconds": round(elapsed, 3), "recipients_per_second": round(summary["counts"]["distinct"] / elapsed, 1)}
        figures["runs"].append(run)
        print(f"e2e {rows:,} rows, {connections} connection(s) x {streams} streams: {sent:,} sent in {elapsed:.2f} s "
              f"= {run['recipients_per_second']:,.0f} recipients/s (read, render, SQLite checkpoints, TLS+HTTP/2 to the simulator, reports)")
    figures["state"] = state_bench(os.path.join(os.path.dirname(herald), "herald-bench"))
    figures["resume"] = resume_bench(herald, here, work, int(os.environ.get("RESUME_ROWS", "1000000")))
    subprocess.run([sys.executable, os.path.join(here, "audience_bench.py"), herald], check=True)   # reading: bench-out/audience.json
    if shutil.which("h2load"):   # nghttp2-client: the simulator under a C load tool, bench-out/sim.json
        subprocess.run([sys.executable, os.path.join(here, "sim_bench.py"), herald], check=True)
    else:
        print("sim bench skipped: h2load not installed (apt-get install nghttp2-client)")
    subprocess.run([sys.executable, os.path.join(here, "standin_bench.py"), herald], check=True)   # vs curl/h2load/aioapns on nginx: bench-out/standin.json
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "figures.json"), "w") as f:
        json.dump(figures, f, indent=2)
    print(f"figures written to {os.path.join(out, 'figures.json')}")
    subprocess.run([sys.executable, os.path.join(here, "render_bench.py")], check=True)  # payload rendering, one core: bench-out/render.json

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
