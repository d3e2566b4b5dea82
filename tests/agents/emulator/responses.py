"""The scripted provider's `POST /v1/responses`, `/v1/responses/input_tokens`
and `/v1/responses/compact` (an opaque, signed `compaction` item; refused
with `instructions`, as OpenAI's guidance says to compact without them):
validated (responses_check), stale reasoning dropped and listed in
`input_transformations` (`prefix_mismatch`), then answered as OpenAI streams: response.created,
response.in_progress, output items (a reasoning item with encrypted_content,
a function call with argument deltas, or a message with output_text deltas),
each added and done, then response.completed with usage. The usage follows
OpenAI's automatic prompt caching (openai_cache) and is logged with the
answer, as the ledger reads it."""

import json
import time
import uuid

from . import openai_cache, script, sse
from .responses_check import REASONED, Invalid, check, encrypt, prefix_hash, seal_compaction, stale_reasoning

SHELL_TOOLS = ("exec_command", "shell")


def error(message, param):
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": None}}


def estimate_tokens(value):
    return max(1, len(json.dumps(value)) // 4)


def usage(body, read, output, reasoning):
    """The answer's usage: its input billed by OpenAI's prompt caching
    (`read`: the input as the model reads it), `reasoning` of its output
    tokens spent reasoning."""
    billed = openai_cache.bill(body, read)
    tokens_out = estimate_tokens(output)
    return dict(billed, output_tokens=tokens_out, output_tokens_details={"reasoning_tokens": reasoning},
                total_tokens=billed["input_tokens"] + tokens_out)


def latest_tool_output(listed):
    """The latest tool output's text; after a client's own compaction,
    which keeps only user messages, its summary's (`handoff`)."""
    for item in reversed(listed):
        if item["type"].endswith("_call_output"):
            return script.text_of(item.get("output"))
        if item["type"] == "message" and item.get("role") == "user":
            text = script.text_of(item.get("content"))
            if script.HANDOFF in text:
                return text
    return None


def shell_tool(body):
    names = [t.get("name") for t in body.get("tools") or [] if t.get("type") == "function"]
    return next((n for n in SHELL_TOOLS if n in names), None)


def plan(body, listed):
    """The output items of this turn."""
    tool = shell_tool(body)
    step = script.next_step(latest_tool_output(listed)) if tool else None
    out = []
    if tool and body.get("reasoning") is not None:
        rs_id = f"rs_{uuid.uuid4().hex}"
        reasoning = {"id": rs_id, "type": "reasoning", "summary": []}
        if "reasoning.encrypted_content" in (body.get("include") or []):
            reasoning["encrypted_content"] = encrypt(rs_id, script.thinking(step), prefix_hash(body, listed))
        out.append(reasoning)
    if isinstance(step, int):
        call_id = f"call_{uuid.uuid4().hex[:24]}"
        args = {"cmd": script.command(step)} if tool == "exec_command" else {"command": ["bash", "-lc", script.command(step)]}
        out.append({"id": f"fc_{uuid.uuid4().hex}", "type": "function_call", "status": "completed",
                    "arguments": json.dumps(args), "call_id": call_id, "name": tool})
    else:
        text = script.final_text(step) if tool else script.handoff(latest_tool_output(listed))
        out.append({"id": f"msg_{uuid.uuid4().hex}", "type": "message", "status": "completed", "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}]})
    if out[0]["type"] == "reasoning" and "encrypted_content" in out[0]:
        REASONED.remember(out[-1]["id"], out[0])
    return out


def item_events(n, item):
    """(event name, data) pairs of one output item, from added to done."""
    added = dict(item, status="in_progress")
    ev = []
    if item["type"] == "function_call":
        args = item["arguments"]
        half = len(args) // 2
        ev.append(("response.output_item.added", {"output_index": n, "item": dict(added, arguments="")}))
        ev += [("response.function_call_arguments.delta", {"item_id": item["id"], "output_index": n, "delta": d})
               for d in (args[:half], args[half:])]
        ev.append(("response.function_call_arguments.done", {"item_id": item["id"], "output_index": n,
                                                             "arguments": args}))
    elif item["type"] == "message":
        part = item["content"][0]
        ids = {"item_id": item["id"], "output_index": n, "content_index": 0}
        ev.append(("response.output_item.added", {"output_index": n, "item": dict(added, content=[])}))
        ev.append(("response.content_part.added", dict(ids, part=dict(part, text=""))))
        words = part["text"].split(" ")
        ev += [("response.output_text.delta", dict(ids, delta=w if i == 0 else " " + w))
               for i, w in enumerate(words)]
        ev.append(("response.output_text.done", dict(ids, text=part["text"])))
        ev.append(("response.content_part.done", dict(ids, part=part)))
    else:
        ev.append(("response.output_item.added", {"output_index": n, "item": item}))
    ev.append(("response.output_item.done", {"output_index": n, "item": item}))
    return ev


def stream_events(response):
    pending = dict(response, status="in_progress", output=[], usage=None)
    pairs = [("response.created", {"response": pending}), ("response.in_progress", {"response": pending})]
    for n, item in enumerate(response["output"]):
        pairs += item_events(n, item)
    pairs.append(("response.completed", {"response": response}))
    return [sse.event(name, dict({"type": name, "sequence_number": i}, **data))
            for i, (name, data) in enumerate(pairs)]


def responses(handler, body, entry):
    try:
        listed = check(body)
    except Invalid as e:
        entry["rejected"] = str(e)
        return 400, [json.dumps(error(str(e), e.param)).encode()], False
    output = plan(body, listed)
    entry["answer"] = output
    read, transformations = stale_reasoning(body, listed)
    response = {"id": f"resp_{uuid.uuid4().hex}", "object": "response", "created_at": int(time.time()),
                "status": "completed", "error": None, "incomplete_details": None, "model": body.get("model"),
                "output": output, "parallel_tool_calls": body.get("parallel_tool_calls", True),
                "store": body.get("store", True), "tool_choice": body.get("tool_choice", "auto"),
                "usage": usage(body, read, output, 8 if output[0]["type"] == "reasoning" else 0)}
    # What was billed, as the ledger reads it (the prompt cache's rules: openai_cache).
    entry["usage"] = response["usage"]
    if transformations:
        response["input_transformations"] = transformations
        entry["input_transformations"] = transformations
    if body.get("stream"):
        return 200, stream_events(response), True
    return 200, [json.dumps(response).encode()], False


def input_tokens(handler, body, entry):
    try:
        listed = check(body)
    except Invalid as e:
        entry["rejected"] = str(e)
        return 400, [json.dumps(error(str(e), e.param)).encode()], False
    return 200, [json.dumps({"object": "response.input_tokens", "input_tokens": estimate_tokens(listed)}).encode()], False


def compact(handler, body, entry):
    """OpenAI's compaction: the window that replaces `input`, its user
    messages kept and one encrypted `compaction` item after them."""
    try:
        if "instructions" in body:
            raise Invalid("Compact without 'instructions': they would be folded into the compaction item.",
                          "instructions")
        listed = check(body)
    except Invalid as e:
        entry["rejected"] = str(e)
        return 400, [json.dumps(error(str(e), e.param)).encode()], False
    cmp_id = f"cmp_{uuid.uuid4().hex}"
    users = [i for i in listed if i["type"] == "message" and i.get("role") == "user"]
    item = {"id": cmp_id, "type": "compaction", "encrypted_content": seal_compaction(cmp_id, listed)}
    entry["answer"] = [item]
    response = {"id": f"resp_{uuid.uuid4().hex}", "object": "response.compaction", "created_at": int(time.time()),
                "output": users + [item], "usage": usage(body, listed, item, 0)}
    entry["usage"] = response["usage"]
    return 200, [json.dumps(response).encode()], False
