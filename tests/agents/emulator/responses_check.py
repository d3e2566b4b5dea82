"""Validation of `POST /v1/responses` as OpenAI's API does it with
`store: false`: each tool call output after its call (by call_id), every
call answered before the next message, reasoning items whose
`encrypted_content` is the provider's own, an output item the provider made
after a reasoning item and sent back by its item `id` with that item right
before it (the API pairs by item id: an item sent without its id is not
paired), and a `compaction_trigger` only as the final item.

Newer models' prefix rule ("Keep the prefix unchanged"): a reasoning item
is bound to its prefix (request-level `instructions`, `tools`, `text.format`
and every input item before it). One whose prefix changed is dropped without
an error and listed in the response's `input_transformations` with reason
`prefix_mismatch` and its id. The prefix is hashed as canonical JSON
(sorted keys), so key order and spacing do not matter. OpenAI's own
compaction is exempt: a reasoning item after a `compaction` item the
provider made (`/responses/compact`) is kept, whatever its prefix; a
`compaction` item the provider did not make is refused."""

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
    """Output item id -> the reasoning item (id, encrypted_content) the
    provider emitted right before that item: sent back by that id, the
    item must come with it."""

    def __init__(self):
        self._lock = threading.Lock()
        self._by_item = {}

    def remember(self, item_id, reasoning):
        with self._lock:
            self._by_item[item_id] = reasoning

    def get(self, item_id):
        if item_id is None:
            return None
        with self._lock:
            return self._by_item.get(item_id)


REASONED = Reasoned()


def prefix_hash(body, listed):
    """The hash of what a reasoning item after `listed` was produced after."""
    prefix = {
        "instructions": body.get("instructions"),
        "tools": body.get("tools"),
        "format": (body.get("text") or {}).get("format"),
        "input": listed,
    }
    canon = json.dumps(prefix, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


def encrypt(item_id, text, prefix):
    blob = json.dumps({"id": item_id, "text": text, "prefix": prefix}, separators=(",", ":"))
    mac = hmac.new(_KEY, blob.encode(), hashlib.sha256).hexdigest()
    return base64.b64encode(json.dumps({"blob": blob, "mac": mac}).encode()).decode()


def seal_compaction(item_id, listed):
    """The encrypted content of a compaction item standing for `listed`."""
    return encrypt(item_id, f"compaction of {len(listed)} items", "compaction")


def compaction(item):
    """A compaction item the provider made."""
    blob = opened(item.get("encrypted_content") or "")
    return item.get("type") == "compaction" and blob is not None and blob.get("prefix") == "compaction"


def opened(encrypted):
    """The blob of encrypted content the provider made, else None."""
    try:
        outer = json.loads(base64.b64decode(encrypted, validate=True))
        good = hmac.new(_KEY, outer["blob"].encode(), hashlib.sha256).hexdigest()
        return json.loads(outer["blob"]) if hmac.compare_digest(good, outer["mac"]) else None
    except Exception:
        return None


def verified(encrypted):
    return opened(encrypted) is not None


def items(body):
    value = body.get("input")
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    if not isinstance(value, list):
        raise Invalid("Invalid type for 'input': expected a string or an array of items.")
    return [dict(i, type=i.get("type", "message")) for i in value]


def check(body):
    """The input items, or raises Invalid."""
    if not isinstance(body, dict) or "model" not in body:
        raise Invalid("Missing required parameter: 'model'.", "model")
    pending = {}  # call_id -> item, calls not answered yet
    seen = set()
    listed = items(body)
    for n, item in enumerate(listed):
        kind = item["type"]
        if kind == "compaction_trigger" and n != len(listed) - 1:
            raise Invalid(f"Invalid 'input[{n}]': an item of type 'compaction_trigger' must be the final input item.",
                          f"input[{n}]")
        if kind == "reasoning" and item.get("encrypted_content") is not None \
                and not verified(item["encrypted_content"]):
            raise Invalid(f"The encrypted content for item {item.get('id', f'input[{n}]')} could not be verified.")
        if kind == "compaction" and not compaction(item):
            raise Invalid(f"The encrypted content for item {item.get('id', f'input[{n}]')} could not be verified.")
        required = REASONED.get(item.get("id"))
        if required is not None:
            before = next((listed[j] for j in range(n - 1, -1, -1) if listed[j]["type"] not in CALLS), None)
            if before is None or before["type"] != "reasoning" \
                    or before.get("encrypted_content") != required["encrypted_content"]:
                raise Invalid(f"Item '{item['id']}' of type '{kind}' was provided without "
                              f"its required 'reasoning' item: '{required['id']}'.")
        if kind in CALLS:
            call_id = item.get("call_id")
            if call_id in seen:
                raise Invalid(f"Duplicate item found with call_id {call_id}.")
            seen.add(call_id)
            pending[call_id] = item
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


def stale_reasoning(body, listed):
    """(the input as the model reads it, input_transformations): each
    reasoning item whose prefix changed since the provider made it, dropped
    and listed with reason `prefix_mismatch`."""
    kept, dropped = [], []
    compacted = False
    for n, item in enumerate(listed):
        compacted = compacted or compaction(item)
        blob = opened(item["encrypted_content"]) if item["type"] == "reasoning" \
            and item.get("encrypted_content") is not None else None
        if blob is not None and not compacted and blob.get("prefix") != prefix_hash(body, listed[:n]):
            dropped.append({"type": "drop", "id": item.get("id") or blob["id"], "reason": "prefix_mismatch"})
            continue
        kept.append(item)
    return kept, dropped
