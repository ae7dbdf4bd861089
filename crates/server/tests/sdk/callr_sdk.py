"""Drives dialtone's JSON-RPC interface with the official `callr` Python SDK, unchanged.

Usage: callr_sdk.py URL LOGIN PASSWORD < {"plan": [...], "vars": {...}}
Runs each step of the plan (tests/sdk/plan.json) through the SDK and prints one JSON object:
step name -> {"result": ...} | {"error": {"code", "message"}} | {"skipped": why}.
A parameter "{{a.b.0}}" is the value at that path of the earlier results (or of "vars");
HTTPS is trusted the usual way (SSL_CERT_FILE).
"""
import json
import re
import sys

import callr

url, login, password = sys.argv[1], sys.argv[2], sys.argv[3]
request = json.load(sys.stdin)
env = {"vars": request["vars"]}
PLACEHOLDER = re.compile(r"\{\{([^}]+)\}\}")


class Missing(Exception):
    pass


def lookup(path):
    value = env
    for part in path.split("."):
        if isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise Missing(path)
    return value


def fill(value):
    if isinstance(value, str):
        whole = PLACEHOLDER.fullmatch(value)
        if whole:
            return lookup(whole.group(1))
        return PLACEHOLDER.sub(lambda m: str(lookup(m.group(1))), value)
    if isinstance(value, list):
        return [fill(v) for v in value]
    if isinstance(value, dict):
        return {k: fill(v) for k, v in value.items()}
    return value


out = {}
for step in request["plan"]:
    name = step["name"]
    if "login_as" in step:
        out[name] = {"skipped": "callr 2.1.0 (PyPI) has no login-as option"}
        continue
    try:
        params = fill(step["params"])
    except Missing as e:
        out[name] = {"skipped": "needs " + str(e)}
        continue
    api = callr.Api(login, password + ("x" if step.get("wrong_password") else ""))
    api.set_api_url(url + "/json-rpc/v1.1/")
    try:
        result = api.call(step["method"], *params)
        env[name] = result
        out[name] = {"result": result}
    except callr.CallrException as e:
        out[name] = {"error": {"code": e.code, "message": e.msg}}
print(json.dumps(out))
