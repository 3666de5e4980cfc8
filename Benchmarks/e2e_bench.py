#!/usr/bin/env python3
"""End-to-end send benchmark: `herald run` of a generated csv.gz campaign against the in-process
simulator over TLS + HTTP/2 on loopback (read, render, SQLite checkpoints, sending, reports), with
each run's wall time, recipients/s and peak RSS (the child's ru_maxrss). Writes bench-out/e2e.json.

Usage: e2e_bench.py HERALD_BINARY [ROWS] [--repeat N] [--shapes 1x200,2x200]
The median of N runs per shape is reported (these machines are noisy, ±20 %).
"""
import json, os, shutil, statistics, subprocess, sys, time

def run_once(herald, work, campaign, connections, streams):
    job = os.path.join(work, "jobs", campaign + ".yaml")
    with open(job, "w") as f:
        f.write(f"""campaign: {campaign}
audience: {{ files: [../audience.csv.gz], locale_field: locale, id_field: id }}
apns: {{ endpoint: simulator, topic: com.example.app, connections: {connections}, streams_per_connection: {streams} }}
push:
  template: {{ aps: {{ alert: {{ title: "Hi {{{{first_name|there}}}}", body: "{{{{unread}}}} new in {{{{city}}}}" }}, badge: "{{{{unread:int}}}}" }} }}
""")
    for leftover in (os.path.join(work, "state"), os.path.join(work, "reports", campaign)):
        shutil.rmtree(leftover, ignore_errors=True)
    started = time.monotonic()
    p = subprocess.run([herald, "run", job], capture_output=True, text=True)
    out, err = p.stdout, p.stderr
    elapsed = time.monotonic() - started
    if p.returncode != 0:
        print(out, err, file=sys.stderr)
        sys.exit(f"bench: herald run exited {p.returncode}")
    with open(os.path.join(work, "reports", campaign, "summary.json")) as f:
        summary = json.load(f)
    return {"wall_seconds": round(elapsed, 3), "recipients": summary["counts"]["distinct"], "sent": summary["counts"]["sent"],
            "recipients_per_second": round(summary["counts"]["distinct"] / elapsed, 1)}

def peak_rss_mib(cmd):
    """Runs cmd and returns its exit status and peak RSS in MiB (ru_maxrss of that child alone)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), round(usage.ru_maxrss / 1024, 1)

def bench(herald, rows, repeat=3, shapes=((1, 200), (2, 200))):
    here = os.path.dirname(os.path.abspath(__file__))
    work = os.path.join(os.path.dirname(here), "bench-out", "e2e")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "jobs"))
    subprocess.run([sys.executable, os.path.join(here, "gen_audience.py"), os.path.join(work, "audience.csv.gz"), str(rows)], check=True)
    figures = {"rows": rows, "repeat": repeat, "runs": []}
    for connections, streams in shapes:
        campaign = f"bench-{connections}x{streams}"
        runs = []
        for i in range(repeat):
            r = run_once(herald, work, campaign, connections, streams)
            runs.append(r)
        # Peak RSS: one more run from scratch, alone under wait4 (the child's own maximum).
        shutil.rmtree(os.path.join(work, "state"), ignore_errors=True)
        shutil.rmtree(os.path.join(work, "reports", campaign), ignore_errors=True)
        status, rss = peak_rss_mib([herald, "run", os.path.join(work, "jobs", campaign + ".yaml")])
        median = statistics.median(r["recipients_per_second"] for r in runs)
        shape = {"connections": connections, "streams_per_connection": streams, "runs": runs,
                 "median_recipients_per_second": median, "peak_rss_mib": rss}
        figures["runs"].append(shape)
        print(f"e2e {rows:,} rows, {connections} connection(s) x {streams} streams: median {median:,.0f} recipients/s over {repeat} runs "
              f"({', '.join(format(r['recipients_per_second'], ',.0f') for r in runs)}), peak RSS {rss} MiB "
              f"(read, render, SQLite checkpoints, TLS+HTTP/2 to the simulator, reports)")
    out = os.path.join(os.path.dirname(here), "bench-out")
    with open(os.path.join(out, "e2e.json"), "w") as f:
        json.dump(figures, f, indent=2)
    return figures

def main():
    args = sys.argv[1:]
    repeat = 3
    shapes = ((1, 200), (2, 200))
    if "--repeat" in args:
        i = args.index("--repeat"); repeat = int(args[i + 1]); del args[i:i + 2]
    if "--shapes" in args:
        i = args.index("--shapes")
        shapes = tuple(tuple(int(x) for x in s.split("x")) for s in args[i + 1].split(","))
        del args[i:i + 2]
    herald = os.path.abspath(args[0])
    rows = int(args[1]) if len(args) > 1 else 100_000
    bench(herald, rows, repeat, shapes)

if __name__ == "__main__":
    main()
