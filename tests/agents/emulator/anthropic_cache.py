"""What the scripted Messages API bills, by Anthropic's documented prompt
caching rules (simplified where noted), so that condense's ledger can be
checked against a provider's own bills:

- The prompt is read in order: tools, system, then each message's content
  blocks. A block with `cache_control` is a breakpoint; the prefix up to it
  is written to the cache for its `ttl` (5 minutes, or `"1h"`).
- A prefix is cacheable only from 1,024 tokens (Sonnet and Opus; 2,048 for
  Haiku models).
- A request reads the longest unexpired cached prefix that ends at one of
  its breakpoints or at one of the 20 block boundaries before each (the
  documented lookback); a read refreshes that entry's lifetime.
- Billed: `cache_read_input_tokens` (the prefix read), cache writes (from
  there to the last cacheable breakpoint, each stretch at its breakpoint's
  lifetime), and `input_tokens` (the rest, after the last breakpoint).

Tokens are estimated as elsewhere in the emulator (a token per 4 bytes of a
block's JSON, `cache_control` left out). One cache for every request, as an
organization's is: the model and the thinking settings do not split it (a
simplification)."""

import hashlib
import json
import threading
import time

LOOKBACK = 20
TTL = {"5m": 300.0, "1h": 3600.0}

_lock = threading.Lock()
# prefix hash -> (expires at, ttl key)
_cache = {}


def _blocks(body):
    """The prompt's blocks in order: (the block without its marker, its ttl or None)."""
    out = []

    def add(block):
        if not isinstance(block, dict):
            block = {"type": "text", "text": block}
        marker = block.get("cache_control")
        bare = {k: v for k, v in block.items() if k != "cache_control"}
        ttl = (marker.get("ttl") or "5m") if isinstance(marker, dict) else None
        out.append((bare, ttl))

    for tool in body.get("tools") or []:
        add(tool)
    system = body.get("system")
    if isinstance(system, str):
        add({"type": "text", "text": system})
    elif isinstance(system, list):
        for b in system:
            add(b)
    for m in body.get("messages") or []:
        content = m.get("content")
        for b in ([content] if isinstance(content, str) else content or []):
            add(dict(b, role=m.get("role")) if isinstance(b, dict) else {"type": "text", "text": b,
                                                                         "role": m.get("role")})
    return out


def _minimum(model):
    return 2048 if "haiku" in (model or "") else 1024


def bill(body, now=None):
    """The usage of one request (and the cache updated as the provider would)."""
    now = time.time() if now is None else now
    blocks = _blocks(body)
    # Per boundary i (after block i): the prefix's hash and its tokens.
    hashes, ends = [], []
    h, total = hashlib.sha256(), 0
    for bare, _ in blocks:
        h.update(json.dumps(bare, sort_keys=True).encode())
        total += max(1, len(json.dumps(bare)) // 4)
        hashes.append(h.hexdigest())
        ends.append(total)
    minimum = _minimum(body.get("model"))
    breakpoints = [i for i, (_, ttl) in enumerate(blocks) if ttl]
    with _lock:
        read = 0
        for bp in breakpoints:
            for i in range(bp, max(-1, bp - LOOKBACK - 1), -1):
                entry = _cache.get(hashes[i])
                if entry and entry[0] > now and ends[i] > read:
                    read = ends[i]
                    _cache[hashes[i]] = (now + TTL[entry[1]], entry[1])
                    break
        writes = {"5m": 0, "1h": 0}
        done = read
        for bp in breakpoints:
            ttl = blocks[bp][1]
            if ends[bp] < minimum:
                continue
            if ends[bp] > done:
                writes[ttl if ttl in writes else "5m"] += ends[bp] - done
                done = ends[bp]
            _cache[hashes[bp]] = (now + TTL.get(ttl, 300.0), ttl if ttl in TTL else "5m")
    written = writes["5m"] + writes["1h"]
    return {"input_tokens": total - done, "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "cache_creation": {"ephemeral_5m_input_tokens": writes["5m"],
                               "ephemeral_1h_input_tokens": writes["1h"]}}
