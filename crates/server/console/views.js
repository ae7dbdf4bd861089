// The account's resources: a list with its API's filters and a detail per resource.
import { api, get, qs, blobUrl } from './api.js';
import { h, table, kv, filters, badge, when, timeline, player, attempt, form, toast } from './ui.js';

const enc = encodeURIComponent;

// A keyset-paged list of /console/api: rows newest first, "More" loads the next page. A
// filtered page reads a bounded window of rows, so it may come back short (even empty) with
// a next page still to read: the note says so.
async function paged(view, path, params, columns, open) {
  const body = h('div');
  let next = null;
  const more = h('button', { type: 'button', class: 'plain', hidden: true }, 'More');
  const note = h('p', { class: 'muted', hidden: true }, 'Older rows are still to be searched: More goes on.');
  async function load(after) {
    const page = await get(path + qs({ ...params, after }));
    next = page.next;
    more.hidden = !next;
    note.hidden = !next || page.items.length > 0;
    return page.items;
  }
  const rows = await load();
  const t = table(columns, rows, open);
  body.append(t, note, more);
  more.addEventListener('click', async () => {
    const extra = await load(next);
    const tbody = t.querySelector('tbody');
    for (const tr of table(columns, extra, open).querySelectorAll('tbody tr')) tbody.append(tr);
  });
  view.append(body);
}

// A v2.0 search (offset-paged `hits`).
async function searched(view, path, params, columns, open) {
  const r = await get(path + qs({ limit: 50, ...params }));
  view.append(table(columns, r.hits || [], open), h('p', { class: 'muted' }, `${r.total} in all`));
}

export async function smsList(view, params, go) {
  view.append(h('h1', {}, 'SMS'),
    filters([['direction', 'Direction', 'select', ['outbound', 'inbound']], ['status', 'Status'], ['from', 'From'], ['to', 'To'], ['contains', 'Text contains']],
      params, (v) => go('#/sms', v)));
  await paged(view, '/console/api/sms', params, [
    ['Created', (s) => when(s.created)], ['From', (s) => s.from], ['To', (s) => s.to],
    ['Text', (s) => s.body], ['Status', (s) => badge(s.status)], ['Parts', (s) => s.parts], ['Cost', (s) => s.billingDebit ?? s.billing_debit],
  ], (s) => go(`#/sms/${s.sid}`));
}

export async function smsDetail(view, [sid], go) {
  const d = await get(`/console/api/sms/${enc(sid)}`);
  view.append(h('h1', {}, `SMS ${d.sms.sid}`), kv({ ...d.sms, network: d.network }));
  view.append(h('h2', {}, 'Status history'),
    timeline([{ at: d.sms.created, label: 'accepted', detail: '' }, ...d.history.map((m) => ({ at: m.at, label: m.to, detail: `from ${m.from}` }))]));
  view.append(h('h2', {}, 'Webhook deliveries'));
  await paged(view, `/console/api/sms/${enc(sid)}/deliveries`, {}, deliveryColumns, (d2) => go(`#/deliveries/${d2.id}`));
}

const deliveryColumns = [
  ['At', (d) => when(d.at)], ['Event', (d) => d.type], ['Endpoint', (d) => d.endpoint],
  ['Status', (d) => badge(d.status)], ['Tries', (d) => d.tries],
];

export async function callList(view, params, go) {
  view.append(h('h1', {}, 'Calls'),
    filters([['direction', 'Direction', 'select', ['', 'inbound', 'outbound']], ['status', 'Status'], ['party', 'Caller or callee']],
      params, (v) => go('#/calls', v)));
  await paged(view, '/console/api/calls', params, [
    ['Started', (c) => when(c.started)], ['Direction', (c) => c.direction], ['From', (c) => c.from ?? c.caller], ['To', (c) => c.to ?? c.callee],
    ['Status', (c) => badge(c.status)], ['Duration', (c) => c.durationTotal ?? c.duration ?? ''],
  ], (c) => go(`#/calls/${c.callid}`));
}

export function callTimeline(entries) {
  return timeline(entries.map((e) => ({ at: e.at, label: e.kind, detail: e.data && typeof e.data === 'object' ? JSON.stringify(e.data) : (e.data ?? '') })));
}

export async function callDetail(view, [callid]) {
  const c = await get(`/console/api/calls/${enc(callid)}`);
  const { timeline: entries, pending_digits: _p, ...cdr } = c;
  view.append(h('h1', {}, `Call ${callid}`), kv(cdr), h('h2', {}, 'Timeline'), callTimeline(entries || []));
  const recs = await get(`/v2.0/recordings${qs({ callid })}`);
  view.append(h('h2', {}, 'Recordings'), recordingTable(recs.hits || []));
}

function recordingTable(rows) {
  return table([
    ['Created', (r) => when(r.created)], ['Type', (r) => r.type], ['Duration', (r) => r.duration],
    ['Transcript', (r) => r.transcript || (r.transcription && r.transcription.status) || ''],
    ['Read', (r) => (r.read ? 'yes' : 'no')],
    ['', (r) => player(`/v2.0/recordings/${enc(r.sid)}/file`, blobUrl)],
    ['', (r) => h('span', {},
      h('button', { type: 'button', class: 'plain', onclick: () => attempt(() => api('PATCH', `/v2.0/recordings/${enc(r.sid)}`, { read: true }), 'Marked read') }, 'Mark read'),
      ' ',
      h('button', { type: 'button', class: 'danger', onclick: () => attempt(() => api('DELETE', `/v2.0/recordings/${enc(r.sid)}`), 'Deleted') }, 'Delete'))],
  ], rows);
}

export async function recordings(view, params, go) {
  view.append(h('h1', {}, 'Recordings'),
    filters([['kind', 'Type'], ['caller', 'Caller'], ['callee', 'Callee'], ['callid', 'Call id']], params, (v) => go('#/recordings', v)));
  const r = await get(`/v2.0/recordings${qs({ limit: 50, ...params })}`);
  view.append(recordingTable(r.hits || []));
}

export async function numbers(view, params, go) {
  view.append(h('h1', {}, 'Numbers'), h('p', {}, h('a', { href: '#/store' }, 'Buy a number in the store')));
  await searched(view, '/v2.0/numbers', params, [
    ['Number', (n) => n.e164], ['Country', (n) => n.country], ['Type', (n) => n.type],
    ['Scenario', (n) => (n.scenario ? n.scenario.name || n.scenario.sid : '')], ['Monthly', (n) => n.monthlyPrice],
    ['', (n) => h('button', { type: 'button', class: 'danger', onclick: async (e) => {
      e.stopPropagation();
      if (await attempt(() => api('DELETE', `/v2.0/numbers/${enc(n.e164)}`), 'Released') !== undefined) go('#/numbers');
    } }, 'Release')],
  ]);
}

// The store: a country, its types, the prefixes of a type with their free numbers; a
// reservation holds numbers for 5 minutes, shown with its cost, then bought or cancelled.
export async function store(view, params, go) {
  view.append(h('h1', {}, 'Number store'));
  const countries = await get('/v2.0/numbers/store/countries');
  view.append(filters([['country', 'Country', 'select', ['', ...countries.map((c) => c.code)]]], params, (v) => go('#/store', v)));
  if (!params.country) return;
  const types = await get(`/v2.0/numbers/store/types${qs({ country: params.country })}`);
  view.append(h('h2', {}, `Types in ${params.country}`));
  view.append(table([
    ['Type', (t) => t.type], ['Classes', (t) => (t.classes || []).join(', ')],
    ['', (t) => h('a', { href: `#/store${qs({ country: params.country, type: t.type })}` }, 'Prefixes')],
  ], types));
  if (!params.type) return;
  const prefixes = await get(`/v2.0/numbers/store/prefixes${qs({ country: params.country, type: params.type })}`);
  const held = h('div', { id: 'reservation' });
  const list = table([
    ['Prefix', (p) => p.prefix], ['Area', (p) => p.area || ''], ['Free numbers', (p) => p.available],
    ['', (p) => reserveForm(params, p, held, go)],
  ], prefixes);
  list.id = 'prefixes';
  view.append(h('h2', {}, `Prefixes of ${params.type} numbers in ${params.country}`), held, list);
}

// Reserve up to `quantity` numbers under a prefix; the reservation then shows in `held`.
function reserveForm(params, prefix, held, go) {
  return form([['quantity', `Numbers under ${prefix.prefix}`, 'number', '1']], 'Reserve', async (v) => {
    const r = await attempt(() => api('POST', `/v2.0/numbers/store${qs({ country: params.country, type: params.type, prefix: prefix.prefix, quantity: v.quantity || '1' })}`), 'Reserved');
    if (!r) return;
    held.replaceChildren(h('div', { class: 'card' },
      h('h3', {}, `Held until ${when(r.expires)}`),
      h('p', {}, (r.items || []).map((i) => i.e164).join(', ')),
      r.cost ? h('p', { class: 'muted' }, `Setup ${r.cost.setup}, monthly ${r.cost.monthly} ${r.cost.currency || ''}`) : '',
      h('button', { type: 'button', onclick: async () => {
        if (await attempt(() => api('POST', `/v2.0/numbers/store/${enc(r.token)}`), 'Bought')) go('#/numbers');
      } }, 'Buy'), ' ',
      h('button', { type: 'button', class: 'plain', onclick: async () => {
        if (await attempt(() => api('DELETE', `/v2.0/numbers/store/${enc(r.token)}`), 'Cancelled') !== undefined) held.replaceChildren();
      } }, 'Cancel')));
    held.querySelector('button').focus();
  });
}

export async function audioFiles(view, params, go) {
  view.append(h('h1', {}, 'Audio files'));
  const drop = h('div', { class: 'drop', tabindex: '0' }, 'Drop an audio file here to upload it as a new file');
  drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
  drop.addEventListener('dragleave', () => drop.classList.remove('over'));
  drop.addEventListener('drop', async (e) => {
    e.preventDefault();
    drop.classList.remove('over');
    const file = e.dataTransfer.files[0];
    if (!file) return;
    const made = await attempt(() => api('POST', '/v2.0/audio-files', { name: file.name.slice(0, 64) }));
    if (!made) return;
    if (await attempt(() => api('PUT', `/v2.0/audio-files/${enc(made.sid)}/file`, file, { contentType: file.type || 'application/octet-stream' }), 'Uploaded')) go('#/audio');
  });
  view.append(drop, h('h2', {}, 'Text to speech'),
    form([['name', 'Name'], ['text', 'Text', 'textarea']], 'Speak', async (v) => {
      const made = await attempt(() => api('POST', '/v2.0/audio-files', { name: v.name }));
      if (made && await attempt(() => api('PUT', `/v2.0/audio-files/${enc(made.sid)}/tts`, { text: v.text }), 'Speaking')) go('#/audio');
    }));
  await searched(view, '/v2.0/audio-files', params, [
    ['Name', (a) => a.name], ['Status', (a) => badge(a.status)], ['Duration', (a) => a.duration ?? ''],
    ['', (a) => (a.status === 'ready' ? player(`/v2.0/audio-files/${enc(a.sid)}/file`, blobUrl) : '')],
  ]);
}

export async function webhooks(view, params, go) {
  view.append(h('h1', {}, 'Webhooks'),
    form([['type', 'Event type'], ['endpoint', 'Endpoint URL', 'url']], 'Subscribe', async (v) => {
      if (await attempt(() => api('POST', `/v2.0/webhooks${qs({ type: v.type })}`, { endpoint: v.endpoint }), 'Subscribed')) go('#/webhooks');
    }));
  await searched(view, '/v2.0/webhooks', params, [
    ['Type', (w) => w.type], ['Endpoint', (w) => w.endpoint], ['Status', (w) => badge(w.status)], ['Created', (w) => when(w.created)],
  ], (w) => go(`#/webhooks/${w.sid}`));
}

export async function webhookDetail(view, [sid], go) {
  const w = await get(`/v2.0/webhooks/${enc(sid)}`);
  view.append(h('h1', {}, `Webhook ${sid}`), kv(w), h('h2', {}, 'Deliveries'));
  await paged(view, `/console/api/webhooks/${enc(sid)}/deliveries`, {}, deliveryColumns, (d) => go(`#/deliveries/${d.id}`));
}

export async function deliveryDetail(view, [id], go) {
  const d = await get(`/console/api/deliveries/${enc(id)}`);
  view.append(h('h1', {}, `Delivery of ${d.delivery.type}`), kv(d.delivery),
    h('p', {}, h('button', { type: 'button', onclick: async () => {
      if (await attempt(() => api('POST', `/console/api/deliveries/${enc(id)}/redeliver`), 'Redelivering') !== undefined) go(`#/deliveries/${id}`);
    } }, 'Redeliver')));
  for (const t of d.tries) {
    view.append(h('div', { class: 'card' },
      h('h2', {}, `Try ${t.try}`),
      h('p', {}, `${t.request.method} ${t.request.url}`),
      table([['Header', (x) => x[0]], ['Value', (x) => x[1]]], t.request.headers),
      h('pre', { class: 'body' }, t.request.body),
      t.answer ? kv(t.answer) : h('p', { class: 'muted' }, 'Not tried yet.')));
  }
}

export async function tasks(view) {
  view.append(h('h1', {}, 'Call exports'),
    form([['direction', 'Direction (inbound or outbound)', 'text', 'inbound'], ['from', 'From (date)', 'date'], ['to', 'To (date)', 'date']], 'Export calls', async (v) => {
      const range = { direction: v.direction, from: `${v.from}T00:00:00Z`, to: `${v.to}T23:59:59Z` };
      const t = await attempt(() => api('POST', `/v2.0/calls/export${qs(range)}`), 'Export started');
      if (t) toast(`Task ${JSON.stringify(t)}`);
    }),
    h('form', { class: 'row', onsubmit: async (e) => {
      e.preventDefault();
      const id = new FormData(e.target).get('task');
      const t = await attempt(() => get(`/v2.0/tasks/${enc(id)}`));
      if (!t) return;
      const out = document.getElementById('task');
      out.replaceChildren(kv(t));
      if (t.url || t.download) out.append(h('p', {}, h('button', { type: 'button', onclick: async () => {
        const url = await attempt(() => blobUrl(t.url || t.download));
        if (url) h('a', { href: url, download: `${id}.csv` }).click();
      } }, 'Download')));
    } }, h('label', {}, 'Task id', h('input', { name: 'task' })), h('button', { type: 'submit' }, 'Show')),
    h('div', { id: 'task' }));
}

export async function billing(view) {
  const credit = await get('/v2.0/billing/credit');
  view.append(h('h1', {}, 'Billing'), kv(credit), h('h2', {}, 'Ledger'));
  await paged(view, '/console/api/ledger', {}, [
    ['At', (e) => when(e.at)], ['Kind', (e) => e.kind], ['Amount', (e) => e.amount], ['Balance', (e) => e.balance], ['Cause', (e) => e.cause ?? ''],
  ]);
  const dest = await get('/v2.0/billing/destinations');
  view.append(h('h2', {}, 'Destinations'), h('pre', {}, JSON.stringify(dest, null, 2)));
}

export async function endUsers(view, params, go) {
  view.append(h('h1', {}, 'End users'),
    form([['name', 'Name'], ['country', 'Country (ISO)']], 'Create', async (v) => {
      if (await attempt(() => api('POST', '/v2.0/end-users', v), 'Created')) go('#/end-users');
    }));
  await searched(view, '/v2.0/end-users', params, [
    ['Sid', (u) => u.sid], ['Name', (u) => u.name ?? ''], ['Created', (u) => when(u.created)],
  ], (u) => go(`#/end-users/${u.sid}`));
}

export async function endUserDetail(view, [sid]) {
  view.append(h('h1', {}, `End user ${sid}`), kv(await get(`/v2.0/end-users/${enc(sid)}`)));
}
