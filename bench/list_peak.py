#!/usr/bin/env python3
"""The memory one list takes in `tessera server`: N Jobs created over HTTP (one task, one GPU
each), then each list read twice (whole, and a first page of 500), its peak resident memory above the resident memory before it
(VmHWM after resetting it through /proc/PID/clear_refs), the body's size and the time to read it.
Each binary given gets a server of its own, in turn.
Usage: bench/list_peak.py N TESSERA [TESSERA...]"""
import http.client
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time

# Each list, and how many items it holds (None: every Job's).
PATHS = [("/apis/tessera.io/v1/namespaces/m/jobs", None), ("/api/v1/namespaces/m/pods", None),
         ("/apis/tessera.io/v1/namespaces/m/jobs?limit=500", 500)]


def measure(tessera, jobs):
    work = tempfile.mkdtemp(prefix="tessera-list-peak-")
    srv = subprocess.Popen([tessera, "server", "--data-dir", work + "/d", "--listen",
                            "127.0.0.1:0", "--plain-http"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    try:
        addr = None
        for line in srv.stdout:
            m = re.match(r"listening on (\S+)", line)
            if m:
                addr = m.group(1)
                break
        assert addr, "the server did not start"
        host, port = addr.split(":")
        token = open(work + "/d/admin.token").read().strip()

        def status_mb(key):
            for line in open(f"/proc/{srv.pid}/status"):
                if line.startswith(key):
                    return int(line.split()[1]) / 1024
            return 0

        c = http.client.HTTPConnection(host, int(port))
        h = {"Authorization": "Bearer " + token, "Content-Type": "application/json"}
        for i in range(jobs):
            job = {"apiVersion": "tessera.io/v1", "kind": "Job",
                   "metadata": {"name": f"j{i}", "namespace": "m"},
                   "spec": {"tasks": [{"name": "main", "command": ["sleep", "1"],
                                       "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}
            c.request("POST", "/apis/tessera.io/v1/namespaces/m/jobs", json.dumps(job), h)
            r = c.getresponse()
            r.read()
            assert r.status == 201, r.status
        for path, want in PATHS:
            for _ in range(2):
                time.sleep(0.5)
                with open(f"/proc/{srv.pid}/clear_refs", "w") as f:
                    f.write("5")
                before = status_mb("VmRSS")
                t = time.time()
                c.request("GET", path, headers=h)
                r = c.getresponse()
                body = r.read()
                took = time.time() - t
                assert r.status == 200 and len(json.loads(body)["items"]) == (want or jobs)
                print(f"{tessera} {path}: {len(body) / 1e6:.1f} MB, {took * 1000:.0f} ms, "
                      f"peak RSS {status_mb('VmHWM') - before:.0f} MB above {before:.0f} MB",
                      flush=True)
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    n = int(sys.argv[1])
    for binary in sys.argv[2:]:
        measure(binary, n)
