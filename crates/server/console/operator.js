// The operator's console (signed in with the admin token): accounts (create, credit,
// suspend or reactivate), the SMPP and SIP connectors with their state, the node's metrics.
import { api, get } from './api.js';
import { h, table, badge, when, attempt, form, kv } from './ui.js';

const enc = encodeURIComponent;

export async function accounts(view, params, go) {
  view.append(h('h1', {}, 'Accounts'),
    form([['name', 'Name'], ['credit', 'Opening credit (cents)', 'text', '0']], 'Create account', async (v) => {
      const made = await attempt(() => api('POST', '/admin/accounts', { name: v.name, credit: v.credit || '0' }), 'Account created');
      if (made) {
        go('#/accounts');
        view.append(h('div', { class: 'card' }, h('h2', {}, 'Shown once: keep it'), kv(made)));
      }
    }));
  const list = await get('/admin/accounts');
  view.append(table([
    ['Sid', (a) => a.sid], ['Name', (a) => a.name], ['Login', (a) => a.login], ['Status', (a) => badge(a.status)],
    ['Credit', (a) => `${a.credit} ${a.currency}`], ['Created', (a) => when(a.created)],
    ['', (a) => h('span', {},
      h('button', { type: 'button', class: 'plain', onclick: async () => {
        const amount = window.prompt(`Credit ${a.name} with (cents)`, '10000');
        if (amount && await attempt(() => api('POST', `/admin/accounts/${enc(a.sid)}/credit`, { amount }), 'Credited')) go('#/accounts');
      } }, 'Credit'), ' ',
      h('button', { type: 'button', class: a.status === 'suspended' ? 'plain' : 'danger', onclick: async () => {
        const status = a.status === 'suspended' ? 'active' : 'suspended';
        if (await attempt(() => api('PATCH', `/admin/accounts/${enc(a.sid)}`, { status }), status === 'active' ? 'Reactivated' : 'Suspended')) go('#/accounts');
      } }, a.status === 'suspended' ? 'Reactivate' : 'Suspend'))],
  ], list));
}

export async function connectors(view) {
  const smpp = await get('/admin/smpp');
  const sip = await get('/admin/sip');
  const lastError = (binds) => (binds || []).map((b) => b.last_error || b.lastError).filter(Boolean).join('; ');
  view.append(h('h1', {}, 'Connectors'), h('h2', {}, 'SMPP'),
    table([['Name', (c) => c.name], ['Host', (c) => `${c.host}:${c.port}`], ['Bound', (c) => badge(c.bound ? 'bound' : 'unbound')],
      ['Queued', (c) => c.queued], ['Last error', (c) => lastError(c.binds)]], smpp),
    h('h2', {}, 'SIP trunks'),
    sip.node ? kv(sip.node) : h('p', { class: 'muted' }, 'No SIP node runs: calls stay on the simulated network.'),
    table([['Name', (t) => t.config.name], ['Host', (t) => `${t.config.host}:${t.config.port}`], ['Health', (t) => JSON.stringify(t.health)], ['Source', (t) => t.source]], sip.trunks || []));
}

export async function metrics(view) {
  const res = await fetch('/metrics');
  const text = await res.text();
  const rows = text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const at = l.lastIndexOf(' ');
    return [l.slice(0, at), l.slice(at + 1)];
  });
  view.append(h('h1', {}, 'Metrics of this node'), table([['Series', (r) => r[0]], ['Value', (r) => r[1]]], rows));
}
