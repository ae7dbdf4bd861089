// DOM helpers. Everything a tenant wrote reaches the page as text nodes (textContent), never
// parsed as markup: the console builds every element with createElement.

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export function toast(message, bad) {
  const t = document.getElementById('toast');
  t.textContent = message;
  t.className = bad ? 'show error-toast' : 'show';
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.className = ''; }, 4000);
}

export function errorText(e) {
  const details = (e.details || []).map((d) => `${d.param || ''}${d.line ? ` (line ${d.line}, column ${d.column})` : ''}: ${d.message}`);
  return [e.message, ...details].join(' — ');
}

// Runs an action, reporting failure in the toast; returns its result or undefined.
export async function attempt(fn, done) {
  try {
    const r = await fn();
    if (done) toast(done);
    return r;
  } catch (e) {
    toast(errorText(e), true);
    return undefined;
  }
}

export const badge = (word) => h('span', { class: `badge ${String(word || '').replace(/[^a-z-]/g, '')}` }, word ?? '');

export const when = (t) => (t ? new Date(t).toLocaleString() : '');

// A table; rows open `open(row)` on click or Enter.
export function table(columns, rows, open) {
  const head = h('tr', {}, columns.map(([title]) => h('th', { scope: 'col' }, title)));
  const body = rows.map((r) => {
    const tr = h('tr', open ? { class: 'link', tabindex: '0' } : {},
      columns.map(([, cell]) => h('td', {}, cell(r))));
    if (open) {
      tr.addEventListener('click', () => open(r));
      tr.addEventListener('keydown', (e) => { if (e.key === 'Enter') open(r); });
    }
    return tr;
  });
  const empty = rows.length ? null : h('tr', {}, h('td', { colspan: columns.length, class: 'muted' }, 'Nothing here yet.'));
  return h('table', {}, h('thead', {}, head), h('tbody', {}, body, empty));
}

// Key/value list of an object's fields (nested objects as JSON).
export function kv(obj, keys) {
  const dl = h('dl', { class: 'kv' });
  for (const k of keys || Object.keys(obj || {})) {
    const v = obj[k];
    dl.append(h('dt', {}, k), h('dd', {}, v !== null && typeof v === 'object' ? JSON.stringify(v) : v ?? ''));
  }
  return dl;
}

// A filter form; `fields` are [name, label, kind?, options?]. Calls onSubmit(values).
export function filters(fields, values, onSubmit) {
  const form = h('form', { class: 'filters' });
  for (const [name, label, kind, options] of fields) {
    const input = kind === 'select'
      ? h('select', { name }, options.map((o) => h('option', { value: o }, o || 'any')))
      : h('input', { name, type: kind || 'text', value: values[name] || '' });
    if (kind === 'select') input.value = values[name] || '';
    form.append(h('label', {}, label, input));
  }
  form.append(h('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    onSubmit(Object.fromEntries(new FormData(form).entries()));
  });
  return form;
}

export function timeline(entries) {
  return h('ol', { class: 'timeline' }, entries.map((e) => h('li', {}, h('time', {}, when(e.at)), h('strong', {}, e.label), ' ', e.detail || '')));
}

// A player for audio behind the session: fetched when asked.
export function player(path, load) {
  const wrap = h('span', {});
  const button = h('button', { type: 'button', class: 'plain' }, 'Play');
  button.addEventListener('click', async () => {
    const url = await attempt(() => load(path));
    if (!url) return;
    const audio = h('audio', { controls: true, src: url });
    wrap.replaceChildren(audio);
    audio.play().catch(() => {});
  });
  wrap.append(button);
  return wrap;
}

// Form from fields [name, label, type?]; onSubmit(values, form).
export function form(fields, submit, onSubmit) {
  const f = h('form', { class: 'row' });
  for (const [name, label, type, value] of fields) {
    f.append(h('label', {}, label, type === 'textarea'
      ? h('textarea', { name, rows: 3 }, value || '')
      : h('input', { name, type: type || 'text', value: value || '' })));
  }
  f.append(h('button', { type: 'submit' }, submit));
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    onSubmit(Object.fromEntries(new FormData(f).entries()), f);
  });
  return f;
}
