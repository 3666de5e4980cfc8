#!/usr/bin/env python3
"""Audience reading benchmark (part of `make bench`): parse-only throughput of a gzip CSV and NDJSON
audience against `zcat FILE | wc -l` on the same file in the same run, on one core, and peak RSS
of 1M-row and 5M-row files. Writes bench-out/audience.json.

Usage: audience_bench.py HERALD_BINARY [--rows 1000000] [--big-rows 5000000] [--repeat 3]

Parse-only is `herald validate JOB --parse-only` (a hidden flag: inflate, parse, normalize tokens;
no rendering, no duplicate count), so the figure is the shipped binary's. The full prescan
(`herald validate JOB`: also rendering and the on-disk distinct-token count) is timed too.
Everything runs under `taskset -c 0`: the inflate-ahead thread shares the one core with the parser,
as zcat shares it with wc. Generated files are kept in bench-out/audience/ between runs.
Targets (issue 4): CSV >= 0.8x zcat, NDJSON >= 0.5x zcat, peak RSS of 5M within 10% of 1M.
"""
import json, os, resource, shutil, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "bench-out")
WORK = os.path.join(OUT, "audience")
PIN = ["taskset", "-c", "0"] if shutil.which("taskset") else []


def option(args, name, default):
    return int(args[args.index(name) + 1]) if name in args else default


def generate(name, rows, fmt):
    path = os.path.join(WORK, name)
    if not os.path.exists(path):
        print(f"generating {name} ({rows:,} rows, {fmt}) ...", flush=True)
        subprocess.run([sys.executable, os.path.join(HERE, "gen_audience.py"), path + ".tmp.gz", str(rows),
                        "--format", fmt, "--columns", "5"], check=True)
        os.rename(path + ".tmp.gz", path)
    return path


def write_job(name, audience):
    job = os.path.join(WORK, name + ".yaml")
    with open(job, "w") as f:
        f.write(f"""campaign: {name}
audience: {{ files: [{os.path.basename(audience)}], locale_field: locale, id_field: id }}
apns: {{ endpoint: simulator, topic: com.example.app }}
push:
  template: {{ aps: {{ alert: {{ title: "Hi {{{{first_name|there}}}}", body: "News from {{{{city}}}}" }} }} }}
""")
    return job


def timed(cmd):
    """Wall seconds, CPU seconds (the process and its children) and stdout of one run."""
    cpu_time = lambda: (lambda u: u.ru_utime + u.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
    cpu_before = cpu_time()
    started = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out, err = p.communicate()
    elapsed = time.monotonic() - started
    cpu = cpu_time() - cpu_before
    if p.returncode not in (0, 5):   # 5: over max_invalid_rows, still a full read
        sys.exit(f"bench: {' '.join(cmd)} exited {p.returncode}: {err.decode()}")
    return elapsed, cpu, out.decode()


def best_of_interleaved(commands, repeat):
    """Runs the commands in turn `repeat` times (so that both sides of a ratio meet the same
    machine load) and keeps each one's fastest run."""
    results = [[] for _ in commands]
    for _ in range(repeat):
        for i, cmd in enumerate(commands):
            results[i].append(timed(cmd))
    return [min(r, key=lambda x: x[0]) for r in results]


def herald_peak_rss(cmd):
    """Peak RSS of one herald process (KiB), measured with wait4 on that process alone."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode not in (0, 5):
        sys.exit(f"bench: {' '.join(cmd)} exited {p.returncode}")
    return usage.ru_maxrss, json.loads(out)


def main():
    args = sys.argv[1:]
    herald = os.path.abspath(args[0])
    rows = option(args, "--rows", 1_000_000)
    big_rows = option(args, "--big-rows", 5_000_000)
    repeat = option(args, "--repeat", 3)
    os.makedirs(WORK, exist_ok=True)
    tag = lambda n: f"{n // 1_000_000}m" if n % 1_000_000 == 0 else str(n)
    files = {
        "csv": generate(f"audience-{tag(rows)}.csv.gz", rows, "csv"),
        "ndjson": generate(f"audience-{tag(rows)}.ndjson.gz", rows, "ndjson"),
        "csv_big": generate(f"audience-{tag(big_rows)}.csv.gz", big_rows, "csv"),
    }
    figures = {"rows": rows, "big_rows": big_rows, "pinned_to_one_core": bool(PIN), "formats": {}}
    print(f"audience reading, {rows:,} rows, one core ({'taskset -c 0' if PIN else 'NOT pinned: taskset missing'}), best of {repeat}")
    for fmt in ["csv", "ndjson"]:
        path = files[fmt]
        raw = int(subprocess.run(["sh", "-c", f"zcat '{path}' | wc -c"], capture_output=True, text=True, check=True).stdout)
        job = write_job(f"bench-{fmt}", path)
        (zcat_s, zcat_cpu, zcat_out), (parse_s, parse_cpu, parse_out) = best_of_interleaved(
            [PIN + ["sh", "-c", f"zcat '{path}' | wc -l"], PIN + [herald, "validate", job, "--parse-only", "--json"]], repeat)
        lines = int(zcat_out.strip())
        parsed = json.loads(parse_out)
        if parsed["rows"] != rows:
            sys.exit(f"bench: parse-only read {parsed['rows']} rows of {rows}")
        scan_s, _, scan_out = timed(PIN + [herald, "validate", job, "--json"])
        scan = json.loads(scan_out)
        free_s, _, _ = timed([herald, "validate", job, "--json"])
        ratio = zcat_s / parse_s
        target = 0.8 if fmt == "csv" else 0.5
        entry = {
            "bytes_per_row": round(raw / rows, 1), "compressed_bytes": os.path.getsize(path),
            "zcat_wc_l_seconds": round(zcat_s, 3), "zcat_lines_per_second": round(lines / zcat_s),
            "parse_only_seconds": round(parse_s, 3), "parse_only_rows_per_second": round(rows / parse_s),
            "ratio_to_zcat": round(ratio, 3), "target_ratio": target, "meets_target": ratio >= target,
            "zcat_cpu_seconds": round(zcat_cpu, 3), "parse_only_cpu_seconds": round(parse_cpu, 3),
            "full_scan_seconds": round(scan_s, 3), "full_scan_rows_per_second": round(rows / scan_s),
            "full_scan_two_cores_seconds": round(free_s, 3),
            "full_scan_distinct": scan["distinct"],
        }
        figures["formats"][fmt] = entry
        print(f"  {fmt:<6} {entry['bytes_per_row']:.0f} B/row  zcat|wc -l {lines / zcat_s:>10,.0f} lines/s ({zcat_s:.2f} s)   "
              f"parse-only {rows / parse_s:>10,.0f} rows/s ({parse_s:.2f} s)   ratio {ratio:.2f}x "
              f"(target >= {target}x: {'ok' if ratio >= target else 'MISSED'})")
        print(f"         full scan (parse + render + distinct count on disk) {rows / scan_s:>10,.0f} rows/s ({scan_s:.2f} s; "
              f"{free_s:.2f} s unpinned, inflating on the second core)")

    # Peak RSS must not grow with the file: the same job shape on 1M and 5M rows.
    rss = {}
    for label, path, n in [("1m", files["csv"], rows), ("5m", files["csv_big"], big_rows)]:
        job = write_job(f"bench-rss-{label}", path)
        parse_kib, parsed = herald_peak_rss(PIN + [herald, "validate", job, "--parse-only", "--json"])
        full_kib, full = herald_peak_rss(PIN + [herald, "validate", job, "--json"])
        assert parsed["rows"] == n and full["rows"] == n, (parsed["rows"], full["rows"], n)
        rss[label] = {"rows": n, "parse_only_peak_rss_mib": round(parse_kib / 1024, 1),
                      "full_scan_peak_rss_mib": round(full_kib / 1024, 1), "full_scan_seconds": full["seconds"]}
    figures["peak_rss"] = rss
    for kind in ["parse_only", "full_scan"]:
        a, b = rss["1m"][f"{kind}_peak_rss_mib"], rss["5m"][f"{kind}_peak_rss_mib"]
        growth = (b - a) / a
        figures["peak_rss"][f"{kind}_growth"] = round(growth, 3)
        print(f"  peak RSS {kind.replace('_', '-'):<10} {rows:,} rows {a:.1f} MiB, {big_rows:,} rows {b:.1f} MiB "
              f"({growth:+.1%}; target within 10%: {'ok' if abs(growth) <= 0.10 else 'MISSED'})")
    with open(os.path.join(OUT, "audience.json"), "w") as f:
        json.dump(figures, f, indent=2)
    print(f"figures written to {os.path.join(OUT, 'audience.json')}")


if __name__ == "__main__":
    main()
