// Objects of one kind kept current from the API's watch (api.js listAndWatch). Listeners are
// called once per animation frame at most, with the keys ("ns/name") that changed, or null
// when everything may have (a new list).
import {listAndWatch} from './api.js';

export function keyOf(o) {
  const m = o.metadata || {};
  return (m.namespace || '') + '/' + m.name;
}

export class Collection {
  constructor(path) {
    this.path = path;
    this.items = new Map();
    this.ready = false;
    this.error = null;
    this.listeners = new Set();
    this.changed = new Set();
    this.all = false;
    this.scheduled = false;
    this.stop = null;
  }

  start() {
    if (this.stop) return this;
    this.stop = listAndWatch(this.path, {
      onReset: (items) => {
        this.items = new Map(items.map((o) => [keyOf(o), o]));
        this.ready = true;
        this.error = null;
        this.emit(null);
      },
      onEvent: (type, o) => {
        const k = keyOf(o);
        if (type === 'DELETED') this.items.delete(k);
        else this.items.set(k, o);
        this.emit(k);
      },
      onError: (e) => {
        this.error = e;
        this.emit(null);
      },
    });
    return this;
  }

  close() {
    if (this.stop) this.stop();
    this.stop = null;
    this.listeners.clear();
  }

  subscribe(fn) {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  emit(key) {
    if (key === null) this.all = true;
    else this.changed.add(key);
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      const keys = this.all ? null : this.changed;
      this.all = false;
      this.changed = new Set();
      for (const fn of this.listeners) fn(keys);
    });
  }
}
