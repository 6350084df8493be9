// Queues: per queue and flavor its nominal quota, use, borrowing, lending and waiting work; the
// cohort tree with fair-sharing weights and current shares, and what each weight deserves
// against what it holds; each queue's state, closed and opened by the admin. The figures come
// from the scheduling loop's last cycle (GET /apis/tessera.io/v1/quotas), read again when Jobs
// or Queues change, at most once a second. A namespace token sees its LocalQueues.
import {get, request} from './api.js';
import {h, table} from './dom.js';

// The quota tree counts GPUs and CPUs in thousandths (a share is a fraction of a card) and
// memory in MiB.
function fmt(v, resource) {
  if (v === null || v === undefined) return '—';
  if (resource === 'memory') return Math.round(v / 1024) + 'Gi';
  return String(Math.round(v) / 1000);
}

function bar(used, of) {
  const track = h('span', {class: 'track'});
  const fill = h('span', {class: 'bar' + (used > of ? ' over' : '')});
  fill.style.width = (of > 0 ? Math.min(100, (100 * used) / of) : used > 0 ? 100 : 0) + '%';
  track.append(fill);
  return h('span', {class: 'meter alloc', title: used + ' of ' + of}, track);
}

export function queuesView(root, session) {
  const status = h('p', {class: 'status', text: 'Loading…'});
  const body = h('div');
  root.append(h('div', {class: 'view-head'}, h('h1', {text: 'Queues'})), status, body);
  if (!session.who.admin) return localQueues(root, session, status, body);
  const jobs = session.collection(session.jobsPath());
  const queues = session.collection('/apis/tessera.io/v1/queues');
  let timer = null;
  let disposed = false;

  async function setStop(name, close) {
    const q = queues.items.get('/' + name);
    const ann = (q && q.metadata.annotations) || {};
    if (ann['tessera.io/volcano-queue'] === 'true') {
      // A Volcano queue is closed and opened by a Command, as vcctl does.
      const cmd = 'apiVersion: bus.volcano.sh/v1alpha1\nkind: Command\n' +
                  'metadata: {generateName: console-, namespace: default}\n' +
                  'action: ' + (close ? 'CloseQueue' : 'OpenQueue') + '\n' +
                  'target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: ' +
                  JSON.stringify(name) + '}\n';
      await request('POST', '/apis/tessera.io/v1/apply', cmd, 'application/yaml');
    } else {
      await request('PATCH', '/apis/tessera.io/v1/queues/' + encodeURIComponent(name),
                    {spec: {stopPolicy: close ? 'Hold' : 'None'}}, 'application/merge-patch+json');
    }
    schedule();
  }

  function nodeBlock(n, children) {
    const figures = n.resources.map((f) => h('tr', {},
        h('td', {text: f.flavor}), h('td', {text: f.resource}),
        h('td', {class: 'num nominal', text: fmt(f.nominal, f.resource)}),
        h('td', {class: 'num used', text: fmt(f.used, f.resource)}),
        h('td', {class: 'num borrowed', text: fmt(f.borrowed, f.resource)}),
        h('td', {class: 'num lent', text: fmt(f.lent, f.resource)}),
        h('td', {class: 'num', text: fmt(f.borrowingLimit, f.resource)}),
        h('td', {class: 'num', text: fmt(f.lendingLimit, f.resource)}),
        h('td', {class: 'num deserved', text: fmt(f.deserved, f.resource)}),
        h('td', {}, bar(f.used, f.deserved))));
    const stopped = n.kind === 'Queue' && n.stopPolicy && n.stopPolicy !== 'None';
    const q = n.kind === 'Queue' ? queues.items.get('/' + n.name) : null;
    const volcano = q && (q.metadata.annotations || {})['tessera.io/volcano-queue'] === 'true';
    const head = h('div', {class: 'qnode-head'},
        h('span', {class: 'qname', text: n.name}),
        h('span', {class: 'qkind', text: n.kind === 'Cohort' ? 'cohort' : volcano ? 'Volcano queue'
                                                                               : 'queue'}),
        h('span', {class: 'qweight', text: 'weight ' + n.weight}),
        h('span', {class: 'qshare', text: 'share ' + n.share.toFixed(3)}),
        n.kind === 'Queue' ? h('span', {class: 'qwaiting', text: n.waiting + ' waiting'}) : null,
        n.kind === 'Queue' ? h('span', {class: 'badge ' + (stopped ? 'warn' : 'ok'),
                                        text: stopped ? (volcano ? 'Closed' : n.stopPolicy)
                                                      : 'Open'}) : null,
        n.kind === 'Queue' && n.name !== 'tessera-unqueued'
            ? h('button', {type: 'button', class: 'act', text: stopped ? 'Open' : 'Close',
                           title: stopped ? 'Let the queue admit work again'
                                          : 'Admit nothing new from this queue (stopPolicy Hold)',
                           onclick: () => setStop(n.name, !stopped).catch((e) =>
                               session.banner((stopped ? 'Open' : 'Close') + ' ' + n.name + ': ' +
                                              e.message))})
            : null);
    return h('li', {class: 'qnode ' + n.kind.toLowerCase(), dataset: {queue: n.name}}, head,
             figures.length ? table(['Flavor', 'Resource', 'Nominal', 'Used', 'Borrowed', 'Lent',
                                     'Borrow limit', 'Lend limit', 'Deserved', 'Used / deserved'],
                                    figures, {class: 'grid figures'})
                            : null,
             n.stopReason ? h('p', {class: 'note', text: n.stopReason}) : null,
             children.length ? h('ul', {class: 'qtree'}, children) : null);
  }

  async function load() {
    timer = null;
    try {
      const r = await get('/apis/tessera.io/v1/quotas');
      if (disposed) return;
      const byParent = new Map();
      for (const n of r.items) {
        const p = n.cohort || '';
        if (!byParent.has(p)) byParent.set(p, []);
        byParent.get(p).push(n);
      }
      const build = (n) => nodeBlock(n, n.kind === 'Cohort'
                                            ? (byParent.get(n.name) || []).map(build) : []);
      const roots = (byParent.get('') || []).map(build);
      status.textContent = 'As the scheduler saw them at ' + r.metadata.reportedAt;
      body.replaceChildren(h('ul', {class: 'qtree root'}, roots));
    } catch (e) {
      status.textContent = 'Could not read the queues: ' + e.message;
    }
  }

  function schedule() {
    if (!timer && !disposed) timer = setTimeout(load, 1000);
  }
  const offs = [jobs.subscribe(schedule), queues.subscribe(schedule)];
  load();
  return {
    dispose() {
      disposed = true;
      for (const o of offs) o();
      if (timer) clearTimeout(timer);
    },
  };
}

// A namespace token: its LocalQueues with Kueue's counts (the ClusterQueues are the admin's).
function localQueues(root, session, status, body) {
  const path = '/apis/kueue.x-k8s.io/v1beta1/namespaces/' + encodeURIComponent(session.who.namespace) +
               '/localqueues';
  const lqs = session.collection(path);
  function draw() {
    const rows = [...lqs.items.values()].map((q) => {
      const st = q.status || {};
      return h('tr', {dataset: {queue: q.metadata.name}}, h('td', {text: q.metadata.name}),
               h('td', {text: (q.spec || {}).clusterQueue || ''}),
               h('td', {class: 'num', text: String(st.pendingWorkloads || 0)}),
               h('td', {class: 'num', text: String(st.admittedWorkloads || 0)}));
    });
    status.textContent = lqs.error && !lqs.ready ? lqs.error.message : '';
    body.replaceChildren(rows.length ? table(['Local queue', 'Cluster queue', 'Waiting', 'Admitted'],
                                             rows, {class: 'grid'})
                                     : h('p', {class: 'status', text: 'No local queues.'}));
  }
  const off = lqs.subscribe(draw);
  if (lqs.ready) draw();
  return {dispose: off};
}
