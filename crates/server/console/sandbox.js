// The sandbox: a phone per destination showing the SMS that left the platform, an inbound
// SMS to one of the account's numbers, and an inbound call driven from the page (keypad,
// audio, hang up) with its timeline as it happens.
import { api, get } from './api.js';
import { h, table, attempt, when } from './ui.js';
import { callTimeline } from './views.js';

const enc = encodeURIComponent;

const OUTCOMES = [
  ['+447700900001', 'SMS failed'], ['+447700900002', 'SMS expired'], ['+447700900003', 'SMS refused at submission (refunded)'],
  ['+447700900004', 'SMS stays remote-queued'], ['+447700900005', 'SMS delivered after 30 s'],
  ['+447700900100', 'dialled call busy'], ['+447700900101', 'dialled call not answered'], ['+447700900102', 'dialled call failed'],
];

async function ownNumbers() {
  const r = await get('/v2.0/numbers?limit=100');
  return (r.hits || []).map((n) => n.e164);
}

export async function sandbox(view, params, go) {
  const numbers = await ownNumbers();
  const pick = (name, label) => h('label', {}, label, numbers.length
    ? h('select', { name }, numbers.map((n) => h('option', { value: n }, n)))
    : h('input', { name, placeholder: 'buy a number first' }));
  const sms = h('form', { class: 'row', id: 'inbound-sms' },
    h('label', {}, 'From', h('input', { name: 'from', value: '+447700900777' })), pick('to', 'To (your number)'),
    h('label', {}, 'Text', h('input', { name: 'body', value: 'hello' })), h('button', { type: 'submit' }, 'Send inbound SMS'));
  sms.addEventListener('submit', async (e) => {
    e.preventDefault();
    const v = Object.fromEntries(new FormData(sms).entries());
    if (await attempt(() => api('POST', '/sandbox/sms', v), 'Inbound SMS sent')) go('#/sandbox');
  });
  const call = h('form', { class: 'row', id: 'inbound-call' },
    h('label', {}, 'From', h('input', { name: 'from', value: '+447700900999' })), pick('to', 'To (your number)'),
    h('button', { type: 'submit' }, 'Place inbound call'));
  call.addEventListener('submit', async (e) => {
    e.preventDefault();
    const v = Object.fromEntries(new FormData(call).entries());
    const c = await attempt(() => api('POST', '/sandbox/calls', v));
    if (c) go(`#/sandbox/calls/${c.callid}`);
  });
  view.append(h('h1', {}, 'Sandbox'), h('div', { class: 'card' }, h('h2', {}, 'Inbound SMS'), sms),
    h('div', { class: 'card' }, h('h2', {}, 'Inbound call'), call));
  const left = await get('/sandbox/sms');
  const byPhone = new Map();
  for (const s of left.hits || left) {
    if (!byPhone.has(s.to)) byPhone.set(s.to, []);
    byPhone.get(s.to).push(s);
  }
  view.append(h('h2', {}, 'Phones: the SMS that left the platform'),
    h('div', { class: 'phones', id: 'phones' }, [...byPhone].map(([to, list]) => h('div', { class: 'phone' }, h('h3', {}, to),
      list.slice(-20).map((s) => h('div', { class: 'bubble' }, h('small', {}, `${s.from} · ${when(s.created)} · ${s.status}`), s.body))))),
    byPhone.size ? null : h('p', { class: 'muted' }, 'No SMS has left yet.'),
    h('h2', {}, 'Outcome numbers of the simulated network'),
    table([['Destination', (o) => o[0]], ['What happens', (o) => o[1]]], OUTCOMES),
    h('p', { class: 'muted' }, 'Any other destination: created, pending, sent, remote-queued, delivered; a dialled call is answered.'));
}

export async function sandboxCall(view, [callid], go) {
  const c = await get(`/sandbox/calls/${enc(callid)}`);
  const live = c.status !== 'ended';
  const keys = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '*', '0', '#'];
  const keypad = h('div', { class: 'keypad', role: 'group', 'aria-label': 'Keypad' }, keys.map((k) => h('button', {
    type: 'button', disabled: !live, onclick: async () => {
      if (await attempt(() => api('POST', `/sandbox/calls/${enc(callid)}/dtmf`, { digits: k }))) go(`#/sandbox/calls/${callid}`);
    },
  }, k)));
  const audio = h('input', { type: 'file', accept: 'audio/*', disabled: !live, 'aria-label': 'Speak: send an audio file' });
  audio.addEventListener('change', async () => {
    const file = audio.files[0];
    if (file && await attempt(() => api('POST', `/sandbox/calls/${enc(callid)}/audio`, file, { contentType: file.type || 'audio/wav' }), 'Audio sent')) go(`#/sandbox/calls/${callid}`);
  });
  const hangup = h('button', { type: 'button', class: 'danger', disabled: !live, onclick: async () => {
    if (await attempt(() => api('POST', `/sandbox/calls/${enc(callid)}/hangup`), 'Hung up')) go(`#/sandbox/calls/${callid}`);
  } }, 'Hang up');
  view.append(h('h1', {}, `Sandbox call ${callid}`),
    h('p', {}, `${c.from} → ${c.to} · `, h('span', { id: 'call-status' }, c.status)),
    h('div', { class: 'grid2' },
      h('div', { class: 'card' }, keypad, h('p', {}, audio), hangup,
        c.pending_digits ? h('p', { class: 'muted' }, `Keys not yet taken: ${c.pending_digits}`) : null),
      h('div', { class: 'card' }, h('h2', {}, 'Timeline'), callTimeline(c.timeline || []))));
  // While the call lives its timeline moves without events: look again every second.
  if (live) {
    view.dataset.poll = '1000';
  }
}
