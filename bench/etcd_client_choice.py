#!/usr/bin/python3
"""etcd's JSON gateway against its gRPC API, measured as Tessera uses them: the choice of client
in store/etcd_client.h (issue 46, item 2).

    /usr/bin/python3 bench/etcd_client_choice.py [TXNS_PER_RUN]

Starts one etcd member (Debian's etcd-server) on free 127.0.0.1 ports in a temporary directory,
then by turns over the same member:
- create transactions (a put of a 600-byte value under a comparison mod_revision == 0, what a
  creation sends) from 1, 4 and 16 client threads, each with its own connection (gateway: a kept
  HTTP/1.1 connection; gRPC: a channel each), as txn/s and etcd's CPU time per transaction
  (/proc/PID/stat);
- watch latency: one watch of a prefix, then 300 puts one at a time; the time from a put's
  acknowledgement to its event's arrival, median and 99th percentile.
The gRPC messages are Tessera's own declarations (src/store/etcd_rpc.proto), compiled at run time
with Debian's python3-grpc-tools (python3-grpcio). Both clients are Python: the client side costs the same
order for both, and etcd's CPU per transaction compares the servers' work alone.
"""
import base64
import http.client
import json
import os
import queue
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def b64(b):
    return base64.b64encode(b).decode()


def etcd_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Gateway:
    name = "gateway"

    def __init__(self, port):
        self.port = port

    def connect(self):
        return http.client.HTTPConnection("127.0.0.1", self.port)

    def txn(self, conn, key, value):
        k = b64(key)
        body = json.dumps({
            "compare": [{"key": k, "target": "MOD", "mod_revision": "0"}],
            "success": [{"request_put": {"key": k, "value": b64(value)}}],
        })
        conn.request("POST", "/v3/kv/txn", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        if r.status != 200 or not json.loads(data).get("succeeded"):
            sys.exit(f"gateway txn: {r.status} {data[:200]}")

    def watch(self, prefix, events):
        conn = http.client.HTTPConnection("127.0.0.1", self.port)
        end = prefix[:-1] + bytes([prefix[-1] + 1])
        conn.request("POST", "/v3/watch",
                     json.dumps({"create_request": {"key": b64(prefix), "range_end": b64(end)}}))
        r = conn.getresponse()
        while True:
            line = r.readline()
            if not line:
                return
            result = json.loads(line).get("result", {})
            if result.get("created"):
                events.put("created")
            for e in result.get("events", []):
                events.put((base64.b64decode(e["kv"]["key"]), time.perf_counter()))


class Grpc:
    name = "gRPC"

    def __init__(self, port, pb, pb_grpc, grpc):
        self.port, self.pb, self.pb_grpc, self.grpc = port, pb, pb_grpc, grpc

    def connect(self):
        channel = self.grpc.insecure_channel(f"127.0.0.1:{self.port}")
        return self.pb_grpc.KVStub(channel)

    def txn(self, stub, key, value):
        pb = self.pb
        req = pb.TxnRequest(
            compare=[pb.Compare(result=pb.Compare.EQUAL, target=pb.Compare.MOD, key=key,
                                mod_revision=0)],
            success=[pb.RequestOp(request_put=pb.PutRequest(key=key, value=value))])
        if not stub.Txn(req).succeeded:
            sys.exit("gRPC txn did not succeed")

    def watch(self, prefix, events):
        pb = self.pb
        end = prefix[:-1] + bytes([prefix[-1] + 1])
        channel = self.grpc.insecure_channel(f"127.0.0.1:{self.port}")
        stub = self.pb_grpc.WatchStub(channel)
        def forever():  # the create request, then the stream stays open
            yield pb.WatchRequest(create_request=pb.WatchCreateRequest(key=prefix, range_end=end))
            threading.Event().wait()
        for resp in stub.Watch(forever()):
            if resp.created:
                events.put("created")
            for e in resp.events:
                events.put((e.kv.key, time.perf_counter()))


def rate(client, clients, per, run, etcd_pid):
    def worker(t):
        conn = client.connect()
        for i in range(per):
            client.txn(conn, f"/choice/{client.name}/{run}/{clients}/{t}/{i}".encode(), b"x" * 600)
    threads = [threading.Thread(target=worker, args=(t,)) for t in range(clients)]
    cpu0, start = etcd_cpu(etcd_pid), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds, cpu = time.perf_counter() - start, etcd_cpu(etcd_pid) - cpu0
    n = clients * per
    return n / seconds, cpu / n * 1e6


def watch_latency(client, run, count=300):
    prefix = f"/watch/{client.name}/{run}/".encode()
    events = queue.Queue()
    threading.Thread(target=client.watch, args=(prefix, events), daemon=True).start()
    if events.get(timeout=10) != "created":
        sys.exit("no watch")
    conn = client.connect()
    delays = []
    for i in range(count):
        key = prefix + str(i).encode()
        client.txn(conn, key, b"x" * 600)
        acked = time.perf_counter()
        got, arrived = events.get(timeout=10)
        if got != key:
            sys.exit(f"watch out of order: {got} for {key}")
        delays.append(arrived - acked)
    delays.sort()
    return statistics.median(delays) * 1e3, delays[int(len(delays) * 0.99)] * 1e3


def main():
    per_run = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    work = tempfile.mkdtemp(prefix="tessera-etcd-choice-")
    protos = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "store")
    try:
        from grpc_tools import protoc
    except ImportError:
        sys.exit("needs Debian's python3-grpc-tools and python3-grpcio (apt-get install them)")
    if protoc.main(["protoc", f"-I{protos}", f"--python_out={work}", f"--grpc_python_out={work}",
                    os.path.join(protos, "etcd_rpc.proto")]) != 0:
        sys.exit("protoc failed")
    sys.path.insert(0, work)
    import grpc
    import etcd_rpc_pb2
    import etcd_rpc_pb2_grpc

    client_port, peer_port = free_port(), free_port()
    etcd = subprocess.Popen(
        ["etcd", "--name", "e", "--data-dir", f"{work}/etcd",
         "--listen-client-urls", f"http://127.0.0.1:{client_port}",
         "--advertise-client-urls", f"http://127.0.0.1:{client_port}",
         "--listen-peer-urls", f"http://127.0.0.1:{peer_port}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer_port}",
         "--initial-cluster", f"e=http://127.0.0.1:{peer_port}",
         "--logger", "zap", "--log-outputs", f"{work}/etcd.log"])
    try:
        for _ in range(200):
            try:
                c = http.client.HTTPConnection("127.0.0.1", client_port)
                c.request("GET", "/health")
                if b"true" in c.getresponse().read():
                    break
            except OSError:
                pass
            time.sleep(0.05)
        clients = [Gateway(client_port), Grpc(client_port, etcd_rpc_pb2, etcd_rpc_pb2_grpc, grpc)]
        run = 0
        for round_ in (1, 2):
            for n in (1, 4, 16):
                for client in clients:
                    run += 1
                    txns, cpu_us = rate(client, n, max(per_run // n, 50), run, etcd.pid)
                    print(f"round {round_}: {client.name:8} {n:2} clients: {txns:6.0f} txn/s, "
                          f"etcd CPU {cpu_us:5.0f} us/txn", flush=True)
            for client in clients:
                run += 1
                p50, p99 = watch_latency(client, run)
                print(f"round {round_}: {client.name:8} watch: event {p50:.2f} ms after the "
                      f"put's acknowledgement (median), {p99:.2f} ms (p99)", flush=True)
    finally:
        etcd.kill()
        etcd.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
