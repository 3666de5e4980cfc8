#!/usr/bin/env python3
"""Instructions per push, end to end, counted by valgrind (callgrind) against the nginx stand-in.

Wall-clock figures on these shared machines drift by 20 % within minutes, so a change worth 2 %
cannot be seen in them. Instruction counts are repeatable to about 0.2 %: this runs `herald run`
under `valgrind --tool=callgrind` on a 50-recipient and a 5,000-recipient campaign (same job shape
as standin_bench.py) and reports (I(5,000) - I(50)) / 4,950, i.e. the cost of one more push with
reading, rendering, checkpoints, HTTP/2, TLS and reports included, start-up excluded.

valgrind serialises threads, so the batching per turn differs from a real run: the count
measures code paths, not scheduling. The Swift binary's debug info is more than valgrind's reader
takes, so a stripped copy (strip -g) is run. For a profile, open the .out files with
callgrind_annotate (nghttp2's and OpenSSL's internal functions show as addresses: Debian strips them).

Usage: instructions_bench.py [HERALD_BINARY]   (default .build/release/herald)
INSTRUCTIONS_PUSH=background runs the same audience as background pushes with the silent-push
budget on (high enough to admit all): every push takes its slot in herald-shared.sqlite's ledger,
so the figure includes the per-device budget's cost (bench-out/instructions-background.json).
Writes bench-out/instructions.json. Skips (exit 0, with a message) without valgrind or nginx-light.
"""
import json, os, re, shutil, subprocess, sys

import standin_bench as sb

ROWS = (50, 5000)
PUSH = os.environ.get("INSTRUCTIONS_PUSH", "alert")


def as_background(job):
    """The job's push made a background push under the silent-push budget (see the usage)."""
    with open(job) as f:
        text = f.read()
    head, rest = text.split("push:\n", 1)
    tail = rest[rest.index("throttle:"):]
    tail = tail.replace("throttle: { rate: 0 }", "throttle: { rate: 0, silent_rate: 0, silent_per_device_per_hour: 100 }")
    with open(job, "w") as f:
        f.write(head + "push:\n  type: background\n  template: { aps: { content-available: 1 }, sync: \"{{first_name}}\" }\n" + tail)


def count(herald, job, name, out):
    shutil.rmtree(os.path.join(sb.WORK, "state"), ignore_errors=True)
    shutil.rmtree(os.path.join(sb.WORK, "reports", name), ignore_errors=True)
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", herald, "run", job],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"instructions: herald run under valgrind exited {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    m = re.search(r"Collected : (\d+)", p.stderr)
    if not m:
        sys.exit(f"instructions: no instruction count in valgrind's output\n{p.stderr[-2000:]}")
    return int(m.group(1))


def main():
    herald = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(sb.ROOT, ".build/release/herald"))
    if not shutil.which("valgrind"):
        print("instructions bench skipped: valgrind not installed (apt-get install -y valgrind)")
        return
    if not (shutil.which("nginx") and os.path.exists("/usr/lib/nginx/modules/ngx_http_echo_module.so")):
        print("instructions bench skipped: nginx-light not installed")
        return
    if not os.path.exists(herald):
        sys.exit(f"instructions: {herald} not found (swift build -c release --product herald)")
    work = os.path.join(sb.OUT, "instructions")
    os.makedirs(work, exist_ok=True)
    for d in ("jobs", "state", "reports", "data"):
        os.makedirs(os.path.join(sb.WORK, d), exist_ok=True)
    stripped = os.path.join(work, "herald-stripped")
    subprocess.run(["strip", "-g", "-o", stripped, herald], check=True)
    subprocess.run([os.path.join(sb.STANDIN, "gen_certs.sh")], check=True, capture_output=True)
    si = sb.StandIn(sb.free_port())
    si.stop()
    si.start()
    try:
        counts = {}
        for rows in ROWS:
            audience = os.path.join(sb.WORK, "data", f"audience_{rows}.csv.gz")
            sb.gen_audience(audience, rows)
            name = f"instructions-{rows}"
            job = sb.write_job(name, audience, si, 1, 200)
            if PUSH == "background":
                as_background(job)
            counts[rows] = count(stripped, job, name, os.path.join(work, f"callgrind.{rows}.out"))
            print(f"instructions: {rows:,} recipients: {counts[rows]:,} instructions", flush=True)
    finally:
        si.stop()
    small, large = ROWS
    per_push = (counts[large] - counts[small]) / (large - small)
    figures = {"counts": {str(k): v for k, v in counts.items()}, "instructions_per_push": round(per_push),
               "startup_instructions": counts[small]}
    name = "instructions.json" if PUSH == "alert" else f"instructions-{PUSH}.json"
    with open(os.path.join(sb.OUT, name), "w") as f:
        json.dump(figures, f, indent=2)
    print(f"instructions: {per_push:,.0f} per push end to end (callgrind, {small:,} vs {large:,} recipients); "
          f"profiles in {work}, figures in {os.path.join(sb.OUT, name)}")


if __name__ == "__main__":
    main()
