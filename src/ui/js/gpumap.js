// The GPU map: every node and, inside it, its cards. Each card shows its mode (whole, MIG with
// its instances, shares, time-slice replicas), who holds each part (namespace/job/pod, a link to
// the job), health, cordon and quarantine, temperature, power, and utilisation against
// allocation; allocated cards that do no work stand out. Live: Nodes, Jobs and
// GpuSharingConfigs are watched; a change redraws the cards it touches only.
//
// The admin sees every card (GET /apis/tessera.io/v1/gpus gives each card's sharing as the
// scheduler applies it). A namespace token reads no Nodes: it sees the cards its own Jobs hold.
import {get, request} from './api.js';
import {h, jobHref} from './dom.js';

const LOW_USE_PCT = 5;  // the server's default --idle-threshold

export function gpuMapView(root, session) {
  const admin = session.who.admin;
  const jobs = session.collection(session.jobsPath());
  const nodes = admin ? session.collection('/apis/tessera.io/v1/nodes') : null;
  const configs = admin ? session.collection('/apis/tessera.io/v1/gpusharingconfigs') : null;

  const layouts = new Map();  // "node/index" -> the card's entry of /gpus
  const nodeSig = new Map();  // node -> what /gpus depends on, to refetch when it changes
  const holders = new Map();  // "node/index" -> [{ns, job, pod, device, queue, idleSince}]
  const jobCards = new Map();  // job key -> ["node/index", ...] it holds
  const cardEls = new Map();   // "node/index" -> element
  const nodeEls = new Map();   // node -> section element
  const filter = {model: '', label: '', ns: '', queue: ''};
  let disposed = false;
  let built = false;

  const status = h('p', {class: 'status', text: 'Loading…'});
  const map = h('div', {id: 'gpumap', class: 'gpumap'});
  const controls = filterBar();
  root.append(h('div', {class: 'view-head'}, h('h1', {text: 'GPU map'}), controls.el), status,
              legend(), map);

  // --- data -------------------------------------------------------------------------------
  function indexJob(key, job) {
    for (const ck of jobCards.get(key) || []) {
      const list = (holders.get(ck) || []).filter((x) => x.key !== key);
      if (list.length) holders.set(ck, list);
      else holders.delete(ck);
    }
    jobCards.delete(key);
    if (!job) return;
    const st = job.status || {};
    if (st.phase !== 'Admitted') return;
    const cards = [];
    const meta = job.metadata;
    for (const pod of st.pods || []) {
      for (const d of pod.devices || []) {
        const ck = pod.node + '/' + (d.index !== undefined ? d.index : d.gpu);
        cards.push(ck);
        const list = holders.get(ck) || [];
        list.push({key, ns: meta.namespace, job: meta.name, pod: pod.name, device: d,
                   queue: (job.spec && job.spec.queue) || st.queue || '',
                   idleSince: st.idle && st.idle.since});
        holders.set(ck, list);
        if (!admin && !layouts.has(ck)) {
          // A namespace token's card: what its own devices say of it.
          layouts.set(ck, {node: pod.node, index: d.index, uuid: d.uuid, model: '',
                           mode: {whole: 'exclusive', mig: 'mig', share: 'shared',
                                  replica: 'timeslice'}[d.kind] || 'exclusive',
                           replicas: d.replicas, mig: [], health: 'Healthy'});
        }
      }
    }
    jobCards.set(key, cards);
  }

  function signature(node) {
    const m = node.metadata || {};
    const st = node.status || {};
    return JSON.stringify([m.labels, m.annotations, node.spec, st.gpus]);
  }

  async function fetchLayouts(nodeName) {
    const q = nodeName ? '?node=' + encodeURIComponent(nodeName) : '';
    const list = await get('/apis/tessera.io/v1/gpus' + q);
    if (nodeName) {
      for (const k of [...layouts.keys()]) if (k.startsWith(nodeName + '/')) layouts.delete(k);
    } else {
      layouts.clear();
    }
    for (const g of list.items) layouts.set(g.node + '/' + g.index, g);
  }

  // --- drawing ----------------------------------------------------------------------------
  function telemetryOf(ck) {
    if (!nodes) return null;
    const [node, index] = splitKey(ck);
    const n = nodes.items.get('/' + node);
    const t = n && n.status && n.status.telemetry;
    return (t || []).find((x) => String(x.index) === index) || null;
  }

  // A part of a card: a link to the job holding it, or a free part. `label` says what the part
  // is (a MIG profile, a share's percent); a free part with a label shows the label alone.
  function partLink(holder, cls, label, grow) {
    const e = holder
        ? h('a', {class: cls + ' held', href: jobHref(holder.ns, holder.job),
                  title: holder.ns + '/' + holder.job + '/' + holder.pod,
                  dataset: {ns: holder.ns, job: holder.job, pod: holder.pod}},
            h('span', {class: 'who', text: holder.job}), label ? h('span', {class: 'what',
                                                                           text: label}) : null)
        : h('span', {class: cls + ' free', title: 'free'},
            h('span', {class: label ? 'what' : 'who', text: label || 'free'}));
    if (grow) e.style.flexGrow = String(grow);
    return e;
  }

  function parts(g, held) {
    const box = h('div', {class: 'parts mode-' + g.mode});
    if (g.mode === 'mig') {
      const total = g.memorySlices || 8;
      let at = 0;
      for (const m of [...(g.mig || [])].sort((a, b) => a.start - b.start)) {
        if (m.start > at) box.append(gap(m.start - at));
        const who = held.find((x) => x.device.kind === 'mig' && x.device.migInstance === m.instance);
        // "1g" on the slice; its whole profile and holder in the tooltip.
        const e = partLink(who, 'part slice', m.profile.split('.')[0], m.memorySlices);
        e.dataset.instance = m.instance;
        e.dataset.profile = m.profile;
        e.title = 'MIG ' + m.profile + ' (instance ' + m.instance + ')' +
                  (who ? ': ' + who.ns + '/' + who.job + '/' + who.pod : ': free');
        box.append(e);
        at = m.start + m.memorySlices;
      }
      if (at < total) box.append(gap(total - at));
      if (!(g.mig || []).length) {
        for (const x of held) box.append(partLink(x, 'part slice', x.device.migProfile, 1));
      }
    } else if (g.mode === 'shared') {
      let used = 0;
      for (const x of held) {
        const milli = x.device.milli || x.device.gpuMilli || 0;
        used += milli;
        box.append(partLink(x, 'part share', (milli / 10).toFixed(0) + '%', Math.max(milli, 1)));
      }
      if (used < 1000) box.append(partLink(null, 'part share', '', 1000 - used));
    } else if (g.mode === 'timeslice') {
      const n = g.replicas || held.length;
      const shown = Math.min(n, 16);
      for (let i = 0; i < shown; ++i) box.append(partLink(held[i], 'part replica', '', 1));
      if (n > shown) box.append(h('span', {class: 'more', text: '+' + (n - shown)}));
    } else {
      box.append(partLink(held[0], 'part whole', '', 1));
    }
    return box;
  }

  function gap(slices) {
    const e = h('span', {class: 'part gap', title: 'memory slices not in the layout'});
    e.style.flexGrow = String(slices);
    return e;
  }

  function allocationPct(g, held) {
    let milli = 0;
    for (const x of held) milli += x.device.gpuMilli || (x.device.kind === 'whole' ? 1000 : 0);
    return Math.min(100, Math.round(milli / 10));
  }

  function cordonButton(g) {
    const on = !g.cordoned;
    return h('button', {class: 'act', type: 'button', text: on ? 'Cordon' : 'Uncordon',
                        title: (on ? 'Take no new work on' : 'Let new work onto') + ' GPU ' +
                                   g.index + ' of ' + g.node,
                        onclick: (ev) => {
                          ev.preventDefault();
                          ev.stopPropagation();
                          cordonGpu(g.node, g.uuid, on).catch((e) => session.banner(e.message));
                        }});
  }

  function drawCard(ck) {
    const g = layouts.get(ck);
    const held = holders.get(ck) || [];
    const t = telemetryOf(ck);
    const alloc = allocationPct(g, held);
    const util = t ? t.utilizationPct : null;
    const idleSince = held.map((x) => x.idleSince).find(Boolean);
    const lowUse = alloc > 0 && util !== null && util < LOW_USE_PCT;
    const classes = ['card'];
    if (idleSince) classes.push('idle');
    else if (lowUse) classes.push('low-use');
    if (g.health === 'Unhealthy') classes.push('unhealthy');
    if (g.cordoned) classes.push('cordoned');
    if (g.quarantine) classes.push('quarantined');
    if (!held.length) classes.push('empty');
    const badges = [];
    if (idleSince) badges.push(h('span', {class: 'badge idle', text: 'idle since ' + idleSince}));
    else if (lowUse) badges.push(h('span', {class: 'badge low-use', text: 'allocated, unused'}));
    if (g.health === 'Unhealthy') badges.push(h('span', {class: 'badge bad', text: 'unhealthy'}));
    if (g.quarantine) {
      badges.push(h('span', {class: 'badge bad', text: 'quarantined (Xid ' + g.quarantine.xid + ')',
                             title: 'since ' + g.quarantine.since}));
    }
    if (g.cordoned) badges.push(h('span', {class: 'badge warn', text: 'cordoned'}));
    const modeText = {exclusive: 'whole', mig: 'MIG', shared: g.mps ? 'shares (MPS)' : 'shares',
                      timeslice: 'time-slice ×' + (g.replicas || '?')}[g.mode] || g.mode;
    const el = h('div', {class: classes.join(' '), dataset: {node: g.node, gpu: String(g.index)},
                         title: g.uuid || ''},
                 h('div', {class: 'card-head'}, h('span', {class: 'gpu-id', text: 'GPU ' + g.index}),
                   h('span', {class: 'mode', text: modeText})),
                 parts(g, held),
                 h('div', {class: 'use'},
                   meter('alloc', alloc), util === null ? null : meter('util', util)),
                 t ? h('div', {class: 'tele', text: t.temperatureC + '°C · ' +
                                    Math.round((t.powerMw || 0) / 1000) + ' W · ' +
                                    Math.round((t.memoryUsedMiB || 0) / 1024) + '/' +
                                    Math.round((g.memoryMiB || 0) / 1024) + ' GiB'})
                   : null,
                 badges.length ? h('div', {class: 'badges'}, badges) : null,
                 admin ? cordonButton(g) : null);
    el.dataset.models = g.model || '';
    return el;
  }

  function meter(kind, pct) {
    const bar = h('span', {class: 'bar'});
    bar.style.width = pct + '%';
    return h('span', {class: 'meter ' + kind, title: kind + ' ' + pct + '%'},
             h('span', {class: 'label', text: kind + ' ' + pct + '%'}), h('span', {class: 'track'}, bar));
  }

  function nodeHeader(name) {
    const n = nodes ? nodes.items.get('/' + name) : null;
    const cordoned = n && n.spec && n.spec.unschedulable;
    const gpus = [...layouts.values()].filter((g) => g.node === name);
    const models = [...new Set(gpus.map((g) => g.model).filter(Boolean))].join(', ');
    return h('div', {class: 'node-head'},
             h('span', {class: 'node-name', text: name}),
             h('span', {class: 'node-info', text: gpus.length + ' GPU' +
                                                  (gpus.length === 1 ? '' : 's') +
                                                  (models ? ' · ' + models : '')}),
             cordoned ? h('span', {class: 'badge warn', text: 'node cordoned'}) : null,
             admin ? h('button', {class: 'act', type: 'button',
                                  text: cordoned ? 'Uncordon node' : 'Cordon node',
                                  onclick: () => cordonNode(name, !cordoned)
                                                     .catch((e) => session.banner(e.message))})
                   : null);
  }

  function drawNode(name) {
    const keys = [...layouts.keys()].filter((k) => splitKey(k)[0] === name)
                     .sort((a, b) => Number(splitKey(a)[1]) - Number(splitKey(b)[1]));
    const grid = h('div', {class: 'cards'});
    for (const ck of keys) {
      const c = drawCard(ck);
      cardEls.set(ck, c);
      grid.append(c);
    }
    return h('section', {class: 'node', dataset: {node: name}}, nodeHeader(name), grid);
  }

  function drawAll() {
    const t0 = performance.now();
    cardEls.clear();
    nodeEls.clear();
    const byNode = new Map();
    for (const k of layouts.keys()) byNode.set(splitKey(k)[0], true);
    const frag = document.createDocumentFragment();
    for (const name of [...byNode.keys()].sort()) {
      const s = drawNode(name);
      nodeEls.set(name, s);
      frag.append(s);
    }
    map.replaceChildren(frag);
    applyFilter();
    controls.refresh();
    built = true;
    status.textContent = layouts.size
        ? layouts.size + ' GPUs on ' + byNode.size + ' node' + (byNode.size === 1 ? '' : 's')
        : (admin ? 'No GPUs: no node has registered.' : 'Your namespace holds no GPU now.');
    // Read by the browser tests and the benchmark: the build, then the browser's layout.
    requestAnimationFrame(() => {
      const ms = performance.now() - t0;
      performance.measure('gpumap-draw', {start: t0, end: performance.now()});
      window.tesseraPerf = Object.assign(window.tesseraPerf || {}, {gpuMapDrawMs: ms,
                                                                    gpuMapCards: layouts.size});
    });
  }

  function redraw(cardKeys, nodeNames) {
    const t0 = performance.now();
    for (const name of nodeNames) {
      const old = nodeEls.get(name);
      if (!old) continue;
      old.firstChild.replaceWith(nodeHeader(name));
    }
    for (const ck of cardKeys) {
      const old = cardEls.get(ck);
      if (!old || !layouts.has(ck)) continue;
      const fresh = drawCard(ck);
      old.replaceWith(fresh);
      cardEls.set(ck, fresh);
      matchCard(fresh, ck);
    }
    window.tesseraPerf = Object.assign(window.tesseraPerf || {},
                                       {lastUpdateMs: performance.now() - t0,
                                        lastUpdateCards: cardKeys.size});
  }

  // --- filters ----------------------------------------------------------------------------
  function matches(ck) {
    const g = layouts.get(ck);
    const held = holders.get(ck) || [];
    if (filter.model && g.model !== filter.model) return false;
    if (filter.ns && !held.some((x) => x.ns === filter.ns)) return false;
    if (filter.queue && !held.some((x) => x.queue === filter.queue)) return false;
    if (filter.label) {
      const n = nodes && nodes.items.get('/' + g.node);
      const labels = (n && n.metadata.labels) || {};
      const [k, v] = filter.label.split('=');
      if (!(k in labels) || (v !== undefined && labels[k] !== v)) return false;
    }
    return true;
  }

  function matchCard(el, ck) {
    el.classList.toggle('dim', !matches(ck));
  }

  function applyFilter() {
    const any = filter.model || filter.label || filter.ns || filter.queue;
    const shown = new Map();
    for (const [ck, el] of cardEls) {
      const ok = matches(ck);
      el.classList.toggle('dim', !ok);
      if (ok) shown.set(splitKey(ck)[0], true);
    }
    for (const [name, s] of nodeEls) s.hidden = Boolean(any) && !shown.has(name);
  }

  function filterBar() {
    const model = h('select', {'aria-label': 'model'});
    const ns = h('select', {'aria-label': 'namespace'});
    const queue = h('select', {'aria-label': 'queue'});
    const label = h('input', {type: 'search', placeholder: 'node label, e.g. zone=a',
                              'aria-label': 'node label'});
    function fill(sel, all, values) {
      const was = sel.value;
      sel.replaceChildren(h('option', {value: '', text: all}),
                          ...[...values].sort().map((v) => h('option', {value: v, text: v})));
      sel.value = [...values].includes(was) ? was : '';
    }
    const onChange = () => {
      filter.model = model.value;
      filter.ns = ns.value;
      filter.queue = queue.value;
      filter.label = label.value.trim();
      applyFilter();
    };
    for (const e of [model, ns, queue]) e.addEventListener('change', onChange);
    label.addEventListener('input', onChange);
    return {
      el: h('div', {class: 'filters'}, model, admin ? label : null, ns, queue),
      refresh() {
        fill(model, 'every model', new Set([...layouts.values()].map((g) => g.model).filter(Boolean)));
        const all = [...holders.values()].flat();
        fill(ns, 'every namespace', new Set(all.map((x) => x.ns)));
        fill(queue, 'every queue', new Set(all.map((x) => x.queue).filter(Boolean)));
      },
    };
  }

  // --- admin actions ----------------------------------------------------------------------
  // Read, change, write back at the version read (a conflicting write is tried again).
  async function updateNode(name, change) {
    for (let attempt = 0; attempt < 5; ++attempt) {
      const node = await get('/apis/tessera.io/v1/nodes/' + encodeURIComponent(name));
      if (!change(node)) return;
      try {
        await request('PUT', '/apis/tessera.io/v1/nodes/' + encodeURIComponent(name), node);
        return;
      } catch (e) {
        if (e.status !== 409) throw e;
      }
    }
    throw new Error('node ' + name + ' kept changing; try again');
  }

  function cordonGpu(name, uuid, on) {
    const key = 'tessera.io/cordoned-gpus';
    return updateNode(name, (node) => {
      const ann = node.metadata.annotations || (node.metadata.annotations = {});
      const list = (ann[key] || '').split(',').map((s) => s.trim()).filter(Boolean);
      const there = list.includes(uuid);
      if (there === on) return false;
      const next = on ? list.concat([uuid]) : list.filter((u) => u !== uuid);
      if (next.length) ann[key] = next.join(',');
      else delete ann[key];
      return true;
    });
  }

  function cordonNode(name, on) {
    return updateNode(name, (node) => {
      node.spec = node.spec || {};
      if (Boolean(node.spec.unschedulable) === on) return false;
      node.spec.unschedulable = on;
      return true;
    });
  }

  // --- live -------------------------------------------------------------------------------
  function ready() {
    return jobs.ready && (!admin || (nodes.ready && configs.ready));
  }

  let loading = null;
  async function reloadAll() {
    if (admin) {
      await fetchLayouts('');
      for (const [k, n] of nodes.items) nodeSig.set(k, signature(n));
    }
    holders.clear();
    jobCards.clear();
    if (!admin) layouts.clear();
    for (const [k, j] of jobs.items) indexJob(k, j);
    drawAll();
  }

  function fullReload() {
    if (loading) return;
    loading = reloadAll().catch((e) => {
      status.textContent = 'Could not read the GPUs: ' + e.message;
    }).finally(() => {
      loading = null;
    });
  }

  const unsubscribe = [];
  unsubscribe.push(jobs.subscribe((keys) => {
    if (!ready() || disposed) return;
    if (!built || keys === null || !admin) return fullReload();
    const cards = new Set();
    for (const k of keys) {
      for (const ck of jobCards.get(k) || []) cards.add(ck);
      indexJob(k, jobs.items.get(k));
      for (const ck of jobCards.get(k) || []) cards.add(ck);
    }
    redraw(cards, []);
    controls.refresh();
  }));
  if (admin) {
    unsubscribe.push(nodes.subscribe(async (keys) => {
      if (!ready() || disposed) return;
      if (!built || keys === null) return fullReload();
      const cards = new Set();
      const heads = [];
      for (const k of keys) {
        const n = nodes.items.get(k);
        const name = k.slice(1);
        const sig = n ? signature(n) : null;
        if (!n || !nodeEls.has(name) || sig !== nodeSig.get(k)) {
          // Added, removed, relabelled, cordoned, quarantined: its layout is read again.
          nodeSig.set(k, sig);
          if (!n || !nodeEls.has(name)) return fullReload();
          await fetchLayouts(name);
          heads.push(name);
        }
        for (const ck of layouts.keys()) if (splitKey(ck)[0] === name) cards.add(ck);
      }
      redraw(cards, heads);
    }));
    unsubscribe.push(configs.subscribe(() => {
      if (ready() && !disposed) fullReload();
    }));
  }
  if (ready()) fullReload();

  return {
    dispose() {
      disposed = true;
      for (const u of unsubscribe) u();
    },
  };
}

function splitKey(ck) {
  const i = ck.lastIndexOf('/');
  return [ck.slice(0, i), ck.slice(i + 1)];
}

function legend() {
  return h('div', {class: 'legend'},
           h('span', {class: 'swatch held'}), 'held',
           h('span', {class: 'swatch free'}), 'free',
           h('span', {class: 'swatch idle'}), 'allocated, idle',
           h('span', {class: 'swatch bad'}), 'unhealthy or quarantined',
           h('span', {class: 'swatch warn'}), 'cordoned');
}
