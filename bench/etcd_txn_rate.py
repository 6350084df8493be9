#!/usr/bin/env python3
"""etcd's own rate of create transactions over its JSON gateway, with no Tessera in the path:
the ceiling for BM_CreateJobsOnEtcd on this machine.

    bench/etcd_txn_rate.py http://127.0.0.1:2379 CLIENTS PER_CLIENT

Each client is a thread with a kept connection sending one txn at a time: a put of a 600-byte
value under a comparison mod_revision == 0 (what a creation sends). Prints txn/s.
"""
import base64
import http.client
import json
import sys
import threading
import time
import urllib.parse


def b64(s):
    return base64.b64encode(s.encode()).decode()


def main():
    url = urllib.parse.urlparse(sys.argv[1])
    clients, per = int(sys.argv[2]), int(sys.argv[3])
    run = str(time.time_ns())

    def worker(t):
        c = http.client.HTTPConnection(url.hostname, url.port)
        for i in range(per):
            k = b64(f"/etcd_txn_rate/{run}/{t}/{i}")
            body = json.dumps({
                "compare": [{"key": k, "target": "MOD", "mod_revision": "0"}],
                "success": [{"request_put": {"key": k, "value": b64("x" * 600)}}],
            })
            c.request("POST", "/v3/kv/txn", body, {"Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            if r.status != 200:
                sys.exit(f"etcd answered {r.status}")

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(clients)]
    start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{clients} clients: {clients * per / (time.time() - start):.0f} txn/s")


if __name__ == "__main__":
    main()
