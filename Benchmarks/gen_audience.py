#!/usr/bin/env python3
"""Generates a deterministic demo/benchmark audience (CSV or NDJSON, gzip-compressed).

Usage: gen_audience.py OUT ROWS [--format csv|ndjson] [--messy] [--columns 5|6]
--columns 5 leaves out `unread` (the reading benchmark's 5-column, ~95-byte rows).
--messy adds what real exports contain: duplicates in other spellings (upper case, <angle brackets>
and inner spaces), invalid tokens, missing tokens, and tokens the simulator answers 410
Unregistered (prefix "dead") or 400 BadDeviceToken (prefix "badd") when the job says so.
"""
import gzip, json, random, sys

def main():
    args = sys.argv[1:]
    out, rows = args[0], int(args[1])
    fmt = "csv"
    if "--format" in args: fmt = args[args.index("--format") + 1]
    messy = "--messy" in args
    columns = int(args[args.index("--columns") + 1]) if "--columns" in args else 6
    keys = ["id", "token", "first_name", "locale", "city", "unread"][:columns]
    rnd = random.Random(20260321)
    names = ["Ada", "Grace", "Linus", "Margaret", "Ken", "Barbara", "Dennis", "Frances", "Edsger", "Radia", "Zoë", "José"]
    cities = ["Paris", "Lyon", "Berlin", "Zürich", "Montréal", "Austin", "Osaka", "São Paulo"]
    locales = ["en", "en-US", "fr", "fr-CA", "de", "de-CH", "es", ""]
    seen = []
    opener = gzip.open if out.endswith(".gz") else open
    # Rows are written as they are made (memory stays flat for the 5M-row benchmark file).
    with opener(out, "wt", encoding="utf-8", newline="") as f:
        if fmt == "csv":
            f.write(",".join(keys) + "\n")
        for i in range(rows):
            token = "%064x" % rnd.getrandbits(256)
            kind = "ok"
            if messy:
                r = rnd.random()
                if r < 0.012 and seen:
                    dup = rnd.choice(seen)
                    style = rnd.randrange(3)
                    token = dup.upper() if style == 0 else ("<" + " ".join(dup[j:j+8] for j in range(0, 64, 8)) + ">" if style == 1 else dup)
                    kind = "dup"
                elif r < 0.017:
                    token = rnd.choice(["not-a-token", token[:63], token[:20] + "zz" + token[22:], "12345"])
                    kind = "invalid"
                elif r < 0.019:
                    token = ""
                elif r < 0.025:
                    token = "dead" + token[4:]
                elif r < 0.028:
                    token = "badd" + token[4:]
            if messy and kind == "ok" and token:
                seen.append(token)
            r = {"id": "u%07d" % (i + 1), "token": token, "first_name": rnd.choice(names),
                 "locale": rnd.choice(locales), "city": rnd.choice(cities), "unread": str(rnd.randrange(0, 40))}
            if fmt == "csv":
                f.write(",".join(r[k] for k in keys) + "\n")
            else:
                o = {"id": r["id"], "token": r["token"], "locale": r["locale"],
                     "user": {"first_name": r["first_name"], "city": r["city"]}}
                if "unread" in keys: o["unread"] = int(r["unread"])
                f.write(json.dumps(o, ensure_ascii=False) + "\n")

if __name__ == "__main__":
    main()
