#!/usr/bin/env python3
"""Drives bench/console_bench.sh's server and a headless Chromium: registers the fake nodes and
Jobs, opens the console's GPU map and reads its own figures (window.tesseraPerf, written by
src/ui/js/gpumap.js): the time to the first painted map, then the main-thread cost of each
update while 1% of the cards change every second (their nodes' telemetry rewritten)."""
import argparse
import datetime
import json
import random
import statistics
import sys
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait


def call(url, token, method, path, body=None, ctype="application/json"):
    req = urllib.request.Request(url + path, method=method,
                                 data=None if body is None else body.encode(),
                                 headers={"Authorization": "Bearer " + token,
                                          "Content-Type": ctype})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read() or b"null")


def node(i, now, util):
    gpus = [{"index": g, "uuid": "GPU-%05d-%d" % (i, g), "model": "H100-80GB",
             "memoryMiB": 81559, "numaNode": g // 4, "nvlinkDomain": 0} for g in range(8)]
    tele = [{"index": g, "utilizationPct": util(g), "temperatureC": 40 + util(g) // 3,
             "powerMw": 100000 + 5000 * util(g), "memoryUsedMiB": 1000 * util(g) // 10,
             "memoryFreeMiB": 81559, "memoryUtilizationPct": 0, "smClockMhz": 1980,
             "eccCorrected": 0, "eccUncorrected": 0, "xidCount": 0, "processes": []}
            for g in range(8)]
    labels = {"pool": "mig" if i % 8 == 0 else "whole", "rack": "r%02d" % (i // 40)}
    return {"apiVersion": "tessera.io/v1", "kind": "Node",
            "metadata": {"name": "n%04d" % i, "labels": labels},
            "status": {"address": "127.0.0.1", "allocatable": {"cpu": "128", "memory": "1Ti"},
                       "gpus": gpus, "telemetry": tele, "heartbeat": now}}


def main():
    ap = argparse.ArgumentParser()
    for a in ("--url", "--token"):
        ap.add_argument(a, required=True)
    ap.add_argument("--nodes", type=int, default=1250)
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--seconds", type=int, default=20)
    a = ap.parse_args()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    rnd = random.Random(7)
    t = time.time()
    for start in range(0, a.nodes, 250):
        docs = [json.dumps(node(i, now, lambda g: rnd.randrange(0, 100)))
                for i in range(start, min(a.nodes, start + 250))]
        call(a.url, a.token, "POST", "/apis/tessera.io/v1/apply", "\n---\n".join(docs),
             "application/yaml")
    call(a.url, a.token, "POST", "/apis/tessera.io/v1/apply", json.dumps({
        "apiVersion": "tessera.io/v1", "kind": "GpuSharingConfig", "metadata": {"name": "mig"},
        "spec": {"nodeSelector": {"pool": "mig"}, "gpus": ["0", "1"],
                 "mig": {"layout": {"3g.40gb": 1, "1g.10gb": 4}}}}), "application/yaml")
    for start in range(0, a.jobs, 500):
        docs = [json.dumps({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": "j%05d" % j,
                                         "namespace": "team-%d" % (j % 5)},
                            "spec": {"containers": [{"name": "c", "resources": {
                                "limits": {"nvidia.com/gpu": 1}}}]}})
                for j in range(start, min(a.jobs, start + 500))]
        call(a.url, a.token, "POST", "/apis/tessera.io/v1/apply", "\n---\n".join(docs),
             "application/yaml")
    # Until the scheduler has placed them all.
    for _ in range(600):
        jobs = call(a.url, a.token, "GET", "/apis/tessera.io/v1/jobs")["items"]
        if sum(1 for j in jobs if j.get("status", {}).get("phase") == "Admitted") >= a.jobs:
            break
        time.sleep(0.5)
    setup_s = time.time() - t

    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1600,1100", "--no-first-run", "--disable-extensions"):
        opts.add_argument(arg)
    d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        d.get(a.url + "/ui/")
        d.execute_script("sessionStorage.setItem('tessera.token', arguments[0])", a.token)
        d.execute_script("location.hash = '#/gpus'")
        d.refresh()  # the console starts signed in, on the map
        try:
            WebDriverWait(d, 120, 0.05).until(lambda d: d.execute_script(
                "return window.tesseraPerf && window.tesseraPerf.gpuMapCards"))
        except Exception:
            d.save_screenshot("/tmp/console-bench-failed.png")
            print(json.dumps([e["message"] for e in d.get_log("browser")][-10:]), file=sys.stderr)
            raise
        first = d.execute_script("return window.tesseraPerf")
        # A second opening of the view, the lists already held: the draw alone.
        d.execute_script("window.tesseraPerf = {}; location.hash = '#/waiting'")
        time.sleep(0.5)
        d.execute_script("location.hash = '#/gpus'")
        WebDriverWait(d, 120, 0.05).until(lambda d: d.execute_script(
            "return window.tesseraPerf && window.tesseraPerf.gpuMapCards"))
        again = d.execute_script("return window.tesseraPerf")
        drawn = d.execute_script("return document.querySelectorAll('.card').length")
        sections = d.execute_script("return document.querySelectorAll('section.node').length")
        def churn(seconds):
            """1% of the cards each second: their nodes' telemetry rewritten. The updates'
            costs as the page measured them."""
            d.execute_script("window.tesseraPerf.updates = []")
            per_second = max(1, a.nodes * 8 // 100 // 8)
            t_end = time.time() + seconds
            sent = 0
            while time.time() < t_end:
                tick = time.time()
                for _ in range(per_second):
                    i = rnd.randrange(a.nodes)
                    obj = call(a.url, a.token, "GET", "/apis/tessera.io/v1/nodes/n%04d" % i)
                    fresh = node(i, now, lambda g: rnd.randrange(0, 100))
                    obj["status"]["telemetry"] = fresh["status"]["telemetry"]
                    call(a.url, a.token, "PUT", "/apis/tessera.io/v1/nodes/n%04d" % i,
                         json.dumps(obj))
                    sent += 1
                time.sleep(max(0, 1 - (time.time() - tick)))
            time.sleep(1)
            return sent, d.execute_script("return window.tesseraPerf.updates")

        sent, updates = churn(a.seconds)
        # Scrolled to the end: every node's cards drawn; the same churn again.
        for _ in range(400):
            d.execute_script("window.scrollBy(0, 2000)")
            time.sleep(0.02)
            if d.execute_script("return document.querySelectorAll('.card').length") >= \
                    first["gpuMapCards"]:
                break
        all_drawn = d.execute_script("return document.querySelectorAll('.card').length")
        sent_all, updates_all = churn(a.seconds)
    finally:
        d.quit()
    def summary(sent, updates):
        ms = [u["ms"] for u in updates]
        return {"nodeUpdatesSent": sent, "updates": len(ms),
                "cardsMedian": statistics.median([u["cards"] for u in updates]) if ms else 0,
                "msMedian": round(statistics.median(ms), 1) if ms else None,
                "msP95": round(sorted(ms)[int(0.95 * (len(ms) - 1))], 1) if ms else None,
                "msMax": round(max(ms), 1) if ms else None}
    print(json.dumps({
        "nodes": a.nodes, "gpus": first["gpuMapCards"], "jobs": a.jobs, "sections": sections,
        "cardsDrawnInView": drawn, "setupSeconds": round(setup_s, 1),
        "firstOpenMs": round(first["gpuMapOpenMs"]), "firstDrawMs": round(first["gpuMapDrawMs"]),
        "firstBuildMs": round(first["gpuMapBuildMs"]), "rebuildMs": round(again["gpuMapBuildMs"]),
        "reopenMs": round(again["gpuMapOpenMs"]), "redrawMs": round(again["gpuMapDrawMs"]),
        "updatesInView": summary(sent, updates),
        "cardsDrawnAfterScrolling": all_drawn,
        "updatesAllDrawn": summary(sent_all, updates_all)}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
