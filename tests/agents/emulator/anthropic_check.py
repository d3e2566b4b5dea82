"""Validation of `POST /v1/messages` as Anthropic's API does it: tool-call
pairing, mid-conversation system messages, the preserved-thinking prefix
binding (with its drop_block opt-out) and the thinking-first rule of an
active tool loop. Each violation is the API's own message."""

import os

from . import binding

MID_CONVERSATION_SYSTEM = "mid-conversation-system-2026-04-07"
BINDING_CONTROLS = "thinking-binding-controls-2026-08-01"
THINKING_TYPES = ("thinking", "redacted_thinking")
MID_CONVERSATION_SYSTEM_GA = os.environ.get("PROVIDER_MID_CONVERSATION_SYSTEM", "ga") != "beta"


class Invalid(Exception):
    """The request is refused with this message (HTTP 400)."""


def betas(headers):
    return {b.strip() for v in headers.get_all("anthropic-beta") or [] for b in v.split(",")}


def blocks(message):
    c = message.get("content")
    return c if isinstance(c, list) else []


def thinking_enabled(body):
    return (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")


def drop_block_opted_in(headers, body):
    behaviour = ((body.get("thinking") or {}).get("block_binding") or {}).get("prefix_mismatch_behavior")
    return behaviour == "drop_block" and BINDING_CONTROLS in betas(headers)


def check_shape(body):
    if not isinstance(body, dict):
        raise Invalid("Request body must be a JSON object")
    for field in ("model", "max_tokens", "messages"):
        if field not in body:
            raise Invalid(f"{field}: Field required")
    if not isinstance(body["messages"], list):
        raise Invalid("messages: Input should be a valid list")


def check_roles(headers, messages):
    """`role: "system"` inside `messages`: with the beta header always; without
    it only where the API has made it generally available (the default, as
    the pinned Claude Code assumes: it never sends that beta, "generally
    available; the header is not sent"). PROVIDER_MID_CONVERSATION_SYSTEM=beta
    restores the beta-only rule."""
    allowed = MID_CONVERSATION_SYSTEM in betas(headers) or MID_CONVERSATION_SYSTEM_GA
    for n, m in enumerate(messages):
        role = m.get("role")
        if role not in ("user", "assistant", "system"):
            raise Invalid(f"messages.{n}.role: Input should be 'user' or 'assistant'")
        if role != "system":
            continue
        if not allowed:
            raise Invalid(
                f"messages.{n}.role: `system` messages inside `messages` require the anthropic-beta "
                f"header `{MID_CONVERSATION_SYSTEM}`; use the top-level `system` parameter otherwise")
        if n == 0:
            raise Invalid("messages.0: use the top-level `system` parameter for the initial system prompt")
        content = m.get("content")
        if not isinstance(content, str) and not all(b.get("type") == "text" for b in blocks(m)):
            raise Invalid(f"messages.{n}.content: text-only role `system` messages require text blocks")


def check_tool_pairs(messages):
    """Every tool_use answered by a tool_result in the next message, every
    tool_result answering a tool_use of the message before, ids unique."""
    seen = set()
    for n, m in enumerate(messages):
        if m.get("role") == "assistant":
            ids = []
            for b in blocks(m):
                if b.get("type") == "tool_use":
                    if b.get("id") in seen:
                        raise Invalid(f"messages.{n}.content: `tool_use` ids must be unique: {b.get('id')}")
                    seen.add(b.get("id"))
                    ids.append(b.get("id"))
            if not ids:
                continue
            nxt = messages[n + 1] if n + 1 < len(messages) else None
            answered = {b.get("tool_use_id") for b in blocks(nxt or {}) if b.get("type") == "tool_result"}
            missing = [i for i in ids if i not in answered]
            if nxt is None or nxt.get("role") != "user" or missing:
                raise Invalid(
                    f"messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately "
                    f"after: {', '.join(missing or ids)}. Each `tool_use` block must have a corresponding "
                    f"`tool_result` block in the next message.")
        elif m.get("role") == "user":
            prev = messages[n - 1] if n > 0 else {}
            called = {b.get("id") for b in blocks(prev) if b.get("type") == "tool_use"} \
                if prev.get("role") == "assistant" else set()
            for k, b in enumerate(blocks(m)):
                if b.get("type") == "tool_result" and b.get("tool_use_id") not in called:
                    raise Invalid(
                        f"messages.{n}.content.{k}: unexpected `tool_use_id` found in `tool_result` "
                        f"blocks: {b.get('tool_use_id')}. Each `tool_result` block must have a "
                        f"corresponding `tool_use` block in the previous message.")


def check_binding(headers, body):
    """Checks each thinking block's signature against its recomputed prefix.
    Returns (messages, transformations): the messages with the blocks that
    are bound elsewhere dropped when the request opted in, else raises."""
    messages = body["messages"]
    drop = drop_block_opted_in(headers, body)
    broken = None  # first block bound elsewhere: it and every later one are invalid
    invalid = []
    for n, m in enumerate(messages):
        if m.get("role") != "assistant":
            continue
        for k, b in enumerate(blocks(m)):
            if b.get("type") not in THINKING_TYPES:
                continue
            why = binding.check(b.get("signature") if b.get("type") == "thinking" else b.get("data"),
                                binding.prefix_hash(body, messages, n, k), binding.thinking_text(b))
            if why == "signature" and b.get("type") == "thinking":
                raise Invalid(f"messages.{n}.content.{k}: Invalid `signature` in `thinking` block")
            if why is not None or broken is not None:
                broken = broken or (n, k)
                invalid.append((n, k))
    if not invalid:
        return messages, []
    if not drop:
        n, k = invalid[0]
        raise Invalid(f"messages.{n}.content.{k}: The block is bound to a different conversation")
    gone = set(invalid)
    kept = [dict(m, content=[b for k, b in enumerate(blocks(m)) if (n, k) not in gone])
            if any(n == g[0] for g in gone) else m for n, m in enumerate(messages)]
    return kept, [{"type": "thinking_dropped", "path": f"messages.{n}.content.{k}", "reason": "prefix_mismatch"}
                  for n, k in invalid]


def check_thinking_first(body, messages, transformations):
    """With thinking on, the assistant message of an active tool loop must
    open with its thinking block (unless drop_block dropped it). System
    messages after the tool results (Claude Code appends reminders there)
    do not end the loop."""
    turns = [n for n, m in enumerate(messages) if m.get("role") != "system"]
    if not thinking_enabled(body) or len(turns) < 2:
        return
    n = turns[-2]
    last, prev = messages[turns[-1]], messages[n]
    results = {b.get("tool_use_id") for b in blocks(last) if b.get("type") == "tool_result"}
    calls = {b.get("id") for b in blocks(prev) if b.get("type") == "tool_use"}
    if last.get("role") != "user" or prev.get("role") != "assistant" or not results or not results <= calls:
        return
    if any(t["path"] == f"messages.{n}.content.0" for t in transformations):
        return
    first = (blocks(prev) or [{}])[0].get("type")
    if first not in THINKING_TYPES:
        raise Invalid(
            f"messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
            f"`{first}`. When `thinking` is enabled, a final `assistant` message must start with a "
            f"thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
            f"We recommend you include thinking blocks from previous turns. To avoid this requirement, "
            f"disable `thinking`. Please consult our documentation at "
            f"https://docs.claude.com/en/docs/build-with-claude/extended-thinking")


def check_content(body, messages):
    """Every message has content but a final assistant one; with thinking off
    the API ignores thinking blocks, so a turn of thinking alone has none."""
    ignored = () if thinking_enabled(body) else ("thinking", "redacted_thinking")
    for n, m in enumerate(messages):
        if n == len(messages) - 1 and m.get("role") == "assistant":
            continue
        content = m.get("content")
        kept = [b for b in blocks(m) if b.get("type") not in ignored] if isinstance(content, list) else content
        if not kept:
            raise Invalid(f"messages.{n}: all messages must have non-empty content except for the optional final "
                          f"assistant message")


def validate(headers, body):
    """(messages as the model sees them, input_transformations), or raises Invalid."""
    check_shape(body)
    messages = body["messages"]
    check_roles(headers, messages)
    check_content(body, messages)
    check_tool_pairs(messages)
    messages, transformations = check_binding(headers, body)
    check_thinking_first(body, messages, transformations)
    return messages, transformations
