"""Anthropic's preserved-thinking prefix binding, emulated. A thinking block
the provider emits carries a signature bound to its prefix: the top-level
`system`, `tools`, every message before the block's message and the blocks
before it in its message, as canonical JSON with every `cache_control` key
removed (so cache breakpoints may move) and string content read as one text
block (the same message either way). Signature = base64 of JSON
{"prefix": sha256 of the prefix, "mac": HMAC over prefix hash + text}."""

import base64
import hashlib
import hmac
import json
import os

_KEY = os.urandom(32)


def _strip(v):
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if k != "cache_control"}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def _canonical_message(m):
    """A message as the model reads it: string content is one text block
    (clients send either form for the same message)."""
    if isinstance(m, dict) and isinstance(m.get("content"), str):
        return dict(m, content=[{"type": "text", "text": m["content"]}])
    return m


def prefix_hash(body, messages, msg_index, block_index):
    """Hash of what precedes block `block_index` of `messages[msg_index]`."""
    m = messages[msg_index] if msg_index < len(messages) else {"content": []}
    content = m.get("content") if isinstance(m.get("content"), list) else []
    system = body.get("system")
    prefix = {
        "system": [{"type": "text", "text": system}] if isinstance(system, str) else system,
        "tools": body.get("tools"),
        "messages": [_canonical_message(x) for x in messages[:msg_index]],
        "blocks": content[:block_index],
    }
    canon = json.dumps(_strip(prefix), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


def _mac(prefix, text):
    return hmac.new(_KEY, (prefix + "\0" + text).encode(), hashlib.sha256).hexdigest()


def sign(prefix, text):
    blob = json.dumps({"prefix": prefix, "mac": _mac(prefix, text)}, separators=(",", ":"))
    return base64.b64encode(blob.encode()).decode()


def check(signature, prefix, text):
    """None when valid; else why: "signature" (not ours, or text changed)
    or "prefix" (bound to a different conversation)."""
    try:
        blob = json.loads(base64.b64decode(signature or "", validate=True))
        bound, mac = blob["prefix"], blob["mac"]
    except Exception:
        return "signature"
    if not hmac.compare_digest(mac, _mac(bound, text)):
        return "signature"
    return None if bound == prefix else "prefix"


def thinking_text(block):
    """The text a thinking block's signature covers (redacted: its data)."""
    return block.get("thinking", "") if block.get("type") == "thinking" else block.get("data", "")
