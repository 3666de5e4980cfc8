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
INSTRUCTIONS_EXPERIMENT (docs/experiments.md) runs the plain job first, then the same audience with
an `experiment:` section in place of push.template, on the same build and stand-in, and reports both
and the difference (bench-out/instructions-experiment-MODE.json; profiles callgrind.MODE.ROWS.out):
- two-variants: variants a (the plain job's template) and b (a template of the same shape and the
  same rendered size, other text), no test_share, no holdout: every recipient is sent its arm's
  payload, so the figure compares per push like for like (issue 43's budget: within +5 %);
- test-holdout: test_share 20 %, holdout 5 %, no winner: a fifth of the rows are sent, 5 % are held
  out, and the rest wait for the winner with both variants' payloads stored; the figure is per
  audience row read, beside the plain job's (where every row read is a push).
INSTRUCTIONS_APPS=three (docs/many-apps.md) runs the plain job first, then the same audience with an
`app` column sending for three apps (`apns.apps`): acme and acme-ipad under one team key (one pool),
partner under another (a second pool), rows spread over them in turn; same build, same stand-in,
and reports both and the difference (bench-out/instructions-apps-three.json; issue 44's budget: a
three-app campaign within +5 % of the one-app job per push).
Writes bench-out/instructions.json. Skips (exit 0, with a message) without valgrind or nginx-light.
"""
import gzip, json, os, re, shutil, subprocess, sys

import standin_bench as sb

ROWS = (50, 5000)
PUSH = os.environ.get("INSTRUCTIONS_PUSH", "alert")
EXPERIMENT = os.environ.get("INSTRUCTIONS_EXPERIMENT", "")

# Variant b: the plain template's shape, keys and rendered length, other text (same title, body
# and thread-id lengths), so a push of either arm is the same request size as a plain one.
VARIANT_B = sb.TEMPLATE.replace("Your weekly summary is ready", "Your weekly roundup is here!") \
    .replace("you have {{unread}} unread messages. Tap to see what you missed.",
             "there are {{unread}} new messages for you. Open to catch up now.") \
    .replace("weekly-digest", "weekly-update")
assert VARIANT_B != sb.TEMPLATE and len(VARIANT_B) == len(sb.TEMPLATE)
EXPERIMENTS = {"two-variants": "", "test-holdout": "  test_share: 20%\n  holdout: 5%\n"}
APPS = os.environ.get("INSTRUCTIONS_APPS", "")
# Three apps over two team keys (the stand-in checks neither the JWT nor the topic).
THREE_APPS = ["acme", "acme-ipad", "partner"]


def as_background(job):
    """The job's push made a background push under the silent-push budget (see the usage)."""
    with open(job) as f:
        text = f.read()
    head, rest = text.split("push:\n", 1)
    tail = rest[rest.index("throttle:"):]
    tail = tail.replace("throttle: { rate: 0 }", "throttle: { rate: 0, silent_rate: 0, silent_per_device_per_hour: 100 }")
    with open(job, "w") as f:
        f.write(head + "push:\n  type: background\n  template: { aps: { content-available: 1 }, sync: \"{{first_name}}\" }\n" + tail)


def as_experiment(job, shape):
    """push.template moved into `experiment.variants` a (the same template) and b (VARIANT_B)."""
    with open(job) as f:
        text = f.read()
    assert sb.TEMPLATE in text
    def variant(name, template):
        # sb.TEMPLATE is "  template:" with its body under it: indent it under the list item.
        body = "".join("    " + line + "\n" for line in template.rstrip("\n").split("\n"))
        return f"    - name: {name}\n" + body
    block = "experiment:\n" + EXPERIMENTS[shape] + "  variants:\n" + variant("a", sb.TEMPLATE) + variant("b", VARIANT_B)
    text = text.replace(sb.TEMPLATE, "")
    text = text.replace("throttle:", block + "throttle:", 1)
    with open(job, "w") as f:
        f.write(text)


def as_three_apps(job, rows):
    """The job for three apps (see the usage), its audience the plain one's with an `app` column."""
    with open(job) as f:
        text = f.read()
    plain = re.search(r"files: \[([^\]]+)\]", text).group(1)
    audience = plain.replace(".csv.gz", ".apps.csv.gz")
    with gzip.open(plain, "rt") as src, gzip.open(audience, "wt") as dst:
        for i, line in enumerate(src):
            line = line.rstrip("\n")
            dst.write(line + (",app" if i == 0 else "," + THREE_APPS[i % 3]) + "\n")
    auth = re.search(r"  auth: \{ team_id: (\w+), key_id: (\w+), key_file: ([^ ]+) \}\n", text)
    team, key, key_file = auth.groups()
    apps = (f"  apps:\n"
            f"    - {{ name: acme, topic: {sb.TOPIC}, auth: {{ team_id: {team}, key_id: {key}, key_file: {key_file} }} }}\n"
            f"    - {{ name: acme-ipad, topic: {sb.TOPIC}.ipad, auth: {{ team_id: {team}, key_id: {key}, key_file: {key_file} }} }}\n"
            f"    - {{ name: partner, topic: com.partner.app, auth: {{ team_id: TEAM654321, key_id: KEY6543210, key_file: {key_file} }} }}\n")
    text = text.replace(f"  topic: {sb.TOPIC}\n", "").replace(auth.group(0), apps)
    text = text.replace(f"files: [{plain}]", f"files: [{audience}], app_field: app")
    with open(job, "w") as f:
        f.write(text)


def summary_counts(name):
    with open(os.path.join(sb.WORK, "reports", name, "summary.json")) as f:
        return json.load(f)["counts"]


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
    if EXPERIMENT and EXPERIMENT not in EXPERIMENTS:
        sys.exit(f"instructions: INSTRUCTIONS_EXPERIMENT={EXPERIMENT}: expected one of {', '.join(EXPERIMENTS)}")
    if APPS and APPS != "three":
        sys.exit(f"instructions: INSTRUCTIONS_APPS={APPS}: expected three")
    if APPS and (EXPERIMENT or PUSH != "alert"):
        sys.exit("instructions: INSTRUCTIONS_APPS goes with plain alert pushes only")
    if EXPERIMENT and PUSH != "alert":
        sys.exit("instructions: INSTRUCTIONS_EXPERIMENT goes with alert pushes only (unset INSTRUCTIONS_PUSH)")
    work = os.path.join(sb.OUT, "instructions")
    os.makedirs(work, exist_ok=True)
    for d in ("jobs", "state", "reports", "data"):
        os.makedirs(os.path.join(sb.WORK, d), exist_ok=True)
    stripped = os.path.join(work, "herald-stripped")
    subprocess.run(["strip", "-g", "-o", stripped, herald], check=True)
    subprocess.run([os.path.join(sb.STANDIN, "gen_certs.sh")], check=True, capture_output=True)
    # An experiment is measured beside the plain job, same build, same stand-in, back to back.
    shapes = ["plain", EXPERIMENT] if EXPERIMENT else ["plain", "three-apps"] if APPS else ["plain"]
    si = sb.StandIn(sb.free_port())
    si.stop()
    si.start()
    results = {}
    try:
        for shape in shapes:
            counts, sent = {}, {}
            for rows in ROWS:
                audience = os.path.join(sb.WORK, "data", f"audience_{rows}.csv.gz")
                sb.gen_audience(audience, rows)
                name = f"instructions-{rows}" if shape == "plain" else f"instructions-{shape}-{rows}"
                job = sb.write_job(name, audience, si, 1, 200)
                if PUSH == "background":
                    as_background(job)
                if shape == "three-apps":
                    as_three_apps(job, rows)
                elif shape != "plain":
                    as_experiment(job, shape)
                profile = f"callgrind.{rows}.out" if shape == "plain" else f"callgrind.{shape}.{rows}.out"
                counts[rows] = count(stripped, job, name, os.path.join(work, profile))
                sent[rows] = summary_counts(name)
                print(f"instructions: {shape}, {rows:,} recipients: {counts[rows]:,} instructions, "
                      f"{sent[rows].get('sent', 0):,} sent", flush=True)
            results[shape] = (counts, sent)
    finally:
        si.stop()
    small, large = ROWS
    figures = {}
    for shape, (counts, sent) in results.items():
        per_row = (counts[large] - counts[small]) / (large - small)
        figures[shape] = {"counts": {str(k): v for k, v in counts.items()}, "instructions_per_push": round(per_row),
                          "startup_instructions": counts[small],
                          "summary_counts": {str(k): v for k, v in sent.items()}}
        if shape == "test-holdout":
            # Not every row read is a push here: the figure is per row read.
            figures[shape]["instructions_per_row_read"] = figures[shape].pop("instructions_per_push")
    if APPS:
        base = figures["plain"]["instructions_per_push"]
        apps = figures["three-apps"]
        apps["difference_percent"] = round(100 * (apps["instructions_per_push"] - base) / base, 2)
        name = "instructions-apps-three.json"
        summary = (f"instructions: three apps {apps['instructions_per_push']:,} per push against the one-app job's {base:,}: "
                   f"{apps['difference_percent']:+.2f} %")
    elif EXPERIMENT:
        base = figures["plain"]["instructions_per_push"]
        exp = figures[EXPERIMENT]
        key = "instructions_per_row_read" if EXPERIMENT == "test-holdout" else "instructions_per_push"
        exp["difference_percent"] = round(100 * (exp[key] - base) / base, 2)
        name = f"instructions-experiment-{EXPERIMENT}.json"
        unit = "per row read" if EXPERIMENT == "test-holdout" else "per push"
        summary = (f"instructions: {EXPERIMENT} {exp[key]:,} {unit} against the plain job's {base:,} per push: "
                   f"{exp['difference_percent']:+.2f} %")
    else:
        figures = figures["plain"]
        name = "instructions.json" if PUSH == "alert" else f"instructions-{PUSH}.json"
        summary = f"instructions: {figures['instructions_per_push']:,} per push end to end"
    with open(os.path.join(sb.OUT, name), "w") as f:
        json.dump(figures, f, indent=2)
    print(f"{summary} (callgrind, {small:,} vs {large:,} recipients); profiles in {work}, "
          f"figures in {os.path.join(sb.OUT, name)}")

if __name__ == "__main__":
    main()
