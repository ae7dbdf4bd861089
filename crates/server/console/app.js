// The console's shell: who is signed in, the sections, the hash router, and the live feed
// that redraws the section on view when something it shows changed.
import { api, setCsrf, feed } from './api.js';
import { h, attempt, errorText } from './ui.js';
import * as v from './views.js';
import * as scenarios from './scenarios.js';
import * as sb from './sandbox.js';
import * as op from './operator.js';

const ACCOUNT_ROUTES = [
  // [pattern, view, label in the menu, event types that redraw it]
  [/^sms$/, v.smsList, 'SMS', ['sms.']], [/^sms\/([^/]+)$/, v.smsDetail, null, ['sms.']],
  [/^calls$/, v.callList, 'Calls', ['call.']], [/^calls\/([^/]+)$/, v.callDetail, null, ['call.', 'media.recording']],
  [/^scenarios$/, scenarios.list, 'Scenarios', []], [/^scenarios\/([^/]+)$/, scenarios.edit, null, []],
  [/^scenarios\/([^/]+)\/runs\/([^/]+)$/, scenarios.run, null, ['call.', 'sms.']],
  [/^numbers$/, v.numbers, 'Numbers', ['did.']], [/^store$/, v.store, null, []],
  [/^audio$/, v.audioFiles, 'Audio', ['media.library']], [/^recordings$/, v.recordings, 'Recordings', ['media.recording']],
  [/^webhooks$/, v.webhooks, 'Webhooks', []], [/^webhooks\/([^/]+)$/, v.webhookDetail, null, ['sms.', 'call.', 'did.', 'media.', 'billing.', 'job.']],
  [/^deliveries\/([^/]+)$/, v.deliveryDetail, null, []],
  [/^tasks$/, v.tasks, 'Exports', []], [/^billing$/, v.billing, 'Billing', ['billing.']],
  [/^end-users$/, v.endUsers, 'End users', []], [/^end-users\/([^/]+)$/, v.endUserDetail, null, []],
  [/^sandbox$/, sb.sandbox, 'Sandbox', ['sms.', 'call.']], [/^sandbox\/calls\/([^/]+)$/, sb.sandboxCall, null, ['call.']],
];
const OPERATOR_ROUTES = [
  [/^accounts$/, op.accounts, 'Accounts', []], [/^connectors$/, op.connectors, 'Connectors', []], [/^metrics$/, op.metrics, 'Metrics', []],
];

let session = null;
let routes = [];
let current = null;
let pollTimer = null;

function parse(hash) {
  const [path, query] = (hash.replace(/^#\/?/, '') || '').split('?');
  return { path, params: Object.fromEntries(new URLSearchParams(query || '')) };
}

export function go(path, params) {
  const q = params ? new URLSearchParams(Object.entries(params).filter(([, x]) => x)).toString() : '';
  const target = q ? `${path}?${q}` : path;
  if (location.hash === target) render(); else location.hash = target;
}

async function render() {
  clearTimeout(pollTimer);
  // A redraw the feed asked for belongs to the view it was asked on: leaving it cancels it.
  clearTimeout(redraw);
  const main = document.getElementById('view');
  if (!session) return signIn(main);
  let { path, params } = parse(location.hash);
  if (!path) path = session.kind === 'admin' ? 'accounts' : 'sms';
  const route = routes.find(([re]) => re.test(path));
  for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.getAttribute('href') === `#/${path.split('/')[0]}`);
  const view = h('section', { 'data-view': path.split('/')[0] });
  current = { route, path };
  if (!route) {
    view.append(h('p', { class: 'error' }, 'No such page.'));
  } else {
    const args = path.match(route[0]).slice(1).map(decodeURIComponent);
    try {
      await route[1](view, args.length ? args : params, go);
      view.dataset.ready = 'true';
    } catch (e) {
      view.append(h('p', { class: 'error', role: 'alert' }, errorText(e)));
      view.dataset.ready = 'error';
    }
  }
  if (current.path !== path) return;
  main.replaceChildren(view);
  if (view.dataset.poll) pollTimer = setTimeout(render, Number(view.dataset.poll));
}

// The feed: a change of a type the view shows redraws it (at most every 300 ms).
let redraw = null;
function changed(event) {
  const live = document.getElementById('live');
  live.dataset.last = event.type;
  if (!current || !current.route) return;
  if (!current.route[3].some((p) => event.type.startsWith(p))) return;
  if (document.activeElement && ['INPUT', 'TEXTAREA', 'SELECT'].includes(document.activeElement.tagName)) return;
  clearTimeout(redraw);
  redraw = setTimeout(render, 300);
}

function signIn(main) {
  document.getElementById('nav').replaceChildren();
  document.getElementById('signout').hidden = true;
  document.getElementById('who').textContent = '';
  const mode = h('select', { name: 'mode', 'aria-label': 'Sign in with' },
    h('option', { value: 'password' }, 'Login and password'), h('option', { value: 'key' }, 'API key'), h('option', { value: 'admin' }, 'Admin token'));
  const fields = h('div', { class: 'row' });
  const draw = () => {
    const m = mode.value;
    fields.replaceChildren(...(m === 'password'
      ? [h('label', {}, 'Login', h('input', { name: 'login', autocomplete: 'username', id: 'login' })),
        h('label', {}, 'Password', h('input', { name: 'password', type: 'password', autocomplete: 'current-password', id: 'password' }))]
      : [h('label', {}, m === 'key' ? 'API key' : 'Admin token', h('input', { name: 'secret', type: 'password', id: 'secret' }))]));
  };
  mode.addEventListener('change', draw);
  draw();
  const problem = h('p', { class: 'error', role: 'alert', id: 'signin-error' });
  const f = h('form', { id: 'signin' }, h('h1', {}, 'Sign in to dialtone'), h('label', {}, 'With', mode), fields,
    h('button', { type: 'submit' }, 'Sign in'), problem);
  if (location.hash.includes('link=used')) problem.textContent = 'That sign-in link was used or has expired: sign in with the login and password.';
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    const data = Object.fromEntries(new FormData(f).entries());
    const body = data.mode === 'password' ? { login: data.login, password: data.password }
      : data.mode === 'key' ? { apiKey: data.secret } : { adminToken: data.secret };
    try {
      start(await api('POST', '/console/session', body));
      location.hash = '#/';
      render();
    } catch (err) {
      problem.textContent = errorText(err);
    }
  });
  main.replaceChildren(f);
}

let source = null;
function start(s) {
  session = s;
  setCsrf(s.csrf);
  routes = s.kind === 'admin' ? OPERATOR_ROUTES : ACCOUNT_ROUTES.filter(([re]) => s.sandbox || !String(re).includes('sandbox'));
  document.getElementById('who').textContent = s.kind === 'admin' ? 'operator' : `${s.account.name} (${s.account.sid})`;
  document.getElementById('nav').replaceChildren(...routes.filter((r) => r[2]).map(([re, , label]) =>
    h('a', { href: `#/${String(re).replace(/^\/\^|\$\/$/g, '')}` }, label)));
  const out = document.getElementById('signout');
  out.hidden = false;
  out.onclick = async () => {
    await attempt(() => api('DELETE', '/console/session'));
    session = null;
    if (source) source.close();
    location.hash = '#/';
    render();
  };
  if (source) source.close();
  source = s.kind === 'account' ? feed(changed, (on) => document.getElementById('live').classList.toggle('on', on)) : null;
}

async function boot() {
  try {
    start(await api('GET', '/console/session'));
  } catch (_) {
    session = null;
  }
  window.addEventListener('hashchange', render);
  render();
}

boot();
