"""The scripted provider's `POST /v1/messages` and `/v1/messages/count_tokens`:
validated (anthropic_check), then answered as Anthropic streams: message_start,
ping, content blocks (thinking with thinking_delta + signature_delta, tool_use
with input_json_delta, text), message_delta with usage, message_stop. The usage follows Anthropic's prompt
caching rules (anthropic_cache)."""

import json
import uuid

from . import anthropic_cache, binding, script, sse
from .anthropic_check import Invalid, blocks, thinking_enabled, validate


def error(message):
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def estimate_tokens(value):
    return max(1, len(json.dumps(value)) // 4)


def latest_tool_output(messages):
    for m in reversed(messages):
        results = [b for b in blocks(m) if b.get("type") == "tool_result"]
        if results:
            return "\n".join(script.text_of(b.get("content")) for b in results)
    return None


def is_agent_turn(body):
    return any(t.get("name") == "Bash" for t in body.get("tools") or [])


def plan(body, messages):
    """The content blocks of this turn's answer and its stop reason."""
    if not is_agent_turn(body):
        # Side requests (titles, quota probes, haiku calls without tools).
        return [{"type": "text", "text": "Scripted agent session"}], "end_turn"
    step = script.next_step(latest_tool_output(messages))
    content = []
    if thinking_enabled(body):
        omitted = (body.get("thinking") or {}).get("display") == "omitted"
        text = "" if omitted else script.thinking(step)
        prefix = binding.prefix_hash(body, messages, len(messages), 0)
        content.append({"type": "thinking", "thinking": text, "signature": binding.sign(prefix, text)})
    if isinstance(step, int):
        content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}", "name": "Bash",
                        "input": {"command": script.command(step),
                                  "description": f"Run build step {step}"}})
        return content, "tool_use"
    content.append({"type": "text", "text": script.final_text(step)})
    return content, "end_turn"


def stream_events(message, content):
    usage = message["usage"]
    start = dict(message, content=[], stop_reason=None, usage=dict(usage, output_tokens=1))
    out = [sse.event("message_start", {"type": "message_start", "message": start}),
           sse.event("ping", {"type": "ping"})]
    for i, b in enumerate(content):
        if b["type"] == "thinking":
            first, deltas = {"type": "thinking", "thinking": "", "signature": ""}, []
            if b["thinking"]:
                deltas.append({"type": "thinking_delta", "thinking": b["thinking"]})
            deltas.append({"type": "signature_delta", "signature": b["signature"]})
        elif b["type"] == "tool_use":
            first = dict(b, input={})
            raw = json.dumps(b["input"])
            third = max(1, len(raw) // 3)
            deltas = [{"type": "input_json_delta", "partial_json": p}
                      for p in ("", raw[:third], raw[third:2 * third], raw[2 * third:])]
        else:
            first, deltas = {"type": "text", "text": ""}, [{"type": "text_delta", "text": b["text"]}]
        out.append(sse.event("content_block_start", {"type": "content_block_start", "index": i,
                                                     "content_block": first}))
        out += [sse.event("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
                for d in deltas]
        out.append(sse.event("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse.event("message_delta", {
        "type": "message_delta", "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
        "usage": dict(usage)}))
    out.append(sse.event("message_stop", {"type": "message_stop"}))
    return out


def messages(handler, body, entry):
    """Answers one request; fills `entry` (the log's record of it)."""
    try:
        kept, transformations = validate(handler.headers, body)
    except Invalid as e:
        entry["rejected"] = str(e)
        return 400, [json.dumps(error(str(e))).encode()], False
    content, stop = plan(body, kept)
    message = {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
               "model": body.get("model"), "content": content, "stop_reason": stop, "stop_sequence": None,
               "usage": dict(anthropic_cache.bill(body), output_tokens=estimate_tokens(content))}
    if transformations:
        message["input_transformations"] = transformations
        entry["input_transformations"] = transformations
    entry["answer"] = content
    # What was billed, as the ledger reads it (the prompt cache's rules: anthropic_cache).
    entry["usage"] = message["usage"]
    if body.get("stream"):
        return 200, stream_events(message, content), True
    return 200, [json.dumps(message).encode()], False


def count_tokens(handler, body, entry):
    try:
        validate(handler.headers, dict(body, max_tokens=1))
    except Invalid as e:
        entry["rejected"] = str(e)
        return 400, [json.dumps(error(str(e))).encode()], False
    return 200, [json.dumps({"input_tokens": estimate_tokens(body.get("messages"))}).encode()], False
