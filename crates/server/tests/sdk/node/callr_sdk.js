// Drives dialtone's JSON-RPC interface with the official `callr` Node.js SDK (npm
// callr@1.2.0), unchanged: it always connects with HTTPS on port 443, so the server listens
// on 127.0.0.N:443 and is trusted the usual way (NODE_EXTRA_CA_CERTS).
//
// Usage: node callr_sdk.js URL LOGIN PASSWORD < {"plan": [...], "vars": {...}}
// Prints one JSON object: step name -> {"result"} | {"error": {"code", "message"}} | {"skipped"}.
'use strict';

const callr = require('callr');

const [url, login, password] = process.argv.slice(2);
const request = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const env = { vars: request.vars };
const PLACEHOLDER = /\{\{([^}]+)\}\}/g;

class Missing extends Error {}

function lookup(path) {
  let value = env;
  for (const part of path.split('.')) {
    if (value !== null && typeof value === 'object' && part in value) {
      value = value[part];
    } else {
      throw new Missing(path);
    }
  }
  return value;
}

function fill(value) {
  if (typeof value === 'string') {
    const whole = /^\{\{([^}]+)\}\}$/.exec(value);
    if (whole) return lookup(whole[1]);
    return value.replace(PLACEHOLDER, (_, path) => String(lookup(path)));
  }
  if (Array.isArray(value)) return value.map(fill);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fill(v)]));
  }
  return value;
}

function call(step, params) {
  const api = new callr.api(login, password + (step.wrong_password ? 'x' : ''));
  api.apiUrl = url + '/json-rpc/v1.1/';
  if (step.login_as) {
    api.setLoginAs(step.login_as.type, fill(step.login_as.target));
  }
  return new Promise((resolve) => {
    api.send(step.method, params)
      .success((result) => resolve({ result }))
      .error((err) => resolve({ error: { code: err.code, message: err.message } }));
  });
}

(async () => {
  const out = {};
  for (const step of request.plan) {
    let params;
    try {
      params = fill(step.params);
      if (step.login_as) fill(step.login_as.target);
    } catch (e) {
      if (!(e instanceof Missing)) throw e;
      out[step.name] = { skipped: 'needs ' + e.message };
      continue;
    }
    const answer = await call(step, params);
    if ('result' in answer) env[step.name] = answer.result;
    out[step.name] = answer;
  }
  process.stdout.write(JSON.stringify(out));
})();
