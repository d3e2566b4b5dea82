"""What the scripted Responses API bills, by OpenAI's documented automatic
prompt caching (simplified where noted, as `bench/cost_replay.py`'s OpenAI
model is), so that condense's ledger can be checked against a provider's
own bills:

- The prompt is read in order: the model's head (`tools`, `instructions`),
  then each input item, as the model reads it (stale reasoning dropped).
- A prompt of 1,024 tokens or more reads the longest prefix it shares with
  a request of the last 5 minutes, rounded down to 1,024 + a multiple of
  128 tokens; the prefix is compared in whole items (tools and instructions
  first), so a changed item misses from its first token, where OpenAI would
  still match its unchanged leading tokens.
- Caching is automatic and writing costs nothing: every prefix of 1,024
  tokens or more of such a prompt is kept for 5 minutes from its last use.
- Billed: `input_tokens` (every input token, the cached part included) and
  `input_tokens_details.cached_tokens` (the part read from the cache).

Tokens are estimated as elsewhere in the emulator (a token per 4 bytes of
an item's JSON). One cache per model, as the prefix's key starts with it;
every request is assumed to reach a machine that holds its prefix."""

import hashlib
import json
import threading
import time

MINIMUM = 1024
STEP = 128
TTL = 300.0

_lock = threading.Lock()
# prefix hash -> expires at
_cache = {}


def _tokens(value):
    return max(1, len(json.dumps(value)) // 4)


def bill(body, items, now=None):
    """The input part of one request's usage, `items` being the input as the
    model reads it (and the cache updated as the provider would)."""
    now = time.time() if now is None else now
    head = {"tools": body.get("tools") or [], "instructions": body.get("instructions")}
    h = hashlib.sha256(json.dumps(body.get("model")).encode())
    # Per boundary (after the head, then after each item): the prefix's hash and its tokens.
    hashes, ends, total = [], [], 0
    for unit in [head] + list(items):
        h.update(json.dumps(unit, sort_keys=True).encode())
        total += _tokens(unit)
        hashes.append(h.hexdigest())
        ends.append(total)
    with _lock:
        shared = next((ends[i] for i in range(len(hashes) - 1, -1, -1)
                       if _cache.get(hashes[i], 0) > now), 0)
        read = 0 if total < MINIMUM or shared < MINIMUM else MINIMUM + (shared - MINIMUM) // STEP * STEP
        if total >= MINIMUM:
            for key, end in zip(hashes, ends):
                if end >= MINIMUM:
                    _cache[key] = now + TTL
    return {"input_tokens": total, "input_tokens_details": {"cached_tokens": read}}
