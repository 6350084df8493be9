// The console's shell: sign-in, navigation between views (#/gpus, #/queues, #/waiting, #/jobs,
// #/job/NS/NAME, #/usage), and the live collections views share.
import {ApiError, setToken, token, whoAmI} from './api.js';
import {Collection} from './live.js';
import {gpuMapView} from './gpumap.js';
import {jobView, jobsView} from './job.js';
import {queuesView} from './queues.js';
import {usageView} from './usage.js';
import {waitingView} from './waiting.js';

const views = {gpus: gpuMapView, queues: queuesView, waiting: waitingView, jobs: jobsView,
               job: jobView, usage: usageView};

// What every view reads: who signed in, and the watched collections (started on first use).
export const session = {
  who: null,
  banner: (text) => banner(text),
  collections: new Map(),
  collection(path) {
    let c = this.collections.get(path);
    if (!c) {
      c = new Collection(path).start();
      this.collections.set(path, c);
    }
    return c;
  },
  // Jobs: every namespace's for the admin, the token's own for a namespace token.
  jobsPath() {
    return this.who.admin ? '/apis/tessera.io/v1/jobs'
                          : '/apis/tessera.io/v1/namespaces/' +
                                encodeURIComponent(this.who.namespace) + '/jobs';
  },
};

let current = null;  // the view shown: {dispose()}

export function banner(text) {
  const b = document.getElementById('banner');
  b.textContent = text || '';
  b.hidden = !text;
}

function route() {
  if (!session.who) return;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  const name = views[parts[0]] ? parts[0] : 'gpus';
  if (current && current.dispose) current.dispose();
  const root = document.getElementById('view');
  root.replaceChildren();
  root.dataset.view = name;
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.view === name ||
                                     (name === 'job' && a.dataset.view === 'jobs'));
  }
  banner('');
  current = views[name](root, session, parts.slice(1));
}

async function signIn(t) {
  setToken(t);
  try {
    session.who = await whoAmI();
  } catch (e) {
    setToken('');
    session.who = null;
    throw e;
  }
  document.getElementById('signin').hidden = true;
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  document.getElementById('who').textContent =
      session.who.admin ? 'admin' : 'namespace ' + session.who.namespace;
  document.body.classList.toggle('admin', session.who.admin);
  route();
}

function signOut() {
  setToken('');
  for (const c of session.collections.values()) c.close();
  session.collections.clear();
  session.who = null;
  if (current && current.dispose) current.dispose();
  current = null;
  document.getElementById('view').replaceChildren();
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  document.getElementById('who').textContent = '';
  document.getElementById('signin').hidden = false;
}

function start() {
  const form = document.getElementById('signin');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = document.getElementById('token');
    const err = document.getElementById('signin-error');
    err.textContent = '';
    try {
      await signIn(input.value.trim());
      input.value = '';
    } catch (e) {
      err.textContent = e instanceof ApiError && e.status === 401
                            ? 'The server does not know this token.'
                            : 'Sign-in failed: ' + e.message;
    }
  });
  document.getElementById('signout').addEventListener('click', signOut);
  window.addEventListener('hashchange', route);
  if (token()) {
    signIn(token()).catch(() => signOut());
  } else {
    signOut();
  }
}

start();
