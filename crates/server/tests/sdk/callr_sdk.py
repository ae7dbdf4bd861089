"""Drives dialtone's JSON-RPC interface with the official `callr` Python SDK, unchanged.

Usage: callr_sdk.py BASE_URL LOGIN PASSWORD
Prints one JSON object with what the SDK returned, for the Rust test to check.
"""
import json
import sys

import callr

base, login, password = sys.argv[1], sys.argv[2], sys.argv[3]
api = callr.Api(login, password)
api.set_api_url(base + "/json-rpc/v1.1/")

out = {}
out["timestamp"] = api.call("system.get_timestamp")
out["hash"] = api.call("sms.send", "SMS", "+33612345678", "Hello from the SDK", None)
out["hash_with_options"] = api.call(
    "sms.send", "", "+447700900123", "Flash!", {"flash_message": True, "nature": "ALERTING", "user_data": "42"}
)
out["sms"] = api.call("sms.get", out["hash"])
out["list"] = api.call("sms.get_list", "OUT", "2000-01-01 00:00:00", "2100-01-01 00:00:00")
try:
    api.call("sms.get", "ZZZZZZZZ")
    out["missing"] = None
except callr.CallrException as e:
    out["missing"] = {"code": e.code, "msg": e.msg}
wrong = callr.Api(login, password + "x")
wrong.set_api_url(base + "/json-rpc/v1.1/")
try:
    wrong.call("system.get_timestamp")
    out["wrong_password"] = None
except callr.CallrException as e:
    out["wrong_password"] = {"code": e.code, "msg": e.msg}
print(json.dumps(out))
