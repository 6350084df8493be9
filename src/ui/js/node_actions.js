// The admin's changes to a Node from the console: a GPU's cordon (the annotation
// tessera.io/cordoned-gpus, as `tessera cordon NODE --gpu G`) and the node's
// (spec.unschedulable), each a read, a change and a write at the version read.
import {get, request} from './api.js';

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

// Uncordoning lifts the scheduling loop's quarantine too, as `tessera uncordon` does: the
// GPU's entry (`index`), or the node's reboot mark (index null), leaves the annotation
// tessera.io/gpu-quarantine; what else it holds (how far the Xids were read) stays.
function liftQuarantine(node, index) {
  const key = 'tessera.io/gpu-quarantine';
  const ann = node.metadata.annotations || {};
  if (!ann[key]) return false;
  let q;
  try {
    q = JSON.parse(ann[key]);
  } catch (e) {
    return false;  // not one: the server says so when the node is read
  }
  const before = JSON.stringify(q);
  if (index === null) delete q.reboot;
  else if (Array.isArray(q.gpus)) q.gpus = q.gpus.filter((g) => g.index !== index);
  if (Array.isArray(q.gpus) && !q.gpus.length) delete q.gpus;
  if (JSON.stringify(q) === before) return false;
  if (Object.keys(q).length) ann[key] = JSON.stringify(q);
  else delete ann[key];
  return true;
}

export function cordonGpu(name, uuid, index, on) {
  const key = 'tessera.io/cordoned-gpus';
  return updateNode(name, (node) => {
    const ann = node.metadata.annotations || (node.metadata.annotations = {});
    const lifted = !on && liftQuarantine(node, index);
    const list = (ann[key] || '').split(',').map((s) => s.trim()).filter(Boolean);
    const there = list.includes(uuid) || list.includes(String(index));
    if (there === on) return lifted;
    const next = on ? list.concat([uuid]) : list.filter((u) => u !== uuid && u !== String(index));
    if (next.length) ann[key] = next.join(',');
    else delete ann[key];
    return true;
  });
}

export function cordonNode(name, on) {
  return updateNode(name, (node) => {
    node.spec = node.spec || {};
    const lifted = !on && liftQuarantine(node, null);
    if (Boolean(node.spec.unschedulable) === on) return lifted;
    node.spec.unschedulable = on;
    return true;
  });
}
