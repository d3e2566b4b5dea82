"""Validation of `POST /v1/responses` as OpenAI's API does it with
`store: false`: each tool call output after its call (by call_id), every
call answered before the next message, reasoning items whose
`encrypted_content` is the provider's own, and a function call the provider
made after a reasoning item sent back with that item right before it."""

import base64
import hashlib
import hmac
import json
import os
import threading

_KEY = os.urandom(32)
CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
         "local_shell_call": "local_shell_call_output"}
OUTPUTS = {v: k for k, v in CALLS.items()}


class Invalid(Exception):
    """The request is refused with this message (HTTP 400)."""

    def __init__(self, message, param="input"):
        super().__init__(message)
        self.param = param


class Reasoned:
    """call_id -> the reasoning item (id, encrypted_content) the provider
    emitted right before that call: it must come back with the call."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_call = {}

    def remember(self, call_id, reasoning):
        with self._lock:
            self._by_call[call_id] = reasoning

    def get(self, call_id):
        with self._lock:
            return self._by_call.get(call_id)


REASONED = Reasoned()


def encrypt(item_id, text):
    blob = json.dumps({"id": item_id, "text": text}, separators=(",", ":"))
    mac = hmac.new(_KEY, blob.encode(), hashlib.sha256).hexdigest()
    return base64.b64encode(json.dumps({"blob": blob, "mac": mac}).encode()).decode()


def verified(encrypted):
    try:
        outer = json.loads(base64.b64decode(encrypted, validate=True))
        good = hmac.new(_KEY, outer["blob"].encode(), hashlib.sha256).hexdigest()
        return hmac.compare_digest(good, outer["mac"])
    except Exception:
        return False


def items(body):
    value = body.get("input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list):
        raise Invalid("Invalid type for 'input': expected a string or an array of items.")
    return [dict(i, type=i.get("type", "message")) for i in value]


def check(body):
    if not isinstance(body, dict) or "model" not in body:
        raise Invalid("Missing required parameter: 'model'.", "model")
    pending = {}  # call_id -> item, calls not answered yet
    seen = set()
    listed = items(body)
    for n, item in enumerate(listed):
        kind = item["type"]
        if kind == "reasoning" and item.get("encrypted_content") is not None \
                and not verified(item["encrypted_content"]):
            raise Invalid(f"The encrypted content for item {item.get('id', f'input[{n}]')} could not be verified.")
        if kind in CALLS:
            call_id = item.get("call_id")
            if call_id in seen:
                raise Invalid(f"Duplicate item found with call_id {call_id}.")
            seen.add(call_id)
            pending[call_id] = item
            required = REASONED.get(call_id)
            if required is not None:
                before = next((listed[j] for j in range(n - 1, -1, -1) if listed[j]["type"] not in CALLS), None)
                if before is None or before["type"] != "reasoning" \
                        or before.get("encrypted_content") != required["encrypted_content"]:
                    raise Invalid(f"Item '{item.get('id') or call_id}' of type '{kind}' was provided without "
                                  f"its required 'reasoning' item: '{required['id']}'.")
        elif kind in OUTPUTS:
            call_id = item.get("call_id")
            if call_id not in pending:
                raise Invalid(f"No tool call found for {kind.replace('_', ' ')} with call_id {call_id}.")
            del pending[call_id]
        elif kind == "message" and pending:
            raise Invalid(f"No tool output found for function call {next(iter(pending))}.")
    if pending:
        raise Invalid(f"No tool output found for function call {next(iter(pending))}.")
    return listed
