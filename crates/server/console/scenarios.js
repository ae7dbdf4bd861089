// Scenarios: the list, an editor that checks the script with the server's own validation
// as one types (the problem shown at its line and column), numbers attached, runs.
import { api, get, qs } from './api.js';
import { h, table, kv, badge, when, attempt, form, toast, errorText } from './ui.js';

const enc = encodeURIComponent;

export async function list(view, params, go) {
  view.append(h('h1', {}, 'Scenarios'), h('p', {}, h('a', { href: '#/scenarios/new' }, 'New scenario')));
  const r = await get(`/v2.0/actions${qs({ limit: 50, ...params })}`);
  view.append(table([
    ['Name', (s) => s.name], ['Numbers', (s) => s.numbers.map((n) => n.number || n.e164).join(', ')],
    ['Version', (s) => s.version], ['Updated', (s) => when(s.updated)],
  ], r.hits || [], (s) => go(`#/scenarios/${s.sid}`)));
}

const STARTER = 'branches:\n  inbound-call:\n    actions:\n      - action: say@v2\n        params: { what: "Hello from dialtone", language: en-GB }\n      - action: hangup@v1\n';

// The editor: a gutter of line numbers beside the script; the problem's line is marked.
function editor(script, onChange) {
  const gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });
  const area = h('textarea', { name: 'script', spellcheck: 'false', 'aria-label': 'Script (YAML)', id: 'script' }, script);
  const problem = h('p', { id: 'script-error', class: 'error', role: 'alert' });
  let badLine = 0;
  function numbers() {
    const n = area.value.split('\n').length;
    gutter.replaceChildren(...Array.from({ length: n }, (_, i) => h('div', { class: i + 1 === badLine ? 'bad' : '' }, String(i + 1))));
    gutter.scrollTop = area.scrollTop;
  }
  let timer;
  async function check() {
    try {
      await api('POST', '/console/api/validate', { script: area.value });
      badLine = 0;
      problem.textContent = '';
      problem.dataset.valid = 'true';
    } catch (e) {
      const d = (e.details || []).find((x) => x.line) || {};
      badLine = d.line || 0;
      problem.dataset.valid = 'false';
      problem.textContent = d.line ? `Line ${d.line}, column ${d.column}: ${d.message}` : errorText(e);
    }
    numbers();
  }
  area.addEventListener('input', () => { numbers(); clearTimeout(timer); timer = setTimeout(check, 250); onChange(area.value); });
  area.addEventListener('scroll', () => { gutter.scrollTop = area.scrollTop; });
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Tab' && !e.shiftKey && !e.ctrlKey) {
      e.preventDefault();
      area.setRangeText('  ', area.selectionStart, area.selectionEnd, 'end');
      area.dispatchEvent(new Event('input'));
    }
  });
  numbers();
  check();
  return { el: h('div', {}, h('div', { class: 'editor' }, gutter, area), problem), area };
}

export async function edit(view, [sid], go) {
  const fresh = sid === 'new';
  const s = fresh ? { name: '', script: STARTER, numbers: [] } : await get(`/v2.0/actions/${enc(sid)}`);
  const name = h('input', { name: 'name', value: s.name, 'aria-label': 'Name', id: 'scenario-name' });
  let script = s.script;
  const ed = editor(s.script, (v) => { script = v; });
  const save = h('button', { type: 'button', id: 'save' }, fresh ? 'Create' : 'Save');
  save.addEventListener('click', async () => {
    const body = { name: name.value, script };
    const r = fresh
      ? await attempt(() => api('POST', '/v2.0/actions', body), 'Created')
      : await attempt(() => api('PATCH', `/v2.0/actions/${enc(sid)}`, body), 'Saved');
    if (r && fresh) go(`#/scenarios/${r.sid}`);
  });
  view.append(h('h1', {}, fresh ? 'New scenario' : `Scenario ${s.name}`), h('div', { class: 'row' }, h('label', {}, 'Name', name), save), ed.el);
  if (fresh) return;
  view.append(h('h2', {}, 'Numbers'),
    table([['Number', (n) => n.number || n.e164], ['', (n) => h('button', { type: 'button', class: 'plain', onclick: async () => {
      if (await attempt(() => api('DELETE', `/v2.0/actions/${enc(sid)}/numbers/${enc(n.number || n.e164)}`), 'Detached') !== undefined) go(`#/scenarios/${sid}`);
    } }, 'Detach')]], s.numbers),
    form([['number', 'Attach a number of the account (E.164)']], 'Attach', async (v) => {
      if (await attempt(() => api('PUT', `/v2.0/actions/${enc(sid)}/numbers/${enc(v.number)}`), 'Attached') !== undefined) go(`#/scenarios/${sid}`);
    }),
    h('h2', {}, 'Start a run'),
    form([['variables', 'Variables (JSON object)', 'textarea', '{}']], 'Start', async (v) => {
      let variables;
      try { variables = JSON.parse(v.variables || '{}'); } catch (e) { toast(`Variables: ${e.message}`, true); return; }
      const r = await attempt(() => api('POST', `/v2.0/actions/${enc(sid)}/runs`, { variables }), 'Started');
      if (r) go(`#/scenarios/${sid}/runs/${r.runId || r.run_id}`);
    }),
    h('h2', {}, 'Runs'));
  const runs = await get(`/console/api/actions/${enc(sid)}/runs`);
  view.append(table([
    ['Started', (r) => when(r.started)], ['Type', (r) => r.type], ['Status', (r) => badge(r.status)], ['Error', (r) => r.error ?? ''],
  ], runs.items, (r) => go(`#/scenarios/${sid}/runs/${r.runId}`)));
}

export async function run(view, [sid, runid]) {
  const r = await get(`/v2.0/actions/${enc(sid)}/runs/${enc(runid)}`);
  const { variables, log, ...rest } = r;
  view.append(h('h1', {}, `Run ${runid}`), kv(rest), h('h2', {}, 'Variables'), h('pre', {}, JSON.stringify(variables, null, 2)),
    h('h2', {}, 'Log'), table([['At', (l) => when(l.at)], ['Level', (l) => l.level], ['Message', (l) => l.message]], log || []));
}
