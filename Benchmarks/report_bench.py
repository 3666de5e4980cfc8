#!/usr/bin/env python3
"""Report writing: `herald report` regenerating every report of a finished campaign from its state
file (deliveries.csv + .ndjson, unregistered.csv, rejected-tokens.csv, invalid.csv, summary.html,
summary.json), plain and gzip-compressed, with the peak RSS of each (memory must stay flat).

Usage: report_bench.py HERALD_BINARY [ROWS ...]   (default 100000 and 400000; REPORT_ROWS overrides)
Writes bench-out/reports.json. The audience is generated (gen_audience.py --messy), never committed.
"""
import json, os, shutil, subprocess, sys, tempfile, time

def run(cmd):
    """Runs cmd; returns (seconds, peak RSS in MiB) of that child alone (wait4's rusage)."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as err:   # a file, not a pipe: a chatty child cannot block on it
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        elapsed = time.monotonic() - started
        p.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        message = err.read().decode(errors="replace")
    if p.returncode != 0:
        print(message, file=sys.stderr)
        sys.exit(f"report bench: {' '.join(cmd)} exited {p.returncode}")
    return elapsed, usage.ru_maxrss // 1024

def main():
    herald = os.path.abspath(sys.argv[1])
    sizes = [int(a) for a in sys.argv[2:]] or [int(x) for x in os.environ.get("REPORT_ROWS", "100000,400000").split(",")]
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(os.path.dirname(here), "bench-out")
    work = os.path.join(out, "reports-bench")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "jobs"))
    results = []
    for rows in sizes:
        audience = os.path.join(work, f"audience-{rows}.csv.gz")
        subprocess.run([sys.executable, os.path.join(here, "gen_audience.py"), audience, str(rows), "--messy"], check=True)
        for compress in (False, True):
            campaign = f"report-{rows}-{'gz' if compress else 'plain'}"
            job = os.path.join(work, "jobs", campaign + ".yaml")
            with open(job, "w") as f:
                f.write(f"""campaign: {campaign}
audience: {{ files: [../audience-{rows}.csv.gz], locale_field: locale, id_field: id, max_invalid_rows: 100% }}
apns:
  endpoint: simulator
  topic: com.example.app
  connections: 2
  streams_per_connection: 200
  simulator: {{ unregistered_prefixes: [dead], bad_token_prefixes: [badd] }}
push:
  template: {{ aps: {{ alert: "Hi {{{{first_name|there}}}}" }} }}
reports: {{ dir: ../reports/{campaign}, compress: {str(compress).lower()} }}
""")
            run([herald, "run", job])
            seconds, rss = run([herald, "report", job])
            reports = os.path.join(work, "reports", campaign)
            sizes_on_disk = {name: os.path.getsize(os.path.join(reports, name)) for name in sorted(os.listdir(reports))}
            with open(os.path.join(reports, "summary.json")) as f:
                distinct = json.load(f)["counts"]["distinct"]
            r = {"rows": rows, "recipients": distinct, "compress": compress, "seconds": round(seconds, 3),
                 "recipients_per_second": round(distinct / seconds), "peak_rss_mib": rss, "bytes": sizes_on_disk}
            results.append(r)
            print(f"report {distinct:,} recipients ({'gzip' if compress else 'plain'}): every report in {seconds:.2f} s "
                  f"= {r['recipients_per_second']:,} recipients/s, peak RSS {rss} MiB, "
                  f"deliveries {sum(v for k, v in sizes_on_disk.items() if k.startswith('deliveries')) / 1e6:.1f} MB")
    with open(os.path.join(out, "reports.json"), "w") as f:
        json.dump(results, f, indent=2)

if __name__ == "__main__":
    main()
