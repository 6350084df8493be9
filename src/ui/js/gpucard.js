// One GPU card of the map: its head (index, mode), its parts (whole; MIG instances placed by
// memory slice, gaps where the layout leaves slices; shares by fraction; time-slice replicas),
// each a link to the job holding it or free; allocation against utilisation on one track;
// telemetry; badges (idle, allocated but unused, unhealthy, quarantined, cordoned).
import {h, jobHref} from './dom.js';

const LOW_USE_PCT = 5;  // the server's default --idle-threshold

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

function cordonButton(g, onCordon) {
  // A quarantined card is cordoned too (the loop's): uncordoning it lifts the quarantine.
  const on = !g.cordoned && !g.quarantine;
  return h('button', {class: 'act', type: 'button', text: on ? 'Cordon' : 'Uncordon',
                      title: (on ? 'Take no new work on' : 'Let new work onto') + ' GPU ' +
                                 g.index + ' of ' + g.node,
                      onclick: (ev) => {
                        ev.preventDefault();
                        ev.stopPropagation();
                        onCordon(g, on);
                      }});
}

// A card: `g` its entry of /gpus, `held` who holds its parts ({ns, job, pod, device,
// idleSince}), `t` its telemetry (or null), `onCordon(g, on)` the admin's cordon (or null: no
// button).
export function drawCard(g, held, t, onCordon) {
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
               use(alloc, util),
               h('div', {class: 'tele', text: 'alloc ' + alloc + '%' +
                                              (util === null ? '' : ' · util ' + util + '%') +
                                              (t ? ' · ' + t.temperatureC + '°C · ' +
                                                       Math.round((t.powerMw || 0) / 1000) +
                                                       ' W · ' +
                                                       Math.round((t.memoryUsedMiB || 0) / 1024) +
                                                       '/' + Math.round((g.memoryMiB || 0) / 1024) +
                                                       ' GiB'
                                                 : '')}),
               badges.length ? h('div', {class: 'badges'}, badges) : null,
               onCordon ? cordonButton(g, onCordon) : null);
  el.dataset.models = g.model || '';
  return el;
}

// Allocation (the wide bar) and utilisation (the thin one inside it), on one track: a card
// allocated and unused shows a full bar with nothing inside.
function use(alloc, util) {
  const a = h('span', {class: 'bar alloc'});
  a.style.width = alloc + '%';
  const track = h('div', {class: 'use', title: 'allocated ' + alloc + '%' +
                                               (util === null ? '' : ', utilised ' + util + '%')},
                  a);
  if (util !== null) {
    const u = h('span', {class: 'bar util'});
    u.style.width = util + '%';
    track.append(u);
  }
  return track;
}

