// The operator's console (signed in with the admin token): accounts (create, credit,
// suspend or reactivate), the SMPP and SIP connectors with their state, the node's metrics.
import { api, get } from './api.js';
import { h, table, badge, when, attempt, form, kv } from './ui.js';

const enc = encodeURIComponent;

// The accounts: a create form, then the list with each account's credit and status
// actions. An action redraws the list in place and gives the focus back to the control that
// was used, so the keyboard stays where it was; a new account's secrets stay on screen.
export async function accounts(view) {
  const shown = h('div', { id: 'created' });
  const list = h('div');
  async function refresh(sid, act) {
    list.replaceChildren(accountTable(await get('/admin/accounts'), refresh));
    const again = sid && list.querySelector(`tr[data-sid="${CSS.escape(sid)}"] [data-act="${act}"]`);
    if (again) (again.querySelector('input') || again).focus();
  }
  view.append(h('h1', {}, 'Accounts'),
    form([['name', 'Name'], ['credit', 'Opening credit (cents)', 'text', '0']], 'Create account', async (v, f) => {
      const made = await attempt(() => api('POST', '/admin/accounts', { name: v.name, credit: v.credit || '0' }), 'Account created');
      if (!made) return;
      f.reset();
      shown.replaceChildren(h('div', { class: 'card', tabindex: '-1' }, h('h2', {}, 'Shown once: keep it'), kv(made)));
      await refresh();
      shown.firstChild.focus();
    }), shown, list);
  await refresh();
}

function accountTable(accounts, refresh) {
  const t = table([
    ['Sid', (a) => a.sid], ['Name', (a) => a.name], ['Login', (a) => a.login], ['Status', (a) => badge(a.status)],
    ['Credit', (a) => `${a.credit} ${a.currency}`], ['Created', (a) => when(a.created)],
    ['', (a) => h('span', { class: 'actions' },
      creditForm(a, refresh), ' ',
      h('button', { type: 'button', class: a.status === 'suspended' ? 'plain' : 'danger', 'data-act': 'status', onclick: async () => {
        const status = a.status === 'suspended' ? 'active' : 'suspended';
        if (await attempt(() => api('PATCH', `/admin/accounts/${enc(a.sid)}`, { status }), status === 'active' ? 'Reactivated' : 'Suspended')) await refresh(a.sid, 'status');
      } }, a.status === 'suspended' ? 'Reactivate' : 'Suspend'))],
  ], accounts);
  t.querySelectorAll('tbody tr').forEach((tr, i) => { if (accounts[i]) tr.dataset.sid = accounts[i].sid; });
  return t;
}

// Credit an account: an amount in cents typed in its row, Enter or the button sends it.
function creditForm(a, refresh) {
  const amount = h('input', { name: 'amount', type: 'text', inputmode: 'numeric', size: 8, placeholder: 'cents', 'aria-label': `Credit ${a.name} with (cents)` });
  const f = h('form', { class: 'inline', 'data-act': 'credit' }, amount, h('button', { type: 'submit', class: 'plain' }, 'Credit'));
  f.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (!amount.value) { amount.focus(); return; }
    if (await attempt(() => api('POST', `/admin/accounts/${enc(a.sid)}/credit`, { amount: amount.value }), 'Credited')) await refresh(a.sid, 'credit');
  });
  return f;
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
