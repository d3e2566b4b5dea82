#!/usr/bin/env python3
"""Cost replay: what a session costs at the provider with and without condense.

    bench/cost_replay.py [--no-build] [--bin target/release/condense]
                         [--format openai,anthropic] [--session small-00,long]
                         [--mode none,default,precompute,every-turn]
                         [--interval 20] [--pinned-tokens 0] [--openai-model gpt-4o]
                         [--llm http://127.0.0.1:8089/v1] [--sleep]
                         [--verbose] [--json FILE]

Stdlib only. A summary rewrites the prompt's prefix, so the provider's prompt
cache is written again, and an LLM summary costs tokens of its own: fewer
tokens sent is not the same as less money. This script replays agent
sessions turn by turn through condense's proxy against a recording provider,
prices every request the provider receives under a model of prompt caching,
and compares four modes.

Sessions. Each example thread of data/threads (small-00, small-01,
medium-02, medium-03, large-04) grown one message at a time: the agent calls
the model where a run of user messages / tool results ends (after the last
of parallel tool results: a request with some results missing is invalid),
sending every message before that point; what the model answered (the
assistant messages up to the next input) is that turn's output. `long` is
all five threads of a format one after the other (one agent session working
on five tasks: large-04's system prompt, tool ids prefixed per part, tools
merged by name): about 220k tokens in OpenAI form and 275k in Anthropic
form, longer than both priced models' windows. With gpt-4o (128k) large-04
(140k) is longer than the window too. Every request carries the priced
model's name (below) instead of the fixture's. The fixtures' system prompt
and tools are small (about 300 tokens, under the 1,024 a cache needs);
`--pinned-tokens N` pads the system prompt with about N tokens of numbered
rules, as an agent with a large pinned prefix sends (Claude Code: 20k+).

The client. Anthropic requests are sent as Claude Code sends them: the
system prompt as a block with `cache_control: ephemeral`, and
`cache_control` on the last block of the last message (the fixtures carry
no breakpoints; moving that marker from turn to turn is the common client
behaviour). OpenAI requests go as they are (its caching is automatic).

Modes, each against a fresh condense (its own empty summary cache):
  none        the client posts straight to the recording provider;
  default     through condense, the built-in `default` profile;
  precompute  through condense, a profile with `precompute_at = 0.8` (shown
              as unavailable when this condense rejects the field);
  every-turn  through condense, `max_messages_before_summary = 1`,
              `min_summary_gain = 0`, `max_payback_turns = 1000000`: a new
              summary whenever anything is due and it makes the prompt
              smaller (from min_recent_messages + 4 messages on).

The recording provider (a threaded http.server in this process) answers each
request at once with a short assistant text and `usage`, records the body
bytes exactly as forwarded and its own time, and checks the request as the
API would, minimally: the JSON parses; Anthropic: the first message is a
user message, roles are user/assistant, every tool_use is answered by a
tool_result in the user messages right after it and every tool_result
answers a tool_use of the assistant message right before; OpenAI: every
tool call is answered by the tool messages right after it and every tool
message answers one of them. A request that fails is answered 400 and the
run stops with exit status 1: a broken proxy cannot look cheap.

Counting. Tokens are counted by a separate condense (`POST /v1/tokens`,
per message): exact o200k_base for gpt-4o/gpt-4.1/gpt-5; for Claude
o200k_base x 1.25 (condense's calibration; an estimate). A request's input
is the tools, the system prompt, every message and the reply priming.

Pricing model (prices in $ per million tokens, PRICES below; as published
for 2025 models, edit them to yours):
  Anthropic (claude-sonnet-4-5: input 3.00, output 15.00; cache write 1.25x
    = 3.75 for the 5-minute cache, cache read 0.1x = 0.30). Prefix order is
    tools, system, messages. A breakpoint is a block carrying
    `cache_control` in the forwarded body (as the client placed it and
    condense forwarded it); a prefix is cached only from 1,024 tokens on.
    The request reads the longest prefix that an earlier request (in this
    session) wrote at one of its breakpoints, no more than 5 minutes ago
    (each read renews the 5 minutes), found at this request's breakpoints
    or up to 20 content blocks before one (Anthropic's lookback); it writes
    everything from there to its last breakpoint (1.25x); what follows the
    last breakpoint is plain input. Prefixes are compared message by
    message (a changed message misses from its first token, as a changed
    block does at Anthropic).
  OpenAI (gpt-4o: input 2.50, cached 1.25 = 50% off, output 10.00;
    gpt-4.1: 2.00 / 0.50 / 8.00; gpt-5: 1.25 / 0.125 / 10.00). Automatic
    caching: a prompt of 1,024 tokens or more reads the longest prefix it
    shares with a request of the last 5 minutes, rounded down to 1,024 +
    a multiple of 128 tokens; writing costs nothing. The shared prefix is
    counted in whole messages (tools first), so a summary that was extended
    counts as new from its first token, where OpenAI would still match its
    unchanged leading tokens: a little against condense. Every request is
    assumed to reach a machine that holds its prefix.
  Output is the fixture's assistant messages of the turn, at the output
  price: the same in every mode.
  The clock: turn k+1 is sent `--interval` seconds (20) after turn k's
  answer came back (the model's time and the tools' run); a request reaches
  the provider, and is priced against its cache, when condense is done
  with it (the measured round trip minus the provider's own time: with an
  LLM summarizer, minutes).
  With `--sleep` the script also waits that long in real time (for
  precompute, whose summary is written between turns).
  Summarizer calls: the heuristic summarizer costs nothing. With
  `--llm URL` condense's summarizing upstream is a recording relay in front
  of that OpenAI-compatible server; every call's prompt and completion
  tokens (its `usage`) are priced at `--summarizer-model`'s prices
  (gpt-4o-mini: 0.15 in, 0.60 out; no caching assumed).

Printed per session and mode (per turn with --verbose), and in total:
cost in dollars and relative to `none`, tokens sent, cache-read and
cache-write tokens, summaries written (turns whose forwarded summary
message differs from the previous turn's), the summarizer's dollars,
condense's added latency per turn (client round trip minus the provider's
own time, p50/p99; `none` shows the floor, the direct hop), and turns over
the model's window (`none` past the window: the provider would refuse
those; priced as if it had not). Then every session length: per
session and mode, the session truncated after each of its turns, and the
length where it costs the most more than `none` over the same turns (the
turn, the dollars, the percent; "never dearer" when no length does: a
session may end on any turn). Then the issue's bars for the default
profile: cheaper than `none` on every session longer than the window, at
most 5% dearer on the others; and no session length dearer than `none`.
"""

import argparse
import hashlib
import http.client
import json
import queue
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import common
from common import pct

PARTS = ["small-00", "small-01", "medium-02", "medium-03", "large-04"]
LONG_ORDER = ["large-04", "medium-02", "medium-03", "small-00", "small-01"]

# $ per million tokens.
PRICES = {
    "claude-sonnet-4-5": {"input": 3.00, "cache_write": 3.75, "cache_read": 0.30, "output": 15.00},
    "claude-haiku-4-5": {"input": 1.00, "cache_write": 1.25, "cache_read": 0.10, "output": 5.00},
    "gpt-4o": {"input": 2.50, "cache_read": 1.25, "output": 10.00},
    "gpt-4.1": {"input": 2.00, "cache_read": 0.50, "output": 8.00},
    "gpt-5": {"input": 1.25, "cache_read": 0.125, "output": 10.00},
    "gpt-4o-mini": {"input": 0.15, "cache_read": 0.075, "output": 0.60},
}
TTL = 300.0
MIN_CACHEABLE = 1024
LOOKBACK_BLOCKS = 20
MODES = ["none", "default", "precompute", "every-turn"]
PROFILES = {
    "default": None,
    "precompute": "[profiles.precompute]\nprecompute_at = 0.8\n",
    "every-turn": "[profiles.every-turn]\nmax_messages_before_summary = 1\nmin_summary_gain = 0\n"
                  "max_payback_turns = 1000000\n",
}
SUMMARY_MARK = "[Context Summary"


def dump(d):
    return json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode()


# --------------------------------------------------------------------------
# The recording provider and its checks.
# --------------------------------------------------------------------------


def blocks(content):
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content or []


def check_anthropic(doc):
    msgs = doc.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return "messages: missing or empty"
    if msgs[0].get("role") != "user":
        return "messages[0]: must be a user message"
    if msgs[-1].get("role") != "user":
        return "the last message must be a user message"
    open_ids = set()
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role not in ("user", "assistant"):
            return f"messages[{i}].role: {role!r}"
        bs = blocks(m.get("content"))
        if role == "assistant":
            if open_ids:
                return f"messages[{i}]: tool_use ids {sorted(open_ids)} have no tool_result"
            open_ids = {b["id"] for b in bs if b.get("type") == "tool_use"}
            answered = set()
        else:
            for b in bs:
                if b.get("type") == "tool_result":
                    tid = b.get("tool_use_id")
                    if tid not in open_ids and tid not in answered:
                        return f"messages[{i}]: tool_result {tid} answers no tool_use right before it"
                    open_ids.discard(tid)
                    answered.add(tid)
            # tool results belong in the user message right after the tool_use
            if open_ids:
                return f"messages[{i}]: tool_use ids {sorted(open_ids)} not answered by the next user message"
    return None


def check_openai(doc):
    msgs = doc.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return "messages: missing or empty"
    open_ids, calls = set(), set()
    for i, m in enumerate(msgs):
        role = m.get("role")
        if role == "tool":
            tid = m.get("tool_call_id")
            if tid not in calls:
                return f"messages[{i}]: tool message {tid} answers no call of the assistant before it"
            open_ids.discard(tid)
            continue
        if open_ids:
            return f"messages[{i}]: tool calls {sorted(open_ids)} have no tool message"
        calls = set()
        if role == "assistant":
            calls = {c["id"] for c in m.get("tool_calls") or []}
            open_ids = set(calls)
        elif role not in ("system", "developer", "user"):
            return f"messages[{i}].role: {role!r}"
    if open_ids:
        return f"tool calls {sorted(open_ids)} have no tool message"
    return None


OPENAI_ANSWER = {
    "id": "chatcmpl-replay", "object": "chat.completion", "created": 0, "model": "replay",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
}
ANTHROPIC_ANSWER = {
    "id": "msg_replay", "type": "message", "role": "assistant", "model": "replay",
    "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


class ProviderHandler(common.QuietHandler):
    def do_POST(self):
        t0 = time.perf_counter()
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        path = self.path.split("?")[0]
        err = None
        try:
            doc = json.loads(body)
        except ValueError:
            doc, err = None, "body is not JSON"
        if path.endswith("/chat/completions"):
            err = err or check_openai(doc)
            answer = OPENAI_ANSWER
        elif path == "/v1/messages":
            err = err or check_anthropic(doc)
            answer = ANTHROPIC_ANSWER
        else:
            err, answer = f"no route {path}", None
        if err:
            self.send_json(dump({"error": {"type": "invalid_request_error", "message": err}}), "400 Bad Request")
        else:
            self.send_json(dump(answer))
        self.server.records.put({"path": path, "body": body, "doc": doc, "error": err,
                                 "own": time.perf_counter() - t0})


def start_provider():
    server = common.serve(ProviderHandler)
    server.records = queue.Queue()
    return server


class RelayHandler(common.QuietHandler):
    """Condense's summarizing upstream: forwards to the real LLM, records usage."""

    def _relay(self, method):
        body = self.rfile.read(int(self.headers.get("content-length") or 0)) if method == "POST" else None
        srv = self.server
        with srv.lock:
            srv.in_flight += 1
        t0 = time.time()
        try:
            target = srv.upstream + self.path[len("/v1"):] if self.path.startswith("/v1") else srv.upstream + self.path
            u = urllib_parse(target)
            c = http.client.HTTPConnection(u[0], u[1], timeout=3600)
            hdrs = {"content-type": "application/json"}
            c.request(method, u[2], body=body, headers=hdrs)
            r = c.getresponse()
            data = r.read()
            status = r.status
            c.close()
        except OSError as e:
            data, status = dump({"error": str(e)}), 502
        usage = {}
        try:
            usage = json.loads(data).get("usage") or {}
        except (ValueError, AttributeError):
            pass
        with srv.lock:
            srv.in_flight -= 1
            srv.calls.append({"start": t0, "end": time.time(), "status": status,
                              "prompt": usage.get("prompt_tokens", 0),
                              "completion": usage.get("completion_tokens", 0)})
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        self._relay("POST")

    def do_GET(self):
        self._relay("GET")


def urllib_parse(url):
    u = urlsplit(url)
    path = u.path + (f"?{u.query}" if u.query else "")
    return u.hostname, u.port or 80, path


def start_relay(upstream):
    server = common.serve(RelayHandler)
    server.upstream = upstream.rstrip("/")
    server.lock = threading.Lock()
    server.in_flight = 0
    server.calls = []
    return server


# --------------------------------------------------------------------------
# condense processes.
# --------------------------------------------------------------------------


def start_condense(binary, workdir, name, provider_port=None, profiles=None, llm=None):
    """condense with its own SQLite cache, no limits that would turn a long
    replay away, and only these settings; its output in `workdir/NAME.log`
    (NotReady carries it when condense refuses a setting)."""
    env = dict(CONDENSE_MAX_CONCURRENCY="0", CONDENSE_MEMORY_BUDGET_BYTES="0", CONDENSE_REQUEST_TIMEOUT="3600",
               CONDENSE_DATABASE_URL=f"sqlite://{workdir}/{name}.sqlite3?mode=rwc")
    if provider_port:
        env.update(CONDENSE_PROXY_OPENAI_URL=f"http://127.0.0.1:{provider_port}/v1",
                   CONDENSE_PROXY_ANTHROPIC_URL=f"http://127.0.0.1:{provider_port}")
    if profiles:
        (workdir / f"{name}.toml").write_text(profiles)
        env["CONDENSE_PROFILES_FILE"] = str(workdir / f"{name}.toml")
    if llm:
        env.update(CONDENSE_UPSTREAM_URL=llm, CONDENSE_UPSTREAM_MODEL="local",
                   CONDENSE_UPSTREAM_CONTEXT_WINDOW="8192", CONDENSE_UPSTREAM_TIMEOUT="1800",
                   CONDENSE_UPSTREAM_RETRY_BUDGET="3600", CONDENSE_UPSTREAM_MAX_RETRIES="1")
    return common.Condense(binary, env, what=f"condense ({name})", log=workdir / f"{name}.log")


class Counter:
    """Per-part token counts of a thread by condense's POST /v1/tokens."""

    def __init__(self, port):
        self.client = common.Conn(port, timeout=7200)

    def count(self, fmt, doc):
        req = {k: doc[k] for k in ("model", "messages", "system", "tools") if k in doc}
        req["format"] = fmt
        _, status, _, data = self.client.request("POST", "/v1/tokens", dump(req),
                                                 {"content-type": "application/json"})
        r = json.loads(data)
        if status != 200:
            sys.exit(f"/v1/tokens answered {status}: {data[:300]!r}")
        head = r["tools_tokens"] + sum(e["tokens"] for e in r["messages"] if e["index"] is None)
        per = [0] * len(doc["messages"])
        for e in r["messages"]:
            if e["index"] is not None:
                per[e["index"]] = e["tokens"]
        return {"total": r["total_tokens"], "head": head, "per": per, "window": r["context_window"]}


# --------------------------------------------------------------------------
# Sessions.
# --------------------------------------------------------------------------


def load(fmt, name):
    return common.load_thread(f"{name}.{fmt}")


def prefixed_ids(fmt, msgs, tag):
    out = json.loads(json.dumps(msgs))
    for m in out:
        if fmt == "openai":
            for c in m.get("tool_calls") or []:
                c["id"] = tag + c["id"]
            if m.get("tool_call_id"):
                m["tool_call_id"] = tag + m["tool_call_id"]
        elif isinstance(m.get("content"), list):
            for b in m["content"]:
                if b.get("type") == "tool_use":
                    b["id"] = tag + b["id"]
                elif b.get("type") == "tool_result":
                    b["tool_use_id"] = tag + b["tool_use_id"]
    return out


def tool_name(t):
    return t.get("name") or (t.get("function") or {}).get("name")


def long_session(fmt):
    """All five threads of a format in one session (see the docstring)."""
    first = load(fmt, LONG_ORDER[0])
    thread = {k: v for k, v in first.items() if k != "messages"}
    msgs, tools = [], {tool_name(t): t for t in first.get("tools", [])}
    for n, name in enumerate(LONG_ORDER):
        t = load(fmt, name)
        part = t["messages"]
        if n:  # the session's system prompt stays the first thread's
            part = [m for m in part if m.get("role") not in ("system", "developer")]
        if n + 1 < len(LONG_ORDER):  # a thread cut after a tool call: the call goes
            while part and part[-1].get("role") == "assistant" and (
                    part[-1].get("tool_calls") or any(b.get("type") == "tool_use" for b in blocks(part[-1].get("content")))):
                part = part[:-1]
        msgs += prefixed_ids(fmt, part, f"p{n}_")
        for tool in t.get("tools", []):
            tools.setdefault(tool_name(tool), tool)
    thread["messages"], thread["tools"] = msgs, list(tools.values())
    return thread


def pinned(fmt, thread, tokens):
    """The thread with about `tokens` more tokens of system prompt (distinct
    numbered rules, ~18 tokens a line): a client's large pinned prefix."""
    if tokens <= 0:
        return thread
    pad = "".join(f"\nRule {i}: before changing module m{i}, read its tests and keep them green."
                  for i in range(tokens // 18))
    thread = dict(thread)
    if fmt == "anthropic":
        thread["system"] = (thread.get("system") or "") + pad
    else:
        msgs = [dict(m) for m in thread["messages"]]
        msgs[0]["content"] += pad
        thread["messages"] = msgs
    return thread


def is_input(fmt, m):
    return m.get("role") in (("user", "tool") if fmt == "openai" else ("user",))


def turns(fmt, msgs):
    """(k, j): the agent sends msgs[:k]; the model's answer is msgs[k:j]."""
    out = []
    for k in range(1, len(msgs) + 1):
        if is_input(fmt, msgs[k - 1]) and (k == len(msgs) or not is_input(fmt, msgs[k])):
            j = k
            while j < len(msgs) and not is_input(fmt, msgs[j]):
                j += 1
            out.append((k, j))
    return out


def client_request(fmt, thread, k, model):
    """The body the client sends at turn k (see "The client")."""
    doc = {k2: v for k2, v in thread.items() if k2 != "messages"}
    doc["model"] = model
    msgs = [dict(m) for m in thread["messages"][:k]]
    if fmt == "anthropic":
        doc["max_tokens"] = 4096
        if isinstance(doc.get("system"), str):
            doc["system"] = [{"type": "text", "text": doc["system"], "cache_control": {"type": "ephemeral"}}]
        last = msgs[-1]
        bs = [dict(b) for b in blocks(last["content"])]
        bs[-1]["cache_control"] = {"type": "ephemeral"}
        last["content"] = bs
    doc["messages"] = msgs
    return doc


# --------------------------------------------------------------------------
# The prompt-cache models.
# --------------------------------------------------------------------------


def strip_cc(x):
    if isinstance(x, dict):
        return {k: strip_cc(v) for k, v in x.items() if k != "cache_control"}
    if isinstance(x, list):
        return [strip_cc(v) for v in x]
    return x


def chain(fmt, doc):
    """Hash keys of the prefix ending at the head (tools, system) and after each message."""
    if fmt == "anthropic":
        head = [doc.get("model"), strip_cc(doc.get("tools")), strip_cc(blocks(doc.get("system")))]
        canon = lambda m: [m.get("role"), strip_cc(blocks(m.get("content")))]
    else:
        head = [doc.get("model"), doc.get("tools")]
        canon = lambda m: m
    h = hashlib.sha256(dump(head)).digest()
    keys = [h]
    for m in doc["messages"]:
        h = hashlib.sha256(h + dump(canon(m))).digest()
        keys.append(h)
    return keys


def cum_tokens(counts):
    out = [counts["head"]]
    for t in counts["per"]:
        out.append(out[-1] + t)
    return out


class AnthropicCache:
    def __init__(self):
        self.entries = {}  # prefix key -> expiry (model seconds)

    def price(self, doc, counts, now):
        keys, T = chain("anthropic", doc), cum_tokens(counts)
        msgs = doc["messages"]
        # Boundaries: 0 = after tools+system, i+1 = after message i.
        bps = set()
        if any("cache_control" in (t or {}) for t in doc.get("tools") or []) or \
                any("cache_control" in b for b in blocks(doc.get("system"))):
            bps.add(0)
        for i, m in enumerate(msgs):
            if any("cache_control" in b for b in blocks(m.get("content"))):
                bps.add(i + 1)
        nblocks = [0] + [len(blocks(m.get("content"))) for m in msgs]
        hit = None
        for b in bps:
            c, back = b, 0
            while c >= 0 and back <= LOOKBACK_BLOCKS:
                if self.entries.get(keys[c], -1) >= now:
                    if hit is None or c > hit:
                        hit = c
                    break
                back += nblocks[c]
                c -= 1
        read = 0
        if hit is not None and T[hit] >= MIN_CACHEABLE:
            read = T[hit]
            self.entries[keys[hit]] = now + TTL
        cacheable = [b for b in bps if T[b] >= MIN_CACHEABLE]
        last = max(cacheable, default=None)
        write = max(0, T[last] - read) if last is not None else 0
        for b in cacheable:
            self.entries[keys[b]] = now + TTL
        uncached = counts["total"] - read - write
        return {"read": read, "write": write, "uncached": uncached}


class OpenAICache:
    def __init__(self):
        self.entries = {}

    def price(self, doc, counts, now):
        keys, T = chain("openai", doc), cum_tokens(counts)
        lcp = 0
        for i in range(len(keys) - 1, -1, -1):
            if self.entries.get(keys[i], -1) >= now:
                lcp = T[i]
                break
        read = 0 if lcp < MIN_CACHEABLE else MIN_CACHEABLE + (lcp - MIN_CACHEABLE) // 128 * 128
        if counts["total"] >= MIN_CACHEABLE:
            for i, key in enumerate(keys):
                if T[i] >= MIN_CACHEABLE:
                    self.entries[key] = now + TTL
        return {"read": read, "write": 0, "uncached": counts["total"] - read}


def dollars(price, p):
    return (p["uncached"] * price["input"] + p["write"] * price.get("cache_write", 0)
            + p["read"] * price["cache_read"] + p["output"] * price["output"]) / 1e6


def summary_text(fmt, doc):
    for m in doc["messages"]:
        for b in blocks(m.get("content")):
            if b.get("type") == "text" and b.get("text", "").startswith(SUMMARY_MARK):
                return b["text"]
    return None


# --------------------------------------------------------------------------
# The replay.
# --------------------------------------------------------------------------


def headers(fmt, mode):
    h = common.api_headers(fmt)
    if mode in ("precompute", "every-turn"):
        h["x-condense-profile"] = mode
    return h


def replay(args, fmt, name, thread, mode, provider, counter, relay, workdir):
    """Per-turn records of one session in one mode; None when the mode is unavailable."""
    server = None
    port = provider.server_address[1]
    if mode != "none":
        tag = f"{fmt}-{name}-{mode}"
        try:
            server = start_condense(args.bin, workdir, tag, provider.server_address[1],
                                    PROFILES[mode], relay and f"http://127.0.0.1:{relay.server_address[1]}/v1")
        except common.NotReady as e:
            if mode == "precompute" and "precompute_at" in e.log:
                return None
            raise
        port = server.port
    model = args.anthropic_model if fmt == "anthropic" else args.openai_model
    path = "/v1/messages" if fmt == "anthropic" else "/v1/chat/completions"
    cache = AnthropicCache() if fmt == "anthropic" else OpenAICache()
    fixture_counts = counter.count(fmt, dict(thread, model=model))
    client = common.Conn(port, timeout=7200)
    now, prev_summary, out, marks = 0.0, None, [], []
    try:
        for n, (k, j) in enumerate(turns(fmt, thread["messages"])):
            body = dump(client_request(fmt, thread, k, model))
            marks.append(len(relay.calls) if relay else 0)
            dt, status, hdrs, data = client.request("POST", path, body, headers(fmt, mode))
            rec = provider.records.get(timeout=60)
            while not provider.records.empty():  # one forward per turn is expected
                rec = provider.records.get()
            if status != 200 or rec["error"]:
                sys.exit(f"{fmt} {name} {mode} turn {n}: status {status}, provider: {rec['error']}; "
                         f"{data[:300]!r}")
            doc = rec["doc"]
            counts = counter.count(fmt, doc)
            # The provider caches when the request reaches it: after condense's time.
            arrival = now + dt - rec["own"]
            p = cache.price(doc, counts, arrival)
            p["output"] = sum(fixture_counts["per"][k:j])
            summ = summary_text(fmt, doc)
            r = {"turn": n, "messages": k, "tokens": counts["total"], **p,
                 "cost": dollars(PRICES[model], p),
                 "summarizer_cost": 0.0, "summarizer_calls": 0, "summarizer_tokens": 0,
                 "summary_written": bool(summ) and summ != prev_summary,
                 "compressed": hdrs.get("x-condense-compressed") == "true",
                 "note": hdrs.get("x-condense-note"),
                 "added_ms": (dt - rec["own"]) * 1000, "round_trip_s": dt,
                 "over_window": counts["total"] > counts["window"], "clock": arrival}
            prev_summary = summ or prev_summary
            out.append(r)
            if args.verbose:
                print(f"  {fmt} {name} {mode} t{n:<3} msgs {k:<4} tok {r['tokens']:>7} read {p['read']:>7} "
                      f"write {p['write']:>7} ${r['cost']:.4f} {'S' if r['summary_written'] else ' '}"
                      f"{' C' if r['compressed'] else '  '} +{r['added_ms']:.1f} ms"
                      f"{' note: ' + r['note'] if r['note'] else ''}", flush=True)
            now += dt + args.interval
            if args.sleep:
                time.sleep(args.interval)
        if relay:
            # A turn's summarizer calls are those that started from its request
            # on until the next turn's: a background summary (precompute)
            # belongs to the turn that set it off.
            while relay.in_flight:
                time.sleep(0.2)
            price = PRICES[args.summarizer_model]
            marks.append(len(relay.calls))
            for r, a, b in zip(out, marks, marks[1:]):
                calls = relay.calls[a:b]
                s_in = sum(c["prompt"] for c in calls)
                s_out = sum(c["completion"] for c in calls)
                r.update(summarizer_calls=len(calls), summarizer_tokens=s_in + s_out,
                         summarizer_cost=(s_in * price["input"] + s_out * price["output"]) / 1e6)
    finally:
        client.close()
        if server:
            server.stop()
    return out


def summarize(recs):
    if not recs:
        return None
    s = {k: sum(r[k] for r in recs) for k in
         ("tokens", "read", "write", "uncached", "output", "cost", "summarizer_cost", "summarizer_tokens")}
    s["turns"] = len(recs)
    s["summaries"] = sum(r["summary_written"] for r in recs)
    s["compressed"] = sum(r["compressed"] for r in recs)
    s["over_window"] = sum(r["over_window"] for r in recs)
    s["notes"] = sum(1 for r in recs if r["note"])
    s["total_cost"] = s["cost"] + s["summarizer_cost"]
    s["p50"] = pct([r["added_ms"] for r in recs], 50)
    s["p99"] = pct([r["added_ms"] for r in recs], 99)
    return s


def worst_length(recs, base):
    """The session length (truncated after each turn) where `recs` costs the
    most more than `none` did over the same turns: (turn, dollars, percent);
    turn None when no length costs more (a difference under a millionth of a
    dollar is rounding)."""
    worst, spent, spent_none = (None, 0.0, 0.0), 0.0, 0.0
    for r, b in zip(recs, base):
        spent += r["cost"] + r["summarizer_cost"]
        spent_none += b["cost"] + b["summarizer_cost"]
        diff = spent - spent_none
        rel = diff / spent_none * 100 if spent_none else 0.0
        if diff > 1e-6 and (worst[0] is None or rel > worst[2]):
            worst = (r["turn"], diff, rel)
    return worst


def print_lengths(fmt, model, sessions, modes, results):
    """Per session and mode: the whole session vs `none`, and its worst length."""
    print(f"\n{fmt} ({model}): every session length (the session truncated after each turn) vs none")
    print("| session | mode | turns | whole session vs none | worst length: turn | its difference $ | vs none |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in sessions:
        base = results[(fmt, name, "none")]
        spent_none = sum(b["cost"] + b["summarizer_cost"] for b in base)
        for mode in modes:
            recs = results[(fmt, name, mode)]
            if mode == "none" or not recs:
                continue
            spent = sum(r["cost"] + r["summarizer_cost"] for r in recs)
            turn, diff, rel = worst_length(recs, base)
            where = "never dearer | | " if turn is None else f"{turn} | {diff:+.4f} | {rel:+.1f}%"
            print(f"| {name} | {mode} | {len(recs)} | {(spent / spent_none - 1) * 100:+.1f}% | {where} |")


def kt(n):
    return f"{n / 1000:,.1f}k"


def print_table(title, rows):
    """rows: (session, mode, summary or None, none's summary)."""
    print(f"\n{title}")
    print("| session | mode | turns | tokens sent | cache read | cache write | summaries | "
          "summarizer $ | cost $ | vs none | added p50 / p99 ms | over window |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for session, mode, s, base in rows:
        if s is None:
            print(f"| {session} | {mode} | unavailable (condense has no precompute_at) ||||||||||")
            continue
        rel = "" if mode == "none" or not base else f"{(s['total_cost'] / base['total_cost'] - 1) * 100:+.1f}%"
        print(f"| {session} | {mode} | {s['turns']} | {kt(s['tokens'])} | {kt(s['read'])} | {kt(s['write'])} | "
              f"{s['summaries']} | {s['summarizer_cost']:.4f} | {s['total_cost']:.4f} | {rel} | "
              f"{s['p50']:.1f} / {s['p99']:.1f} | {s['over_window']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--bin", default=str(common.BINARY))
    ap.add_argument("--format", default="openai,anthropic")
    ap.add_argument("--session", default=",".join(PARTS + ["long"]))
    ap.add_argument("--mode", default=",".join(MODES))
    ap.add_argument("--interval", type=float, default=20.0, help="seconds between a turn's answer and the next turn")
    ap.add_argument("--openai-model", default="gpt-4o", choices=["gpt-4o", "gpt-4.1", "gpt-5"])
    ap.add_argument("--anthropic-model", default="claude-sonnet-4-5", choices=["claude-sonnet-4-5", "claude-haiku-4-5"])
    ap.add_argument("--summarizer-model", default="gpt-4o-mini", choices=sorted(PRICES))
    ap.add_argument("--pinned-tokens", type=int, default=0,
                    help="add about this many tokens to the system prompt (Claude Code's is 20k+)")
    ap.add_argument("--llm", help="OpenAI-compatible base URL of the summarizing LLM (default: heuristic)")
    ap.add_argument("--sleep", action="store_true", help="wait --interval seconds between turns in real time")
    ap.add_argument("--verbose", action="store_true", help="print every turn")
    ap.add_argument("--json", help="write every turn's record to this file")
    args = ap.parse_args()
    if not args.no_build:
        common.build()
    fmts, sessions, modes = args.format.split(","), args.session.split(","), args.mode.split(",")
    if "none" not in modes:
        modes = ["none"] + modes  # the baseline of "vs none"
    workdir = Path(tempfile.mkdtemp(prefix="cost-replay-"))
    provider = start_provider()
    relay = start_relay(args.llm) if args.llm else None
    counting = start_condense(args.bin, workdir, "counter")
    counter = Counter(counting.port)
    print(f"priced: {args.openai_model} (OpenAI), {args.anthropic_model} (Anthropic); interval {args.interval:g} s; "
          f"system prompt padded by ~{args.pinned_tokens} tokens; "
          f"summarizer: {'LLM at ' + args.llm + ', priced as ' + args.summarizer_model if args.llm else 'heuristic ($0)'}")
    results, everything = {}, []
    try:
        for fmt in fmts:
            for name in sessions:
                thread = long_session(fmt) if name == "long" else load(fmt, name)
                thread = pinned(fmt, thread, args.pinned_tokens)
                for mode in modes:
                    t0 = time.time()
                    recs = replay(args, fmt, name, thread, mode, provider, counter, relay, workdir)
                    results[(fmt, name, mode)] = recs
                    for r in recs or []:
                        everything.append({"format": fmt, "session": name, "mode": mode, **r})
                    s = summarize(recs)
                    print(f"# {fmt} {name} {mode}: " + (f"{s['turns']} turns, ${s['total_cost']:.4f}, "
                          f"{s['summaries']} summaries (summarizer ${s['summarizer_cost']:.4f}, "
                          f"{s['summarizer_tokens']} tokens), {time.time() - t0:.1f} s" if s else "unavailable"),
                          flush=True)
    finally:
        counting.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    report(args, fmts, sessions, modes, results)
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1))


def report(args, fmts, sessions, modes, results):
    verdicts = []
    for fmt in fmts:
        model = args.anthropic_model if fmt == "anthropic" else args.openai_model
        rows = []
        for name in sessions:
            base = summarize(results[(fmt, name, "none")])
            rows += [(name, mode, summarize(results[(fmt, name, mode)]), base) for mode in modes]
            d = summarize(results.get((fmt, name, "default")))
            if d:
                longer = base["over_window"] > 0
                rel = d["total_cost"] / base["total_cost"] - 1
                ok = rel < 0 if longer else rel <= 0.05
                past = f"; none has {base['over_window']} of {base['turns']} turns past the window" if longer else ""
                verdicts.append(f"{fmt} {name} ({'longer than' if longer else 'within'} the window{past}): "
                                f"default {rel * 100:+.1f}% vs none: {'meets' if ok else 'MISSES'} the bar "
                                f"({'< 0%' if longer else '<= +5%'})")
        for mode in modes:
            recs = [r for n in sessions for r in (results[(fmt, n, mode)] or [None])]
            if all(recs):
                rows.append(("**total**", mode, summarize(recs), None))
        base_tot = next((r[2] for r in rows if r[0] == "**total**" and r[1] == "none"), None)
        rows = [(a, b, c, base_tot if a == "**total**" else d) for a, b, c, d in rows]
        print_table(f"{fmt} ({model})", rows)
        print_lengths(fmt, model, sessions, modes, results)
        for name in sessions:
            turn, diff, rel = worst_length(results.get((fmt, name, "default")) or [], results[(fmt, name, "none")])
            if results.get((fmt, name, "default")):
                verdicts.append(f"{fmt} {name}: default " + ("costs no more than none at every session length"
                                if turn is None else f"LOSES at some length: after turn {turn}, "
                                f"{diff:+.4f} dollars ({rel:+.1f}%) vs none"))
    print()
    for v in verdicts:
        print(v)


if __name__ == "__main__":
    main()
