// Jobs: the list (live), and one job: its pods with their bindings down to the GPU or MIG
// slice, its events as a timeline, its log followed live, its GPU-hours and cost so far, and
// the actions its owner may take (suspend, resume, delete), under the API's own rules.
import {get, openStream, request} from './api.js';
import {h, jobHref, since, table} from './dom.js';

export function jobsView(root, session) {
  const jobs = session.collection(session.jobsPath());
  const body = h('div');
  root.append(h('div', {class: 'view-head'}, h('h1', {text: 'Jobs'})), body);
  function draw() {
    const rows = [...jobs.items.values()]
        .sort((a, b) => (a.metadata.namespace + '/' + a.metadata.name)
                            .localeCompare(b.metadata.namespace + '/' + b.metadata.name))
        .map((j) => {
          const st = j.status || {};
          const gpus = (st.pods || []).reduce((n, p) => n + (p.devices || []).length, 0);
          return h('tr', {dataset: {job: j.metadata.namespace + '/' + j.metadata.name}},
                   h('td', {text: j.metadata.namespace}),
                   h('td', {}, h('a', {href: jobHref(j.metadata.namespace, j.metadata.name),
                                       text: j.metadata.name})),
                   h('td', {text: (j.spec && j.spec.queue) || st.queue || ''}),
                   h('td', {class: 'phase ' + (st.phase || 'New'), text: st.phase || 'New'}),
                   h('td', {class: 'num', text: String(gpus)}),
                   h('td', {text: since(Date.parse(j.metadata.creationTimestamp))}),
                   h('td', {class: 'message', text: st.message || ''}));
        });
    body.replaceChildren(jobs.error && !jobs.ready
                             ? h('p', {class: 'error', text: jobs.error.message})
                             : rows.length ? table(['Namespace', 'Job', 'Queue', 'Phase', 'Devices',
                                                    'Age', 'Message'], rows, {class: 'grid'})
                                           : h('p', {class: 'status', text: 'No jobs.'}));
  }
  const off = jobs.subscribe(draw);
  if (jobs.ready) draw();
  return {dispose: off};
}

function deviceText(d) {
  const gpu = 'GPU ' + (d.index !== undefined ? d.index : d.gpu);
  if (d.kind === 'mig') return gpu + ' MIG ' + d.migProfile + ' (instance ' + d.migInstance + ')';
  if (d.kind === 'share') return gpu + ' share ' + (d.milli / 10) + '% · ' + d.memoryMiB + ' MiB';
  if (d.kind === 'replica') return gpu + ' time-slice replica (of ' + d.replicas + ')';
  return gpu + ' whole';
}

export function jobView(root, session, [ns, name]) {
  const base = '/apis/tessera.io/v1/namespaces/' + encodeURIComponent(ns);
  const path = base + '/jobs/' + encodeURIComponent(name);
  const jobs = session.collection(session.jobsPath());
  const events = session.collection(base + '/events');
  const head = h('div', {class: 'view-head'}, h('h1', {text: ns + '/' + name}));
  const summary = h('div', {class: 'summary'});
  const pods = h('div');
  const timeline = h('ol', {class: 'timeline'});
  const usage = h('p', {class: 'usage'});
  const logPod = h('select', {'aria-label': 'pod'});
  const logBox = h('pre', {class: 'log', id: 'log'});
  const actions = h('div', {class: 'actions'});
  root.append(head, actions, summary,
              h('h2', {text: 'Pods and their devices'}), pods,
              h('h2', {text: 'GPU-hours and cost so far'}), usage,
              h('h2', {text: 'Log'}), h('div', {class: 'log-head'}, logPod), logBox,
              h('h2', {text: 'Events'}), timeline);
  let disposed = false;
  let follow = null;  // AbortController of the log stream
  let following = '';

  function act(label, fn) {
    return h('button', {type: 'button', class: 'act', text: label, onclick: async () => {
      try {
        await fn();
        session.banner('');
      } catch (e) {
        session.banner(label + ': ' + e.message);
      }
    }});
  }

  function drawJob() {
    const j = jobs.items.get(ns + '/' + name);
    if (!j) {
      summary.replaceChildren(h('p', {class: 'status', text: jobs.ready ? 'No such job (deleted?).'
                                                                       : 'Loading…'}));
      return;
    }
    const st = j.status || {};
    const suspended = Boolean(j.spec && j.spec.suspend);
    actions.replaceChildren(
        suspended ? act('Resume', () => patchSuspend(false)) : act('Suspend', () => patchSuspend(true)),
        act('Delete', async () => {
          if (!confirm('Delete job ' + ns + '/' + name + '?')) return;
          await request('DELETE', path);
        }));
    summary.replaceChildren(h('dl', {},
        h('dt', {text: 'Phase'}), h('dd', {class: 'phase ' + (st.phase || 'New'),
                                            text: st.phase || 'New'}),
        h('dt', {text: 'Queue'}), h('dd', {text: (j.spec && j.spec.queue) || st.queue || '—'}),
        h('dt', {text: 'Priority'}), h('dd', {text: String(st.priority || 0)}),
        h('dt', {text: 'Created'}), h('dd', {text: j.metadata.creationTimestamp + ' (' +
                                                   since(Date.parse(j.metadata.creationTimestamp)) +
                                                   ' ago)'}),
        st.idle && st.idle.since ? [h('dt', {text: 'Idle since'}),
                                    h('dd', {class: 'warn', text: st.idle.since})] : null,
        h('dt', {text: 'Message'}), h('dd', {text: st.message || '—'})));
    const rows = (st.pods || []).map((p) => h('tr', {dataset: {pod: p.name}},
        h('td', {text: p.name}), h('td', {text: p.node || '—'}),
        h('td', {}, (p.devices || []).map((d) => h('div', {class: 'device', text: deviceText(d)}))),
        h('td', {text: (p.state && p.state.phase) || 'Starting'}),
        h('td', {class: 'num', text: String((p.state && p.state.restarts) || 0)})));
    pods.replaceChildren(rows.length ? table(['Pod', 'Node', 'Devices', 'State', 'Restarts'], rows,
                                             {class: 'grid'})
                                     : h('p', {class: 'status', text: 'No pod is placed yet.'}));
    const names = (st.pods || []).map((p) => p.name);
    if (names.join() !== [...logPod.options].map((o) => o.value).join()) {
      logPod.replaceChildren(...names.map((n) => h('option', {value: n, text: n})));
      if (names.includes(following)) logPod.value = following;
    }
    if (names.length && !following) followLog(logPod.value);
  }

  function patchSuspend(on) {
    return request('PATCH', path, {spec: {suspend: on}}, 'application/merge-patch+json');
  }

  function drawEvents() {
    const mine = [...events.items.values()]
        .filter((e) => e.spec && e.spec.involvedObject && e.spec.involvedObject.name === name &&
                       e.spec.involvedObject.kind === 'Job')
        .sort((a, b) => (a.spec.time || '').localeCompare(b.spec.time || ''));
    timeline.replaceChildren(...mine.map((e) => h('li', {class: e.spec.type === 'Warning' ? 'warn' : ''},
        h('time', {text: e.spec.time}), h('span', {class: 'reason', text: e.spec.reason}),
        h('span', {class: 'message', text: e.spec.message}))));
  }

  async function followLog(pod) {
    if (follow) follow.abort();
    following = pod;
    logBox.textContent = '';
    if (!pod) return;
    follow = new AbortController();
    try {
      const r = await openStream(path + '/logs?follow=true&pod=' + encodeURIComponent(pod),
                                 follow.signal);
      const reader = r.body.getReader();
      const dec = new TextDecoder();
      for (;;) {
        const {value, done} = await reader.read();
        if (done || disposed) break;
        const atEnd = logBox.scrollTop + logBox.clientHeight >= logBox.scrollHeight - 4;
        logBox.append(dec.decode(value, {stream: true}));
        // Keep the last 200 KiB.
        if (logBox.textContent.length > 200000) logBox.textContent = logBox.textContent.slice(-150000);
        if (atEnd) logBox.scrollTop = logBox.scrollHeight;
      }
    } catch (e) {
      if (e.name !== 'AbortError') logBox.append('\n[' + e.message + ']');
    }
  }
  logPod.addEventListener('change', () => followLog(logPod.value));

  async function drawUsage() {
    try {
      const r = await get('/apis/tessera.io/v1/usage?by=job' +
                          (session.who.admin ? '&namespace=' + encodeURIComponent(ns) : ''));
      const row = (r.items || []).find((x) => x.namespace === ns && x.job === name);
      usage.textContent = row
          ? row.gpuHours.toFixed(3) + ' GPU-hours (' + row.idleGpuHours.toFixed(3) + ' idle) · ' +
                (row.priced ? row.cost.toFixed(2) + ' ' + r.currency : 'no price for its model')
          : 'No GPU-hours recorded yet.';
    } catch (e) {
      usage.textContent = 'Usage: ' + e.message;
    }
  }

  const offs = [jobs.subscribe(drawJob), events.subscribe(drawEvents)];
  if (jobs.ready) drawJob();
  if (events.ready) drawEvents();
  drawUsage();
  const usageTimer = setInterval(drawUsage, 30000);
  return {
    dispose() {
      disposed = true;
      for (const o of offs) o();
      clearInterval(usageTimer);
      if (follow) follow.abort();
    },
  };
}
