// Calls to the server with the session cookie and its CSRF token. Every error comes back
// as an ApiError carrying the contract's {code, message, details}.
let csrf = '';

export function setCsrf(token) { csrf = token || ''; }

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
    this.details = (body && body.details) || [];
  }
}

export async function api(method, path, body, options = {}) {
  const headers = { 'x-csrf-token': csrf };
  let payload;
  if (body instanceof Blob || body instanceof ArrayBuffer) {
    payload = body;
    headers['content-type'] = options.contentType || 'application/octet-stream';
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  const res = await fetch(path, { method, headers, body: payload, credentials: 'same-origin' });
  if (res.status === 204 || res.status === 202 && !res.headers.get('content-type')) return null;
  const type = res.headers.get('content-type') || '';
  const data = type.includes('json') ? await res.json() : await res.text();
  if (!res.ok) throw new ApiError(res.status, typeof data === 'object' ? data : { message: data });
  return data;
}

export const get = (path) => api('GET', path);

// Audio the page may play: fetched with the session, handed to <audio> as a blob URL.
export async function blobUrl(path) {
  const res = await fetch(path, { headers: { 'x-csrf-token': csrf }, credentials: 'same-origin' });
  if (!res.ok) throw new ApiError(res.status, { message: `audio: HTTP ${res.status}` });
  return URL.createObjectURL(await res.blob());
}

// Query string from an object, leaving out empty values.
export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : '';
}

// The account's live feed: calls onChange({type, data}) for every event.
export function feed(onChange, onState) {
  const source = new EventSource('/console/events');
  source.addEventListener('change', (e) => {
    try { onChange(JSON.parse(e.data)); } catch (_) { /* a malformed event is skipped */ }
  });
  source.onopen = () => onState(true);
  source.onerror = () => onState(false);
  return source;
}
