#!/usr/bin/env python3
"""The web console in headless Chromium (chromium-driver + Selenium), against tessera dev as
console_test.sh set it up: the GPU map's cells (which card, which slice, which job), a job's log
followed live, a waiting job's reason and position, a GPU cordoned from the console and seen by
kubectl, and a namespace token that sees its namespace only and whose admin actions are refused
in the console and by the API. A screenshot of each view goes to --shots."""
import argparse
import json
import os
import subprocess
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


class Console:
    def __init__(self, url, shots):
        opts = webdriver.ChromeOptions()
        opts.binary_location = "/usr/bin/chromium"
        for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--window-size=1600,1100", "--ignore-certificate-errors",
                  "--no-first-run", "--disable-extensions", "--disable-background-networking"):
            opts.add_argument(a)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
        self.url = url
        self.shots = shots

    def close(self):
        self.d.quit()

    def wait(self, what, cond, timeout=20):
        try:
            return WebDriverWait(self.d, timeout, poll_frequency=0.1).until(lambda d: cond())
        except TimeoutException:
            self.shot("failed-" + what.replace(" ", "-")[:40])
            logs = [e["message"] for e in self.d.get_log("browser")]
            fail("timed out waiting for " + what + "; browser log: " + json.dumps(logs[-10:]))

    def css(self, sel):
        return self.d.find_elements(By.CSS_SELECTOR, sel)

    def shot(self, name):
        self.d.save_screenshot(os.path.join(self.shots, name + ".png"))

    def sign_in(self, token):
        self.d.get(self.url)
        self.wait("the sign-in form", lambda: self.d.find_element(By.ID, "signin").is_displayed())
        box = self.d.find_element(By.ID, "token")
        box.clear()
        box.send_keys(token)
        self.d.find_element(By.CSS_SELECTOR, "#signin button").click()
        self.wait("signed in", lambda: self.d.find_element(By.ID, "who").text != "")

    def sign_out(self):
        self.d.find_element(By.ID, "signout").click()
        self.wait("signed out", lambda: self.d.find_element(By.ID, "signin").is_displayed())

    def go(self, hash_):
        self.d.execute_script("location.hash = arguments[0]", hash_)

    def card(self, node, gpu):
        found = self.css('.card[data-node="%s"][data-gpu="%s"]' % (node, gpu))
        return found[0] if found else None

    # Cards are drawn again as their node reports: read and click them in one step, in the page.
    def card_class(self, node, gpu):
        return self.d.execute_script(
            "const c = document.querySelector(arguments[0]); return c ? c.className : '';",
            '.card[data-node="%s"][data-gpu="%s"]' % (node, gpu))

    def click(self, selector):
        if not self.d.execute_script(
                "const e = document.querySelector(arguments[0]); if (e) e.click(); return !!e;",
                selector):
            fail("nothing to click at " + selector)

    def holders(self, node, gpu):
        """The jobs holding the card's parts, in the card's order ("" for a free part)."""
        return self.d.execute_script(
            "const c = document.querySelector(arguments[0]);"
            "return c ? [...c.querySelectorAll('.part')].filter(p => !p.classList.contains('gap'))"
            ".map(p => p.dataset.job || '') : null;",
            '.card[data-node="%s"][data-gpu="%s"]' % (node, gpu))

    def api(self, method, path, body=None, ctype="application/json"):
        """A request from the page, with the token it signed in with: what the API answers."""
        return self.d.execute_async_script(
            "const [m, p, b, ct, done] = arguments;"
            "fetch(p, {method: m, headers: {Authorization: 'Bearer ' + "
            "sessionStorage.getItem('tessera.token'), 'Content-Type': ct},"
            " body: b}).then(r => r.text().then(t => done([r.status, t])))"
            ".catch(e => done([0, String(e)]));",
            method, path, None if body is None else json.dumps(body), ctype)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--admin-token", required=True)
    ap.add_argument("--namespace-token", required=True)
    ap.add_argument("--shots", required=True)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--tessera", required=True)
    a = ap.parse_args()
    c = Console(a.url, a.shots)
    try:
        run(c, a)
    finally:
        c.close()


def run(c, a):
    # The page itself loads nothing from elsewhere and allows no inline script.
    c.d.get(a.url)
    csp = c.d.execute_async_script(
        "const done = arguments[0]; fetch(location.href).then(r => "
        "done(r.headers.get('content-security-policy')))")
    if not csp or "script-src 'self'" not in csp or "connect-src 'self'" not in csp:
        fail("the console's Content-Security-Policy is missing or loose: %r" % csp)

    # A wrong token is refused with the reason.
    c.d.find_element(By.ID, "token").send_keys("nope.nope")
    c.d.find_element(By.CSS_SELECTOR, "#signin button").click()
    c.wait("the refusal", lambda: "does not know" in c.d.find_element(By.ID, "signin-error").text)
    c.shot("00-sign-in")

    # --- the admin: the GPU map -------------------------------------------------------------
    c.sign_in(a.admin_token)
    if c.d.find_element(By.ID, "who").text != "admin":
        fail("signed in as %r, not admin" % c.d.find_element(By.ID, "who").text)
    if c.d.execute_script("return localStorage.length") != 0:
        fail("the console stored something in localStorage")
    c.wait("the GPU map", lambda: c.card("dev", 15) is not None)
    c.wait("trainer and seed 01 on two whole cards each",
           lambda: [c.holders("dev", g)[0] for g in range(16)].count("trainer") == 2 and
           [c.holders("dev", g)[0] for g in range(16)].count("gpu-training") == 2)
    trainer_cards = [g for g in range(16) if c.holders("dev", g) == ["trainer"]]
    seed_cards = [g for g in range(16) if c.holders("dev", g) == ["gpu-training"]]
    pods = c.d.execute_script(
        "return document.querySelector('.card[data-node=dev][data-gpu=\"%d\"] .part.held')"
        ".title" % seed_cards[0])
    if pods != "default/gpu-training/trainer-0":
        fail("seed 01's card names %r" % pods)
    mig = c.holders("dev", 4)
    if len(mig) != 7 or mig.count("infer") != 1 or mig.count("") != 6:
        fail("GPU 4 should show 7 MIG slices, one held by infer: %r" % mig)
    mode4 = c.d.execute_script("return document.querySelector("
                               "'.card[data-node=dev][data-gpu=\"4\"] .mode').textContent")
    if mode4 != "MIG":
        fail("GPU 4's mode reads %r" % mode4)
    slice_profiles = c.d.execute_script(
        "return [...document.querySelectorAll('.card[data-node=dev][data-gpu=\"4\"] .part.slice')]"
        ".map(p => p.dataset.profile)")
    if slice_profiles != ["1g.10gb"] * 7:
        fail("GPU 4's slices read %r" % slice_profiles)
    replicas = c.holders("dev", 5)
    if len(replicas) != 4 or replicas.count("sliced") != 1:
        fail("GPU 5 should show 4 time-slice replicas, one held by sliced: %r" % replicas)
    # Seed 03's two cGPU pods share GPU 6: 4 GiB, and 8 GiB with half the compute.
    shares = c.holders("dev", 6)
    if sorted(shares) != ["", "cgpu-full-isolation", "cgpu-pod"]:
        fail("GPU 6 should show seed 03's two shares and the rest free: %r" % shares)
    share_text = c.d.execute_script(
        "return [...document.querySelectorAll('.card[data-node=dev][data-gpu=\"6\"] "
        ".part.held')].map(p => p.dataset.job + ' ' + p.querySelector('.what').textContent)")
    if "cgpu-full-isolation 50%" not in share_text:
        fail("seed 03's compute share reads %r" % share_text)
    c.shot("01-gpu-map")

    # Filters: by namespace, only team-a's card stays lit.
    c.d.find_element(By.CSS_SELECTOR, "select[aria-label=namespace] option[value=team-a]").click()
    lit = c.d.execute_script("return [...document.querySelectorAll('.card:not(.dim)')]"
                             ".map(e => e.dataset.gpu)")
    if len(lit) != 1:
        fail("the namespace filter left %r lit" % lit)
    c.d.find_element(By.CSS_SELECTOR, "select[aria-label=namespace] option[value='']").click()
    # By queue (the ClusterQueue that admitted them): team-a-cq's two jobs.
    c.d.find_element(By.CSS_SELECTOR, "select[aria-label=queue] option[value=team-a-cq]").click()
    lit = c.d.execute_script("return [...document.querySelectorAll('.card:not(.dim) .part.held')]"
                             ".map(e => e.dataset.job).sort()")
    if lit != ["qa1", "qa2"]:
        fail("the queue filter left %r lit" % lit)
    c.d.find_element(By.CSS_SELECTOR, "select[aria-label=queue] option[value='']").click()
    # By node label: a label the node has keeps it; one it lacks hides it.
    label = c.d.find_element(By.CSS_SELECTOR, "input[aria-label='node label']")
    label.send_keys("accelerator=nvidia-tesla-v100")
    if c.d.execute_script("return document.querySelector('section.node[data-node=dev]').hidden"):
        fail("the label filter hid the node that has the label")
    label.send_keys("x")
    if not c.d.execute_script("return document.querySelector('section.node[data-node=dev]')"
                              ".hidden"):
        fail("the label filter kept a node without the label")
    label.clear()
    label.send_keys(" ")
    # By model.
    c.d.find_element(By.CSS_SELECTOR, "select[aria-label=model] option[value='H100-80GB']").click()
    if c.css(".card.dim"):
        fail("the model filter dimmed H100 cards")
    c.d.find_element(By.CSS_SELECTOR, "select[aria-label=model] option[value='']").click()

    # --- a job: click its card, see its bindings, follow its log ----------------------------
    c.click('.card[data-node="dev"][data-gpu="%d"] a.part.held' % trainer_cards[0])
    c.wait("the job view", lambda: c.d.current_url.endswith("#/job/default/trainer"))
    c.wait("trainer's pod and devices",
           lambda: "GPU %d whole" % trainer_cards[0] in c.d.find_element(By.ID, "view").text)
    c.wait("trainer's log", lambda: "tick" in c.d.find_element(By.ID, "log").text)

    def last_tick():
        lines = [l for l in c.d.find_element(By.ID, "log").text.splitlines() if l.startswith("tick")]
        return int(lines[-1].split()[1]) if lines else 0
    first = last_tick()
    c.wait("the log to grow while followed", lambda: last_tick() >= first + 3)
    c.wait("trainer's events", lambda: "Scheduled" in c.d.find_element(By.CSS_SELECTOR,
                                                                        ".timeline").text)
    c.shot("02-job")
    # Suspend and resume from the job's page: the API's spec.suspend, as kubectl would set it.
    c.click("#view .actions button.act")  # Suspend
    c.wait("trainer suspended", lambda: '"suspend": true' in subprocess.run(
        [a.tessera, "get", "job", "trainer", "-o", "json"], capture_output=True,
        text=True).stdout)
    c.wait("the Resume button", lambda: c.d.execute_script(
        "const b = document.querySelector('#view .actions button.act');"
        "return b && b.textContent === 'Resume'"))
    c.click("#view .actions button.act")  # Resume
    c.wait("trainer resumed", lambda: '"suspend": false' in subprocess.run(
        [a.tessera, "get", "job", "trainer", "-o", "json"], capture_output=True,
        text=True).stdout)
    # Delete, after the browser's confirmation.
    c.go("#/job/default/sliced")
    c.wait("sliced's page", lambda: c.d.execute_script(
        "return [...document.querySelectorAll('#view .actions button.act')]"
        ".some(b => b.textContent === 'Delete')"))
    c.d.execute_script("[...document.querySelectorAll('#view .actions button.act')]"
                       ".find(b => b.textContent === 'Delete').click()")
    WebDriverWait(c.d, 10).until(lambda d: d.switch_to.alert).accept()
    c.wait("sliced deleted", lambda: subprocess.run(
        [a.tessera, "get", "job", "sliced"], capture_output=True).returncode != 0)

    # --- waiting work: reason, position, whether it can fit ---------------------------------
    c.go("#/waiting")
    c.wait("the waiting jobs", lambda: len(c.css('tr[data-job="default/huge"]')) == 1 and
           len(c.css('tr[data-job="default/waiter"]')) == 1)
    waiter = c.css('tr[data-job="default/waiter"]')[0].text
    huge = c.css('tr[data-job="default/huge"]')[0].text
    if "1 of 2" not in huge or "2 of 2" not in waiter:
        fail("positions wrong: huge %r, waiter %r" % (huge, waiter))
    # The head was searched for room: it never fits; the one behind it was not searched.
    if "no: not even with all running work ended" not in huge or "not checked" not in waiter:
        fail("whether they can fit is wrong: huge %r, waiter %r" % (huge, waiter))
    if "insufficient free GPUs" not in waiter or \
            "does not fit even when running work ends" not in huge:
        fail("the rows lack the scheduler's reasons: huge %r, waiter %r" % (huge, waiter))
    c.shot("03-waiting")

    c.go("#/jobs")
    c.wait("the job list", lambda: len(c.css('tr[data-job="team-a/tenant-job"]')) == 1)
    c.shot("04-jobs")

    # --- queues: quota, use, borrowing and lending in the cohort; close and open -------------
    c.go("#/queues")
    c.wait("the cohort tree", lambda: len(c.css('li.cohort[data-queue="research"] '
                                                 'li[data-queue="team-a-cq"]')) == 1)

    def figures(queue):
        return c.d.execute_script(
            "const r = document.querySelector('li[data-queue=\"' + arguments[0] + '\"] "
            "table.figures tbody tr'); if (!r) return null; const f = {};"
            "for (const k of ['nominal', 'used', 'borrowed', 'lent', 'deserved'])"
            " f[k] = r.querySelector('.' + k).textContent; return f;", queue)
    c.wait("team-a-cq borrowing", lambda: (figures("team-a-cq") or {}).get("borrowed") == "1")
    a_cq, b_cq = figures("team-a-cq"), figures("team-b-cq")
    if a_cq["nominal"] != "1" or a_cq["used"] != "2" or b_cq["lent"] != "1" or b_cq["used"] != "0":
        fail("queue figures wrong: team-a-cq %r, team-b-cq %r" % (a_cq, b_cq))
    c.shot("05-queues")
    c.click('li[data-queue="team-b-cq"] > .qnode-head button.act')
    c.wait("team-b-cq closed", lambda: "Hold" in c.d.execute_script(
        "const b = document.querySelector('li[data-queue=\"team-b-cq\"] > .qnode-head .badge');"
        "return b ? b.textContent : ''"))
    got = subprocess.run([a.tessera, "get", "queue", "team-b-cq", "-o", "json"],
                         capture_output=True, text=True, timeout=30)
    if '"stopPolicy": "Hold"' not in got.stdout:
        fail("closing from the console did not hold team-b-cq: " + got.stdout + got.stderr)
    c.click('li[data-queue="team-b-cq"] > .qnode-head button.act')
    c.wait("team-b-cq open", lambda: "Open" == c.d.execute_script(
        "const b = document.querySelector('li[data-queue=\"team-b-cq\"] > .qnode-head .badge');"
        "return b ? b.textContent : ''"))
    # A Volcano queue closes by a Command, as vcctl's; Volcano's own view says Closed.
    c.wait("the Volcano queue", lambda: len(c.css('li[data-queue="volcano-q"]')) == 1)
    c.click('li[data-queue="volcano-q"] > .qnode-head button.act')
    c.wait("volcano-q closed", lambda: "Closed" == c.d.execute_script(
        "const b = document.querySelector('li[data-queue=\"volcano-q\"] > .qnode-head .badge');"
        "return b ? b.textContent : ''"))
    got = subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, "get",
                          "queues.scheduling.volcano.sh", "volcano-q", "-o",
                          "jsonpath={.status.state}"], capture_output=True, text=True, timeout=30)
    if got.stdout.strip() != "Closed":
        fail("kubectl does not see volcano-q closed: %r %r" % (got.stdout, got.stderr))
    c.shot("06-queues-closed")
    c.click('li[data-queue="volcano-q"] > .qnode-head button.act')
    c.wait("volcano-q open", lambda: "Open" == c.d.execute_script(
        "const b = document.querySelector('li[data-queue=\"volcano-q\"] > .qnode-head .badge');"
        "return b ? b.textContent : ''"))

    # --- usage: charts over a range, totals per namespace and queue ---------------------------
    c.go("#/usage")
    c.wait("the usage totals", lambda: len(c.css('tr[data-group="default"]')) == 1 and
           len(c.css('tr[data-group="team-a"]')) == 1)
    c.wait("three charts drawn", lambda: c.d.execute_script(
        "return ['hours', 'cost', 'alloc'].every(k => document.querySelector("
        "'#chart-' + k + ' canvas'))"))
    legend = c.d.execute_script("return document.querySelector('#chart-hours').textContent")
    if "default" not in legend or "team-a" not in legend:
        fail("the GPU-hours chart does not name the namespaces: %r" % legend)
    c.shot("10-usage")
    c.d.execute_script("const s = document.querySelector('select[aria-label=by]');"
                       "s.value = 'queue'; s.dispatchEvent(new Event('change'));")
    c.wait("usage by queue", lambda: len(c.css('tr[data-group="team-a-cq"]')) == 1)

    # --- cordon a GPU from the console; kubectl sees it --------------------------------------
    c.go("#/gpus")
    c.wait("the GPU map again", lambda: c.card("dev", 7) is not None)
    uuid7 = c.d.execute_script("return document.querySelector("
                               "'.card[data-node=dev][data-gpu=\"7\"]').title")
    c.click('.card[data-node="dev"][data-gpu="7"] button.act')
    c.wait("GPU 7 shown cordoned", lambda: "cordoned" in c.card_class("dev", 7))
    got = subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, "get", "node", "dev", "-o",
                          "jsonpath={.metadata.annotations.tessera\\.io/cordoned-gpus}"],
                         capture_output=True, text=True, timeout=30)
    if got.returncode != 0 or got.stdout.strip() != uuid7:
        fail("kubectl does not report GPU 7 (%s) cordoned: %r %r" % (uuid7, got.stdout, got.stderr))
    top = subprocess.run([a.tessera, "top", "gpus"], capture_output=True, text=True, timeout=30)
    if not any(l.split()[:2] == ["dev", "7"] and "Cordoned" in l for l in top.stdout.splitlines()):
        fail("tessera top gpus does not show GPU 7 cordoned: " + top.stdout)
    c.shot("07-gpu-map-cordoned")
    c.click('.card[data-node="dev"][data-gpu="7"] button.act')
    c.wait("GPU 7 uncordoned", lambda: "cordoned" not in c.card_class("dev", 7))
    # The whole node, cordoned and uncordoned: kubectl's spec.unschedulable.
    c.click('section.node[data-node="dev"] .node-head button.act')

    def unschedulable():
        return subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, "get", "node", "dev",
                               "-o", "jsonpath={.spec.unschedulable}"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    c.wait("the node cordoned", lambda: unschedulable() == "true")
    c.wait("the node shown cordoned", lambda: "node cordoned" in c.d.execute_script(
        "return document.querySelector('section.node[data-node=dev] .node-head').textContent"))
    c.click('section.node[data-node="dev"] .node-head button.act')
    c.wait("the node uncordoned", lambda: unschedulable() in ("", "false"))
    # A GPU the loop quarantined (its annotation, as the loop writes it after an Xid) shows it;
    # uncordoning it from the console lifts the quarantine, as `tessera uncordon` does.
    quarantine = json.dumps({"gpus": [{"index": 3, "xid": 79, "since": "2026-11-29T00:00:00.000Z",
                                       "resetRequested": False}]})
    got = subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, "annotate", "node", "dev",
                          "tessera.io/gpu-quarantine=" + quarantine], capture_output=True,
                         text=True, timeout=30)
    if got.returncode != 0:
        fail("kubectl annotate: " + got.stderr)
    c.wait("GPU 3 quarantined", lambda: "quarantined" in c.card_class("dev", 3))
    if "Xid 79" not in c.d.execute_script(
            "return document.querySelector('.card[data-node=dev][data-gpu=\"3\"]').textContent"):
        fail("GPU 3's card does not name the Xid")
    c.click('.card[data-node="dev"][data-gpu="3"] button.act')  # Uncordon
    c.wait("GPU 3 returned", lambda: "quarantined" not in c.card_class("dev", 3))
    got = subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig, "get", "node", "dev", "-o",
                          "jsonpath={.metadata.annotations.tessera\\.io/gpu-quarantine}"],
                         capture_output=True, text=True, timeout=30)
    if got.returncode != 0 or '"index":3' in got.stdout:
        fail("the quarantine of GPU 3 is still there: %r %r" % (got.stdout, got.stderr))
    c.sign_out()
    if c.d.execute_script("return sessionStorage.length") != 0:
        fail("signing out left the token in the tab")

    # --- a namespace token: its namespace only; admin actions refused ------------------------
    c.sign_in(a.namespace_token)
    if c.d.find_element(By.ID, "who").text != "namespace team-a":
        fail("signed in as %r" % c.d.find_element(By.ID, "who").text)
    c.wait("team-a's card", lambda: len(c.css(".card")) == 1)
    if c.css(".card button.act, .node-head button.act"):
        fail("a namespace token is offered the cordon")
    held = c.d.execute_script("return [...document.querySelectorAll('.card .part')]"
                              ".map(p => p.dataset.ns + '/' + (p.dataset.job || ''))")
    if held != ["team-a/tenant-job"]:
        fail("team-a's card does not show its job alone: %r" % held)
    c.shot("08-namespace-gpu-map")
    status, text = c.api("GET", "/apis/tessera.io/v1/nodes/dev")
    if status != 403:
        fail("a namespace token read a Node: %d %s" % (status, text))
    status, text = c.api("PUT", "/apis/tessera.io/v1/nodes/dev",
                         {"apiVersion": "tessera.io/v1", "kind": "Node", "metadata": {"name": "dev"}})
    if status != 403:
        fail("a namespace token wrote a Node: %d %s" % (status, text))
    status, _ = c.api("GET", "/apis/tessera.io/v1/gpus")
    if status != 403:
        fail("a namespace token read the GPU list: %d" % status)
    status, text = c.api("PATCH", "/apis/tessera.io/v1/queues/team-b-cq",
                         {"spec": {"stopPolicy": "Hold"}}, "application/merge-patch+json")
    if status != 403:
        fail("a namespace token closed a queue: %d %s" % (status, text))
    c.go("#/queues")
    c.wait("team-a's queues view", lambda: "local queues" in c.d.find_element(By.ID, "view").text)
    if c.css(".qnode-head button.act"):
        fail("a namespace token is offered to close or open queues")
    c.go("#/jobs")
    c.wait("team-a's jobs", lambda: len(c.css('tr[data-job="team-a/tenant-job"]')) == 1)
    if c.css('tr[data-job^="default/"]'):
        fail("a namespace token sees default's jobs")
    c.go("#/waiting")
    c.wait("team-a's waiting view", lambda: "waiting" in c.d.find_element(By.ID, "view").text)
    if c.css('tr[data-job^="default/"]'):
        fail("a namespace token sees default's waiting jobs")
    c.shot("09-namespace-waiting")
    print("console: every check passed; screenshots in " + a.shots)


if __name__ == "__main__":
    main()
