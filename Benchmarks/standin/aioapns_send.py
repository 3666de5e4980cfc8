"""Peer client for standin_bench.py: N pushes to the stand-in APNs with the `aioapns` library.

aioapns always dials api.push.apple.com:443, so the class attributes naming the server are pointed
at the stand-in, and it gets an SSLContext that trusts the stand-in's CA and offers ALPN "h2".
Same request as herald's: POST, the same JSON payload, apns-topic/push-type/priority/id/collapse-id,
an ES256 provider token; 1 % of the tokens start "deadbeef" (410).

  .venv/bin/python aioapns_send.py --url https://127.0.0.1:PORT --ca ca.pem --key AuthKey_X.p8 \
      --payload payload.json -n 100000 --inflight 1000
Prints one line of JSON: {"requests", "seconds", "rate", "statuses"}.
"""
import argparse, asyncio, collections, json, os, secrets, ssl, time
from urllib.parse import urlparse

from aioapns import APNs, NotificationRequest, PushType
from aioapns import connection as apns_conn

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--ca", required=True)
ap.add_argument("--key", required=True)
ap.add_argument("--payload", required=True)
ap.add_argument("-n", type=int, default=100000)
ap.add_argument("--inflight", type=int, default=1000, help="concurrent send coroutines")
ap.add_argument("--max-connections", type=int, default=1)
args = ap.parse_args()

u = urlparse(args.url)
apns_conn.APNsProductionClientProtocol.APNS_SERVER = u.hostname
apns_conn.APNsTLSClientProtocol.APNS_PORT = u.port
ctx = ssl.create_default_context(cafile=args.ca)
ctx.set_alpn_protocols(["h2"])
key_id = os.path.basename(args.key)[len("AuthKey_"):-len(".p8")]
payload = json.load(open(args.payload))


async def main():
    statuses = collections.Counter()

    async def on_error(req, res):  # aioapns logs every failure otherwise
        pass

    client = APNs(key=open(args.key).read(), key_id=key_id, team_id="TEAM123456", topic="com.example.app",
                  max_connections=args.max_connections, ssl_context=ctx, err_func=on_error)
    todo = iter(range(args.n))

    async def worker():
        for i in todo:
            tok = ("deadbeef" + secrets.token_hex(28)) if i % 100 == 0 else secrets.token_hex(32)
            req = NotificationRequest(device_token=tok, message=payload, notification_id=None,
                                      push_type=PushType.ALERT, priority=10, collapse_key="herald:standin-bench")
            res = await client.send_notification(req)
            statuses[res.status] += 1

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(args.inflight)))
    dt = time.perf_counter() - t0
    client.pool.close()
    print(json.dumps({"requests": args.n, "seconds": round(dt, 3), "rate": round(args.n / dt, 1), "statuses": dict(statuses)}))

asyncio.run(main())
