#!/usr/bin/env python3
"""herald against the nginx stand-in APNs, beside curl, h2load and aioapns on the same server.

Starts Benchmarks/standin (nginx, TLS + HTTP/2, answers like APNs by token prefix) pinned to one
core, and runs every client pinned to the other, with the same request shape (POST, the same
~310-byte JSON, apns-topic/push-type/priority/id/collapse-id, an ES256 bearer token, 1 % of the
tokens "deadbeef…" answered 410):

- herald (release): `herald run` end to end on a generated 1M-recipient csv.gz campaign (read,
  render, SQLite checkpoints, send, reports), endpoint = the stand-in URL, ca_file = its CA,
  auth = a generated .p8 key; recipients/s = distinct recipients / wall time; peak RSS from GNU
  time (/usr/bin/time, package `time`; without it RSS is not reported).
- curl --parallel --parallel-max 100 --http2 (libcurl's own tool), PEER_REQUESTS requests.
- h2load (nghttp2's C load tool: the practical ceiling), 1 connection x 500 streams.
- aioapns (Python), in Benchmarks/.venv (pip); skipped with a message when PyPI is unreachable.

Each repeated REPS times (default 3); medians and the ratios herald/curl, herald/aioapns,
herald/h2load are printed and written to bench-out/standin.json. Also the accuracy of
throttle.rate over ~10 s (from the send timestamps in deliveries.csv), and with STANDIN_5M=1
herald's peak RSS on a 5M-recipient campaign (against 1M's).

Usage: standin_bench.py [HERALD_BINARY]   (default .build/release/herald)
Env: STANDIN_ROWS (1000000), PEER_REQUESTS (200000), AIOAPNS_REQUESTS (100000), REPS (3),
     HERALD_CONNECTIONS (1), HERALD_PRESCAN (true; false: send while reading), HERALD_STREAMS (200: on loopback 100-200 in flight is fastest, see the README), STANDIN_RATE (2000; 0 skips the rate check),
     STANDIN_5M (unset: skip the 5M run; REPS=0 STANDIN_RATE=0 STANDIN_5M=1 runs it alone, compared with
     the last bench-out/standin.json, into bench-out/standin-5m.json).
Skips (exit 0, with a message) when nginx-light or h2load is not installed.
"""
import gzip, json, os, random, re, shutil, socket, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "standin")
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "bench-out")
WORK = os.path.join(OUT, "standin")
SERVER_CPU, CLIENT_CPU = "1", "0"
TOPIC, KEY_ID, TEAM_ID = "com.example.app", "ABC123DEFG", "TEAM123456"
APNS_ID = "123e4567-e89b-12d3-a456-426614174000"
COLLAPSE = "herald:standin-bench"

# The peers' payload: what herald's template below renders for a typical row (same keys, ~ same size).
PAYLOAD = {"aps": {"alert": {"title": "Your weekly summary is ready",
                             "body": "Hi Alexandra, you have 12 unread messages. Tap to see what you missed."},
                   "badge": 12, "sound": "default", "thread-id": "weekly-digest", "mutable-content": 1},
           "campaign_id": "cmp_2026_11_21_weekly", "user_id": "u_0000123456", "deeplink": "myapp://inbox?src=push"}
TEMPLATE = """  template:
    aps:
      alert: { title: "Your weekly summary is ready", body: "Hi {{first_name}}, you have {{unread}} unread messages. Tap to see what you missed." }
      badge: "{{unread:int}}"
      sound: default
      thread-id: weekly-digest
      mutable-content: 1
    campaign_id: cmp_2026_11_21_weekly
    user_id: "{{user_id}}"
    deeplink: "myapp://inbox?src=push"
"""


def log(msg):
    print(f"standin: {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# User + system CPU seconds of the last run_measured command (GNU time), None without it.
LAST_CPU_SECONDS = None


def run_measured(cmd, env=None):
    """Runs cmd pinned to the client core: (wall seconds, exit code, peak RSS MiB, stdout, stderr).
    Peak RSS is GNU time's (%M): wait4's ru_maxrss from Python is wrong for small clients, since a
    vfork()ed child reports the parent's RSS until it execs."""
    started = time.monotonic()
    out_path = os.path.join(WORK, "last.stdout")
    err_path = os.path.join(WORK, "last.stderr")
    rss_path = os.path.join(WORK, "last.rss")
    timer = ["/usr/bin/time", "-f", "%U %S %M", "-o", rss_path] if os.path.exists("/usr/bin/time") else []
    with open(out_path, "wb") as o, open(err_path, "wb") as e:
        p = subprocess.run(timer + ["taskset", "-c", CLIENT_CPU] + cmd, stdout=o, stderr=e, env=env)
    wall = time.monotonic() - started
    rss = None
    if timer:
        with open(rss_path) as f:
            lines = f.read().split()
            rss = int(lines[-1]) / 1024 if lines and lines[-1].isdigit() else None
            global LAST_CPU_SECONDS
            LAST_CPU_SECONDS = float(lines[-3]) + float(lines[-2]) if len(lines) >= 3 else None
    with open(out_path, "rb") as o, open(err_path, "rb") as e:
        return wall, p.returncode, rss, o.read().decode(errors="replace"), e.read().decode(errors="replace")


# ---------- the stand-in ----------

class StandIn:
    def __init__(self, port):
        self.port = port
        self.url = f"https://127.0.0.1:{port}"
        self.ca = os.path.join(STANDIN, "certs", "ca.pem")
        self.key = os.path.join(STANDIN, "certs", f"AuthKey_{KEY_ID}.p8")

    def start(self, goaway_after=None, latency_ms=0):
        cmd = [os.path.join(STANDIN, "start.sh"), "--port", str(self.port), "--cpu", SERVER_CPU]
        if goaway_after:
            cmd += ["--goaway-after", str(goaway_after)]
        if latency_ms:
            cmd += ["--latency-ms", str(latency_ms)]
        subprocess.run(cmd, check=True, capture_output=True)

    def stop(self):
        subprocess.run([os.path.join(STANDIN, "stop.sh")], capture_output=True)


# ---------- inputs ----------

def b64url(data):
    import base64
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def der_to_raw(der):
    """ECDSA-Sig-Value (DER) to the 64-byte R||S a JWT carries."""
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    out = b""
    for _ in range(2):
        n = der[i + 1]
        out += der[i + 2:i + 2 + n].lstrip(b"\0").rjust(32, b"\0")
        i += 2 + n
    return out


def make_jwt(p8):
    signing_input = b64url(json.dumps({"alg": "ES256", "kid": KEY_ID}, separators=(",", ":")).encode()) + "." + \
        b64url(json.dumps({"iss": TEAM_ID, "iat": int(time.time())}, separators=(",", ":")).encode())
    der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", p8], input=signing_input.encode(),
                         check=True, capture_output=True).stdout
    return signing_input + "." + b64url(der_to_raw(der))


def token(rnd, i):
    t = "%064x" % rnd.getrandbits(256)
    return "deadbeef" + t[8:] if i % 100 == 0 else t


def write_gzip_once(path, header, lines):
    """A generated audience, gzipped as its lines come (flat memory), under a temporary name then
    renamed; kept for later runs (nothing is written when `path` exists)."""
    if os.path.exists(path):
        return
    tmp = path + ".tmp"
    with gzip.open(tmp, "wt", encoding="utf-8", compresslevel=1, newline="") as f:
        f.write(header + "\n")
        for line in lines:
            f.write(line + "\n")
    os.replace(tmp, path)


def gen_audience(path, rows):
    """token,first_name,unread,user_id; 1 % deadbeef (410)."""
    rnd = random.Random(rows)
    names = ["Alexandra", "Ben", "José", "Zoë", "Søren", "Priya", "Ahmed", "Grace"]
    write_gzip_once(path, "token,first_name,unread,user_id",
                    (f"{token(rnd, i)},{rnd.choice(names)},{rnd.randrange(0, 40)},u_{i:010d}" for i in range(rows)))


def write_job(name, audience, si, connections, streams, rate=0):
    job = os.path.join(WORK, "jobs", name + ".yaml")
    with open(job, "w") as f:
        f.write(f"""campaign: {name}
audience: {{ files: [{audience}], prescan: {os.environ.get("HERALD_PRESCAN", "true")} }}
apns:
  endpoint: {si.url}
  ca_file: {si.ca}
  topic: {TOPIC}
  auth: {{ team_id: {TEAM_ID}, key_id: {KEY_ID}, key_file: {si.key} }}
  connections: {connections}
  streams_per_connection: {streams}
push:
  type: alert
  priority: 10
  collapse_id: "{COLLAPSE}"
{TEMPLATE}throttle: {{ rate: {rate} }}
state: {WORK}/state/{name}.sqlite
reports: {WORK}/reports/{name}
""")
    return job


# ---------- clients ----------

def run_herald(herald, job, name):
    shutil.rmtree(os.path.join(WORK, "reports", name), ignore_errors=True)
    # The whole state directory: herald-shared.sqlite would otherwise carry the suppression list
    # (the 1 % 410 tokens of the previous repetition) into this one, which then sends 1 % fewer.
    shutil.rmtree(os.path.join(WORK, "state"), ignore_errors=True)
    wall, rc, rss, out, err = run_measured([herald, "run", job])
    if rc != 0:
        sys.exit(f"standin: herald run exited {rc}\n{out}\n{err}")
    with open(os.path.join(WORK, "reports", name, "summary.json")) as f:
        summary = json.load(f)
    c = summary["counts"]
    return {"recipients": c["distinct"], "sent": c["sent"], "failed": c["failed"], "wall_seconds": round(wall, 2),
            "rate": round(c["distinct"] / wall, 1), "peak_rss_mib": round(rss, 1) if rss else None, "by_reason": summary.get("by_reason", {}),
            # Its core's share spent on herald: near 1.0 means CPU-bound, lower means waiting (disk, network, scheduling).
            "cpu_seconds": round(LAST_CPU_SECONDS, 2) if LAST_CPU_SECONDS else None,
            "busy": round(LAST_CPU_SECONDS / wall, 2) if LAST_CPU_SECONDS else None}


def write_curl_config(path, si, jwt, payload, n):
    rnd = random.Random(7)
    with open(path, "w") as f:
        f.write("http2\nsilent\nshow-error\n")
        f.write(f'cacert = "{si.ca}"\ndata-binary = "@{payload}"\n')
        for h in (f"authorization: bearer {jwt}", f"apns-topic: {TOPIC}", "apns-push-type: alert", "apns-priority: 10",
                  f"apns-id: {APNS_ID}", f"apns-collapse-id: {COLLAPSE}", "content-type: application/json"):
            f.write(f'header = "{h}"\n')
        f.write('write-out = "%{http_code} %{num_connects}\\n"\n')
        for i in range(n):
            f.write(f'url = "{si.url}/3/device/{token(rnd, i)}"\noutput = "/dev/null"\n')


def run_curl(config, n):
    wall, rc, rss, out, err = run_measured(["curl", "--parallel", "--parallel-max", "100", "-K", config])
    if rc != 0:
        return {"error": f"curl exited {rc}: {err.strip()[:200]}"}
    lines = [l.split() for l in out.splitlines() if l.strip()]
    statuses = {}
    for code, _ in lines:
        statuses[code] = statuses.get(code, 0) + 1
    return {"requests": n, "wall_seconds": round(wall, 2), "rate": round(n / wall, 1), "peak_rss_mib": round(rss, 1) if rss else None,
            "statuses": statuses, "connections": sum(int(c) for _, c in lines)}


def run_h2load(si, jwt, payload, uris, n, connections=1, streams=500):
    cmd = ["h2load", "-n", str(n), "-c", str(connections), "-m", str(streams), "-t", "1", "-d", payload, "-i", uris,
           "-H", f"authorization: bearer {jwt}", "-H", f"apns-topic: {TOPIC}", "-H", "apns-push-type: alert",
           "-H", "apns-priority: 10", "-H", f"apns-id: {APNS_ID}", "-H", f"apns-collapse-id: {COLLAPSE}",
           "-H", "content-type: application/json"]
    wall, rc, rss, out, err = run_measured(cmd)
    m = re.search(r"finished in ([\d.]+)(m?s), ([\d.]+) req/s", out)
    if rc != 0 or not m:
        return {"error": f"h2load exited {rc}: {(out + err).strip()[-300:]}"}
    status = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
    seconds = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
    return {"requests": n, "seconds": round(seconds, 3), "rate": float(m.group(3)), "peak_rss_mib": round(rss, 1) if rss else None,
            "status_2xx": int(status.group(1)), "status_4xx": int(status.group(3))}


def aioapns_python():
    """Benchmarks/.venv with aioapns, made on first use; None (and a message) when pip cannot get it."""
    venv = os.path.join(HERE, ".venv")
    py = os.path.join(venv, "bin", "python")
    if os.path.exists(py) and subprocess.run([py, "-c", "import aioapns"], capture_output=True).returncode == 0:
        return py
    if not os.path.exists(py):
        if subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True).returncode != 0:
            log("aioapns skipped: python3 -m venv failed (apt-get install python3-venv)")
            return None
    p = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "aioapns"], capture_output=True, text=True)
    if p.returncode != 0:
        log(f"aioapns skipped: pip install aioapns failed (PyPI unreachable?): {p.stderr.strip().splitlines()[-1:]}")
        return None
    return py


def run_aioapns(py, si, payload, n):
    wall, rc, rss, out, err = run_measured([py, os.path.join(STANDIN, "aioapns_send.py"), "--url", si.url, "--ca", si.ca,
                                            "--key", si.key, "--payload", payload, "-n", str(n), "--inflight", "1000"])
    if rc != 0:
        return {"error": f"aioapns exited {rc}: {err.strip()[-300:]}"}
    r = json.loads(out.strip().splitlines()[-1])
    r["peak_rss_mib"] = round(rss, 1) if rss else None
    return r


def rate_accuracy(herald, si, audience_rows_path, rate):
    """throttle.rate over ~10 s: achieved sends/s between the first and the last send timestamp."""
    name = f"standin-rate-{rate}"
    job = write_job(name, audience_rows_path, si, 1, 500, rate=rate)
    r = run_herald(herald, job, name)
    import csv
    stamps = []
    with open(os.path.join(WORK, "reports", name, "deliveries.csv"), newline="") as f:
        for row in csv.DictReader(f):
            if row["last_attempt_at"]:
                stamps.append(row["last_attempt_at"])
    from datetime import datetime
    times = sorted(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() for s in stamps)
    first = sum(1 for t in times if t == times[0])   # answers committed with the first batch
    span = times[-1] - times[0]
    achieved = (len(times) - first) / span if span > 0 else None
    return {"target": rate, "recipients": len(times), "span_seconds": round(span, 2),
            "achieved": round(achieved, 1) if achieved else None,
            "error_percent": round((achieved / rate - 1) * 100, 1) if achieved else None, "herald": r}


def median(runs, key="rate"):
    values = [r[key] for r in runs if key in r]
    return round(statistics.median(values), 1) if values else None


def main():
    herald = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build/release/herald"))
    missing = [what for what, ok in [
        ("nginx-light (nginx + echo module)", shutil.which("nginx") and os.path.exists("/usr/lib/nginx/modules/ngx_http_echo_module.so")),
        ("h2load (nghttp2-client)", shutil.which("h2load")), ("openssl", shutil.which("openssl")),
        ("taskset (util-linux)", shutil.which("taskset"))] if not ok]
    if missing:
        print(f"standin bench skipped: {', '.join(missing)} not installed (apt-get install -y nginx-light nghttp2-client)")
        return
    if not os.path.exists(herald):
        sys.exit(f"standin: {herald} not found (swift build -c release --product herald)")
    rows = int(os.environ.get("STANDIN_ROWS", "1000000"))
    peer_n = int(os.environ.get("PEER_REQUESTS", "200000"))
    aio_n = int(os.environ.get("AIOAPNS_REQUESTS", "100000"))
    reps = int(os.environ.get("REPS", "3"))
    connections = int(os.environ.get("HERALD_CONNECTIONS", "1"))
    streams = int(os.environ.get("HERALD_STREAMS", "200"))
    rate = int(os.environ.get("STANDIN_RATE", "2000"))
    for d in ("jobs", "state", "reports", "data"):
        os.makedirs(os.path.join(WORK, d), exist_ok=True)
    subprocess.run([os.path.join(STANDIN, "gen_certs.sh")], check=True, capture_output=True)
    si = StandIn(free_port())
    si.stop()

    data = os.path.join(WORK, "data")
    audience = os.path.join(data, f"audience_{rows}.csv.gz")
    log(f"generating {rows:,}-recipient audience {audience}")
    gen_audience(audience, rows)
    payload = os.path.join(data, "payload.json")
    with open(payload, "w") as f:
        json.dump(PAYLOAD, f, separators=(",", ":"))
    uris = os.path.join(data, "h2load_uris.txt")
    rnd = random.Random(3)
    with open(uris, "w") as f:
        for i in range(20000):
            f.write(f"{si.url}/3/device/{token(rnd, i)}\n")
    jwt = make_jwt(si.key)
    curl_cfg = os.path.join(data, f"curl_{peer_n}.cfg")
    if shutil.which("curl"):
        write_curl_config(curl_cfg, si, jwt, payload, peer_n)
    py = aioapns_python()
    job = write_job("standin-1m", audience, si, connections, streams)

    runs = {"herald": [], "curl": [], "h2load": [], "aioapns": []}
    try:
        for rep in range(1, reps + 1):
            si.start()
            r = run_herald(herald, job, "standin-1m")
            runs["herald"].append(r)
            log(f"rep {rep}: herald {r['recipients']:,} recipients in {r['wall_seconds']} s = {r['rate']:,.0f}/s, "
                f"peak RSS {r['peak_rss_mib']} MiB ({r['sent']:,} sent, {r['failed']:,} failed), core busy {r['busy']}")
            if shutil.which("curl"):
                r = run_curl(curl_cfg, peer_n)
                runs["curl"].append(r)
                log(f"rep {rep}: curl --parallel-max 100 {r.get('rate', r.get('error'))}/s {r.get('statuses', '')} "
                    f"connections {r.get('connections', '?')}")
            r = run_h2load(si, jwt, payload, uris, peer_n)
            runs["h2load"].append(r)
            log(f"rep {rep}: h2load 1x500 {r.get('rate', r.get('error'))}/s")
            if py:
                r = run_aioapns(py, si, payload, aio_n)
                runs["aioapns"].append(r)
                log(f"rep {rep}: aioapns {r.get('rate', r.get('error'))}/s {r.get('statuses', '')}")
            si.stop()

        figures = {"rows": rows, "peer_requests": peer_n, "aioapns_requests": aio_n, "repetitions": reps,
                   "herald_connections": connections, "herald_streams": streams,
                   "load_average": os.getloadavg(), "runs": runs}
        med = {k: median(v) for k, v in runs.items()}
        figures["median_rate"] = med
        figures["herald_peak_rss_mib_1m"] = max((r["peak_rss_mib"] for r in runs["herald"] if r.get("peak_rss_mib")), default=None)
        ratios = {}
        for peer in ("curl", "aioapns", "h2load"):
            if med["herald"] and med.get(peer):
                ratios[f"herald/{peer}"] = round(med["herald"] / med[peer], 2)
        figures["ratios"] = ratios

        if rate > 0:
            si.start()
            small = os.path.join(data, f"audience_{rate * 10}.csv.gz")
            gen_audience(small, rate * 10)
            figures["rate_accuracy"] = rate_accuracy(herald, si, small, rate)
            ra = figures["rate_accuracy"]
            log(f"throttle.rate {rate}/s over {ra['span_seconds']} s: achieved {ra['achieved']}/s ({ra['error_percent']:+} %)")
            si.stop()

        if os.environ.get("STANDIN_5M"):
            big = os.path.join(data, "audience_5000000.csv.gz")
            log("generating the 5M-recipient audience")
            gen_audience(big, 5_000_000)
            si.start(goaway_after=1_000_000)   # nginx 1.22's stream-index leak: a fresh connection per 1M requests
            r = run_herald(herald, write_job("standin-5m", big, si, connections, streams), "standin-5m")
            si.stop()
            figures["herald_5m"] = r
            base = figures["herald_peak_rss_mib_1m"]
            if base is None and os.path.exists(os.path.join(OUT, "standin.json")):   # REPS=0: compare with the last full run
                with open(os.path.join(OUT, "standin.json")) as f:
                    base = json.load(f).get("herald_peak_rss_mib_1m")
                figures["herald_peak_rss_mib_1m_from"] = os.path.join(OUT, "standin.json")
            figures["rss_5m_vs_1m_percent"] = round((r["peak_rss_mib"] / base - 1) * 100, 1) if base else None
            log(f"herald 5M: {r['rate']:,.0f}/s, peak RSS {r['peak_rss_mib']} MiB ({figures['rss_5m_vs_1m_percent']:+} % vs 1M)")
    finally:
        si.stop()

    if reps > 0:
        print(f"standin: medians of {reps}: herald {med['herald']}/s (end to end, {rows:,} recipients, "
              f"{connections}x{streams}), curl --parallel {med['curl']}/s, h2load {med['h2load']}/s, aioapns {med['aioapns']}/s; "
              f"ratios {ratios}; herald peak RSS {figures['herald_peak_rss_mib_1m']} MiB at {rows:,}")
    os.makedirs(OUT, exist_ok=True)
    out = os.path.join(OUT, "standin.json" if reps > 0 else "standin-5m.json")   # REPS=0 STANDIN_5M=1: the 5M run alone
    with open(out, "w") as f:
        json.dump(figures, f, indent=2)
    print(f"standin: figures written to {out}")


if __name__ == "__main__":
    main()
