#!/usr/bin/env python3
"""Payload rendering throughput (`make bench`): builds the render-bench executable in release mode
and runs it on Apple's five example templates (samples/templates/example1-5.json, 3-4 placeholders
each) on one thread pinned to one core. The figure is payloads per second of that thread's CPU
time (other load on a shared machine lowers the wall-clock rate, also reported, not the figure).
Target: >= 1,000,000 payloads/s. Writes bench-out/render.json.

Usage: render_bench.py [SECONDS_PER_TEMPLATE]
"""
import json, os, shutil, subprocess, sys

def main():
    seconds = sys.argv[1] if len(sys.argv) > 1 else "1"
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    subprocess.run(["swift", "build", "-c", "release", "--product", "render-bench"], cwd=root, check=True,
                   stdout=subprocess.DEVNULL)
    binary = os.path.join(root, ".build", "release", "render-bench")
    # One core: the renderer is single-threaded; pinning keeps the figure from wandering between cores.
    command = [binary, "--templates", os.path.join(root, "samples", "templates"), "--seconds", seconds, "--json"]
    if shutil.which("taskset"):
        command = ["taskset", "-c", "0"] + command
    p = subprocess.run(command, cwd=root, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"render-bench exited {p.returncode}: {p.stderr}")
    figures = json.loads(p.stdout)
    for t in figures["templates"]:
        print(f"render {t['template']} ({t['bytes']} bytes): {t['payloads_per_cpu_second']:,} payloads per CPU second")
    rate = figures["all_five_payloads_per_cpu_second"]
    verdict = "meets" if rate >= figures["target"] else "BELOW"
    print(f"render all five, round robin: {rate:,} payloads per CPU second on one core ({verdict} the target of "
          f"{figures['target']:,}); {figures['all_five_payloads_per_wall_second']:,} per wall second on this machine now")
    out = os.path.join(root, "bench-out")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "render.json"), "w") as f:
        json.dump(figures, f, indent=2)

if __name__ == "__main__":
    main()
