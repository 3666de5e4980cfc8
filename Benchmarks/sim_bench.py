#!/usr/bin/env python3
"""Throughput of `herald sim` with full validation, measured by h2load (Debian's nghttp2-client).

Starts the release `herald sim` on 127.0.0.1 with a fresh ES256 key, signs one provider token
(openssl), and has h2load POST valid APNs requests over TLS + HTTP/2: every request goes through
path, header, JWT (verified once per connection, then cached), topic, priority and payload checks.
Prints requests/second and writes bench-out/sim.json.

Usage: sim_bench.py [HERALD_BINARY] [--requests N] [--connections C] [--streams M] [--log]
Needs: openssl, h2load (apt-get install -y nghttp2-client).
"""
import argparse, base64, json, os, re, shutil, signal, subprocess, sys, tempfile, time

TEAM, KID, BUNDLE = "TEAM123456", "KEY1234567", "com.example.bench"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def der_to_raw(der: bytes) -> bytes:
    """ECDSA-Sig-Value (DER SEQUENCE of two INTEGERs) to the 64-byte R||S a JWT carries."""
    assert der[0] == 0x30
    i = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    out = b""
    for _ in range(2):
        assert der[i] == 0x02
        n = der[i + 1]
        out += der[i + 2:i + 2 + n].lstrip(b"\0").rjust(32, b"\0")
        i += 2 + n
    return out


def make_key_and_jwt(work: str) -> tuple[str, str]:
    ec = os.path.join(work, "ec.pem")
    p8 = os.path.join(work, f"AuthKey_{KID}.p8")
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", ec], check=True, capture_output=True)
    subprocess.run(["openssl", "pkcs8", "-topk8", "-nocrypt", "-in", ec, "-out", p8], check=True, capture_output=True)
    signing_input = b64url(json.dumps({"alg": "ES256", "kid": KID}, separators=(",", ":")).encode()) + "." + \
        b64url(json.dumps({"iss": TEAM, "iat": int(time.time())}, separators=(",", ":")).encode())
    der = subprocess.run(["openssl", "dgst", "-sha256", "-sign", p8], input=signing_input.encode(), check=True, capture_output=True).stdout
    return p8, signing_input + "." + b64url(der_to_raw(der))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("herald", nargs="?", default=".build/release/herald")
    parser.add_argument("--requests", type=int, default=400_000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--h2load-threads", type=int, default=1)
    parser.add_argument("--sim-threads", type=int, default=0, help="herald sim --threads (0: one per core)")
    parser.add_argument("--log", action="store_true", help="also write the NDJSON request log (to a temporary file)")
    args = parser.parse_args()
    for tool in ("h2load", "openssl"):
        if not shutil.which(tool):
            sys.exit(f"sim_bench: {tool} not found (apt-get install -y nghttp2-client openssl)")
    herald = os.path.abspath(args.herald)
    work = tempfile.mkdtemp(prefix="herald-sim-bench-")
    try:
        p8, jwt = make_key_and_jwt(work)
        payload = os.path.join(work, "payload.json")
        with open(payload, "w") as f:
            f.write('{"aps":{"alert":{"title":"Hi Ada","body":"3 new messages in Paris"},"badge":3,"sound":"default"},"campaign":"bench"}')
        cmd = [herald, "sim", "--port", "0", "--team-id", TEAM, "--key-id", KID, "--auth-key", p8, "--bundle-id", BUNDLE,
               "--threads", str(args.sim_threads)]
        if args.log:
            cmd += ["--log", os.path.join(work, "requests.ndjson")]
        sim = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = sim.stdout.readline()
        m = re.match(r"listening on (https://\S+)", line)
        if not m:
            sim.kill()
            sys.exit(f"sim_bench: herald sim did not start: {line}{sim.stderr.read()}")
        url = m.group(1) + "/3/device/" + "ab" * 32
        h2load = ["h2load", "-c", str(args.connections), "-m", str(args.streams), "-t", str(args.h2load_threads),
                  "-H", f"authorization: bearer {jwt}", "-H", f"apns-topic: {BUNDLE}", "-H", "apns-push-type: alert",
                  "-H", "apns-priority: 10", "-H", "apns-id: 123e4567-e89b-12d3-a456-426614174000",
                  "-H", "apns-expiration: 0", "-H", "apns-collapse-id: bench", "-d", payload, url]
        subprocess.run(h2load[:1] + ["-n", "20000"] + h2load[1:], check=True, capture_output=True)  # warm-up
        started = time.monotonic()
        out = subprocess.run(h2load[:1] + ["-n", str(args.requests)] + h2load[1:], check=True, capture_output=True, text=True).stdout
        wall = time.monotonic() - started
        sim.send_signal(signal.SIGTERM)
        sim.wait(timeout=30)
        rate = float(re.search(r"finished in [\d.]+\w*, ([\d.]+) req/s", out).group(1))
        counts = re.search(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored", out)
        status = re.search(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", out)
        ok = int(status.group(1))
        figures = {"requests": args.requests, "connections": args.connections, "streams": args.streams,
                   "h2load_threads": args.h2load_threads, "sim_threads": args.sim_threads or os.cpu_count(), "log": args.log,
                   "requests_per_second": rate, "status_2xx": ok, "failed": int(counts.group(5)), "errored": int(counts.group(6)),
                   "wall_seconds": round(wall, 2)}
        print(f"sim: {args.requests:,} valid requests, {args.connections} connections x {args.streams} streams"
              f"{' with request log' if args.log else ''}: {rate:,.0f} requests/s (h2load, {ok:,} answered 200)")
        if ok != args.requests:
            print(out, file=sys.stderr)
            sys.exit("sim_bench: not every request was answered 200")
        here = os.path.dirname(os.path.abspath(__file__))
        out_dir = os.path.join(os.path.dirname(here), "bench-out")
        os.makedirs(out_dir, exist_ok=True)
        with open(os.path.join(out_dir, "sim.json"), "w") as f:
            json.dump(figures, f, indent=2)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
