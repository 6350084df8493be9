// Waiting work: every pending job with the scheduler's own reason, its position in its queue,
// whether it can fit at all, and how long it has waited. The order comes from the scheduling
// loop's last cycle (GET /apis/tessera.io/v1/pendingworkloads); it is read again when a Job
// changes (the watch), at most once a second.
import {get} from './api.js';
import {h, jobHref, since, table} from './dom.js';

export function waitingView(root, session) {
  const jobs = session.collection(session.jobsPath());
  const status = h('p', {class: 'status', text: 'Loading…'});
  const body = h('div');
  root.append(h('div', {class: 'view-head'}, h('h1', {text: 'Waiting work'})), status, body);
  let timer = null;
  let disposed = false;

  async function load() {
    timer = null;
    try {
      const q = session.who.admin ? '' : '?namespace=' + encodeURIComponent(session.who.namespace);
      const r = await get('/apis/tessera.io/v1/pendingworkloads' + q);
      if (disposed) return;
      const now = Date.now();
      const rows = r.items.map((w) => {
        const m = w.metadata;
        const job = jobs.items.get(m.namespace + '/' + m.name);
        const created = job ? Date.parse(job.metadata.creationTimestamp) : NaN;
        const fits = w.fitsWhenRunningWorkEnds;  // absent: not checked this cycle
        return h('tr', {dataset: {job: m.namespace + '/' + m.name}},
                 h('td', {text: m.namespace}),
                 h('td', {}, h('a', {href: jobHref(m.namespace, m.name), text: m.name})),
                 h('td', {text: w.queue || '—'}),
                 h('td', {class: 'position num',
                          text: w.positionInClusterQueue ? w.positionInClusterQueue + ' of ' +
                                                               w.waitingInClusterQueue : '—'}),
                 h('td', {class: 'num', text: String(w.priority)}),
                 h('td', {class: fits === undefined ? 'unknown' : fits ? 'fits' : 'never',
                          text: fits === undefined ? 'not checked (not its queue\'s head)'
                                : fits ? 'yes, once running work ends'
                                       : 'no: not even with all running work ended'}),
                 h('td', {text: isNaN(created) ? '—' : since(created, now)}),
                 h('td', {class: 'reason', text: w.reason}));
      });
      status.textContent = r.metadata.total + ' waiting · ordered ' + r.metadata.orderedAt;
      body.replaceChildren(rows.length ? table(['Namespace', 'Job', 'Queue', 'Position', 'Priority',
                                                'Can fit', 'Waited', 'Reason'], rows,
                                               {class: 'grid waiting'})
                                       : h('p', {class: 'status', text: 'Nothing waits.'}));
    } catch (e) {
      status.textContent = 'Could not read the waiting work: ' + e.message;
    }
  }

  const off = jobs.subscribe(() => {
    if (!timer && !disposed) timer = setTimeout(load, 1000);
  });
  load();
  return {
    dispose() {
      disposed = true;
      off();
      if (timer) clearTimeout(timer);
    },
  };
}
