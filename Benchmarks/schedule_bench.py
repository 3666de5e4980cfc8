#!/usr/bin/env python3
"""What a `schedule` costs: the same audience, spread over 400 time zones, with and without one.

The schedule used opens all day (local_time 00:00-24:00), so every recipient is due at once and the
send path is the same in both runs: what differs is reading each row's zone and working out its due
time (once per zone), and the two extra columns per recipient. Three figures, each with and without:
- reading rate: `herald validate` on the full audience (reads, renders, resolves zones; no state);
- end to end: `herald run` against the nginx stand-in (rate, peak RSS);
- instructions per push: callgrind, as instructions_bench.py counts them, here 5,500 vs 500 recipients so
  that both runs meet all 400 zones (a zone is looked up once per run: a fixed cost, not one per push).

Usage: schedule_bench.py [HERALD_BINARY]   (default .build/release/herald)
Environment: SCHEDULE_ROWS (default 1,000,000; the end-to-end run uses a fifth of it);
SCHEDULE_PARTS (default "validate,run,instructions").
Writes bench-out/schedule.json. Skips the stand-in parts without nginx-light, callgrind without valgrind.
"""
import json, os, random, shutil, subprocess, sys

import standin_bench as sb
import instructions_bench as ib


def zones(n=400):
    """n IANA Area/Location names from the system's tz database (herald's own rule: a '/' in the name)."""
    root = "/usr/share/zoneinfo"
    out = []
    for area in sorted(os.listdir(root)):
        if area in ("posix", "right", "Etc", "SystemV", "US", "Brazil", "Canada", "Chile", "Mexico") or not area[0].isupper():
            continue
        path = os.path.join(root, area)
        if not os.path.isdir(path):
            continue
        for name in sorted(os.listdir(path)):
            if os.path.isfile(os.path.join(path, name)):
                out.append(f"{area}/{name}")
    return out[:n]


def gen_audience(path, rows, tz):
    rnd = random.Random(rows)
    sb.write_gzip_once(path, "token,first_name,unread,user_id,tz",
                       (f"{sb.token(rnd, i)},Grace,{rnd.randrange(0, 40)},u_{i:010d},{tz[i % len(tz)]}" for i in range(rows)))


def job(name, audience, si, scheduled):
    path = sb.write_job(name, audience, si, 1, 200)
    if scheduled:
        text = open(path).read().replace("prescan: ", "timezone_field: tz, prescan: ")
        text += 'schedule: { local_time: { from: "00:00", to: "24:00" } }\n'
        open(path, "w").write(text)
    return path


def main():
    herald = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(sb.ROOT, ".build/release/herald"))
    if not os.path.exists(herald):
        sys.exit(f"schedule: {herald} not found (swift build -c release --product herald)")
    rows = int(os.environ.get("SCHEDULE_ROWS", "1000000"))
    for d in ("jobs", "state", "reports", "data"):
        os.makedirs(os.path.join(sb.WORK, d), exist_ok=True)
    tz = zones()
    figures = {"zones": len(tz), "rows": rows}
    parts = os.environ.get("SCHEDULE_PARTS", "validate,run,instructions").split(",")
    instruction_rows = (500, 5500)
    have_standin = shutil.which("nginx") and os.path.exists("/usr/lib/nginx/modules/ngx_http_echo_module.so")
    si = sb.StandIn(sb.free_port())
    if have_standin:
        subprocess.run([os.path.join(sb.STANDIN, "gen_certs.sh")], check=True, capture_output=True)
        si.stop()
        si.start()
    try:
        big = os.path.join(sb.WORK, "data", f"schedule_{rows}.csv.gz")
        if "validate" in parts:
            gen_audience(big, rows, tz)
        for scheduled in ((False, True) if "validate" in parts else ()):
            key = "schedule" if scheduled else "none"
            j = job(f"schedule-validate-{key}", big, si, scheduled)
            wall, rc, rss, out, err = sb.run_measured([herald, "validate", j])
            if rc != 0:
                sys.exit(f"schedule: herald validate exited {rc}\n{out}\n{err}")
            figures[f"validate_{key}"] = {"rows_per_second": round(rows / wall), "peak_rss_mib": round(rss, 1) if rss else None}
            print(f"schedule: validate {key}: {rows / wall:,.0f} rows/s, peak RSS {rss:.1f} MiB", flush=True)
        if have_standin:
            part = rows // 5
            small = os.path.join(sb.WORK, "data", f"schedule_{part}.csv.gz")
            if "run" in parts:
                gen_audience(small, part, tz)
            for scheduled in ((False, True) if "run" in parts else ()):
                key = "schedule" if scheduled else "none"
                name = f"schedule-run-{key}"
                r = sb.run_herald(herald, job(name, small, si, scheduled), name)
                figures[f"run_{key}"] = {"recipients": r["recipients"], "rate": r["rate"], "peak_rss_mib": r["peak_rss_mib"]}
                print(f"schedule: run {key}: {r['recipients']:,} recipients at {r['rate']:,.0f}/s, peak RSS {r['peak_rss_mib']} MiB", flush=True)
            if shutil.which("valgrind") and "instructions" in parts:
                stripped = os.path.join(sb.OUT, "schedule-herald-stripped")
                subprocess.run(["strip", "-g", "-o", stripped, herald], check=True)
                for scheduled in (False, True):
                    key = "schedule" if scheduled else "none"
                    counts = {}
                    for n in instruction_rows:
                        audience = os.path.join(sb.WORK, "data", f"schedule_{n}.csv.gz")
                        gen_audience(audience, n, tz)
                        name = f"schedule-instr-{key}-{n}"
                        counts[n] = ib.count(stripped, job(name, audience, si, scheduled), name,
                                             os.path.join(sb.OUT, f"callgrind.schedule.{key}.{n}.out"))
                    lo, hi = instruction_rows
                    figures[f"instructions_{key}"] = round((counts[hi] - counts[lo]) / (hi - lo))
                    print(f"schedule: instructions per push {key}: {figures[f'instructions_{key}']:,}", flush=True)
    finally:
        if have_standin:
            si.stop()
    with open(os.path.join(sb.OUT, "schedule.json"), "w") as f:
        json.dump(figures, f, indent=2)
    print(f"schedule: figures in {os.path.join(sb.OUT, 'schedule.json')}")


if __name__ == "__main__":
    main()
