"""Real clients against condense's proxy: the official openai and anthropic
SDKs, base URL set to condense. SDK is `openai` (Chat Completions),
`responses` (the openai SDK's Responses API) or `anthropic`. Run by tests/suite/proxy_sdk.rs, which starts
condense, a recording proxy and the local model, and checks what reached the
provider. Each scenario prints one JSON object on stdout.

    scenarios.py SCENARIO SDK CONDENSE_URL [PROVIDER_URL]
"""

import json
import sys

import anthropic
import openai

SYSTEM = "You are a careful coding agent. Answer in one short sentence."


def tool_thread(sdk, units):
    """A coding-agent thread of `units` rounds: a request, a tool call, its result, a reply."""
    if sdk == "responses":
        return response_items(units)
    msgs = [] if sdk == "anthropic" else [{"role": "system", "content": SYSTEM}]
    for i in range(units):
        msgs.append({"role": "user", "content": f"Step {i}: check src/m{i}.rs for the bug in parse_{i}."})
        call_id = f"call_{i}"
        args = {"path": f"src/m{i}.rs"}
        result = f"fn parse_{i}() {{ let x = {i}; }}\nerror[E0308]: mismatched types at src/m{i}.rs:{i + 1}:5"
        if sdk == "anthropic":
            msgs.append({"role": "assistant", "content": [
                {"type": "text", "text": f"Reading src/m{i}.rs."},
                {"type": "tool_use", "id": call_id, "name": "read_file", "input": args}]})
            msgs.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": result}]})
        else:
            msgs.append({"role": "assistant", "content": f"Reading src/m{i}.rs.", "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": "read_file", "arguments": json.dumps(args)}}]})
            msgs.append({"role": "tool", "tool_call_id": call_id, "content": result})
        msgs.append({"role": "assistant", "content": f"Fixed parse_{i} in src/m{i}.rs."})
    msgs.append({"role": "user", "content": "What did you change last?"})
    return msgs


def response_items(units):
    """The same rounds as Responses API items: reasoning (kept byte for byte by
    condense), the call and its output paired by call_id."""
    items = []
    for i in range(units):
        items.append({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": f"Step {i}: check src/m{i}.rs for the bug in parse_{i}."}]})
        items.append({"type": "reasoning", "id": f"rs_{i}", "summary": [{"type": "summary_text", "text": f"Read src/m{i}.rs."}],
                      "content": [{"type": "reasoning_text", "text": f"The bug is probably in parse_{i}."}],
                      "encrypted_content": f"gAAAAB{i:04d}" + "Zm9v" * 20})
        items.append({"type": "function_call", "call_id": f"call_{i}", "name": "read_file",
                      "arguments": json.dumps({"path": f"src/m{i}.rs"})})
        items.append({"type": "function_call_output", "call_id": f"call_{i}",
                      "output": f"fn parse_{i}() {{ let x = {i}; }}\nerror[E0308]: mismatched types at src/m{i}.rs:{i + 1}:5"})
        items.append({"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": f"Fixed parse_{i} in src/m{i}.rs."}]})
    items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What did you change last?"}]})
    return items


TOOLS_RESPONSES = [{"type": "function", "name": "read_file", "description": "Read a file",
                    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}]
TOOLS_OPENAI = [{"type": "function", "function": {"name": "read_file", "description": "Read a file",
                 "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]
TOOLS_ANTHROPIC = [{"name": "read_file", "description": "Read a file",
                    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def condense_headers(h):
    return {k: v for k, v in h.items() if k.lower().startswith("x-condense-")}


def client(sdk, url):
    if sdk == "anthropic":
        return anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0, timeout=600)
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=600)


def ask(sdk, c, messages, headers=None, stream=False, max_tokens=16, query=None):
    """One call; the answer's text and condense's headers."""
    headers = headers or {}
    if sdk == "responses":
        kw = dict(model="gpt-4o", max_output_tokens=max_tokens, instructions=SYSTEM, input=messages,
                  tools=TOOLS_RESPONSES, extra_headers=headers, extra_query=query)
        if stream:
            chunks, text = 0, ""
            with c.responses.with_streaming_response.create(stream=True, **kw) as raw:
                h = condense_headers(raw.headers)
                for event in raw.parse():
                    chunks += 1
                    if event.type == "response.output_text.delta":
                        text += event.delta
            return {"text": text, "chunks": chunks, "headers": h}
        raw = c.responses.with_raw_response.create(**kw)
        return {"text": raw.parse().output_text or "", "headers": condense_headers(raw.headers)}
    if sdk == "anthropic":
        kw = dict(model="claude-sonnet-4-5", max_tokens=max_tokens, system=SYSTEM, messages=messages,
                  tools=TOOLS_ANTHROPIC, extra_headers=headers, extra_query=query)
        if stream:
            chunks, text = 0, ""
            with c.messages.with_streaming_response.create(stream=True, **kw) as raw:
                h = condense_headers(raw.headers)
                for event in raw.parse():
                    chunks += 1
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        text += event.delta.text
            return {"text": text, "chunks": chunks, "headers": h}
        raw = c.messages.with_raw_response.create(**kw)
        msg = raw.parse()
        text = "".join(b.text for b in msg.content if b.type == "text")
        return {"text": text, "headers": condense_headers(raw.headers)}
    kw = dict(model="gpt-4o", max_tokens=max_tokens, messages=messages, tools=TOOLS_OPENAI, extra_headers=headers,
              extra_query=query)
    if stream:
        chunks, text = 0, ""
        with c.chat.completions.with_streaming_response.create(stream=True, **kw) as raw:
            h = condense_headers(raw.headers)
            for chunk in raw.parse():
                chunks += 1
                if chunk.choices and chunk.choices[0].delta.content:
                    text += chunk.choices[0].delta.content
        return {"text": text, "chunks": chunks, "headers": h}
    raw = c.chat.completions.with_raw_response.create(**kw)
    return {"text": raw.parse().choices[0].message.content or "", "headers": condense_headers(raw.headers)}


def due(sdk, url, _):
    """A long thread that is due: compressed on the way, the provider accepts it."""
    return ask(sdk, client(sdk, url), tool_thread(sdk, 10), headers={"x-condense-profile": "short"})


NOTE = "From now on, run the tests before every commit."


def instructions(sdk, url, _):
    """A due thread with a mid-conversation system message (as Claude Code
    sends them) inside the span a summary replaces."""
    msgs = tool_thread(sdk, 10)
    msgs.insert(5, {"role": "system", "content": NOTE})
    return ask(sdk, client(sdk, url), msgs, headers={"x-condense-profile": "short"})


def shadow(sdk, url, provider):
    """The same thread in shadow mode through condense, then straight to the provider."""
    msgs = tool_thread(sdk, 10)
    through = ask(sdk, client(sdk, url), msgs, headers={"x-condense-profile": "short", "x-condense-shadow": "true"})
    ask(sdk, client(sdk, provider), msgs)
    return through


def stream(sdk, url, _):
    return ask(sdk, client(sdk, url), tool_thread(sdk, 2), stream=True, max_tokens=24)


def session(sdk, url, _):
    """20 turns: the agent resends its whole history each turn."""
    c = client(sdk, url)
    msgs = tool_thread(sdk, 2)
    turns = []
    for i in range(20):
        answer = ask(sdk, c, msgs, headers={"x-condense-profile": "short"})
        turns.append(answer["headers"])
        if sdk == "responses":
            msgs.append({"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": answer["text"] or "ok"}]})
            msgs.append({"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": f"Turn {i}: now look at src/t{i}.rs too."}]})
            continue
        msgs.append({"role": "assistant", "content": answer["text"] or "ok"})
        msgs.append({"role": "user", "content": f"Turn {i}: now look at src/t{i}.rs too."})
    return {"turns": turns}


def count_tokens(sdk, c, messages, headers=None):
    """The SDK's own token count (`anthropic` or `responses`); the count and condense's headers."""
    if sdk == "anthropic":
        raw = c.messages.with_raw_response.count_tokens(
            model="claude-sonnet-4-5", system=SYSTEM, messages=messages, tools=TOOLS_ANTHROPIC,
            extra_headers=headers or {})
    else:
        raw = c.responses.input_tokens.with_raw_response.count(
            model="gpt-4o", instructions=SYSTEM, input=messages, tools=TOOLS_RESPONSES,
            extra_headers=headers or {})
    return {"input_tokens": raw.parse().input_tokens, "headers": condense_headers(raw.headers)}


def count(sdk, url, provider):
    """A due thread counted through condense, then straight at the provider, then sent through condense."""
    msgs = tool_thread(sdk, 10)
    through = count_tokens(sdk, client(sdk, url), msgs, headers={"x-condense-profile": "short"})
    direct = count_tokens(sdk, client(sdk, provider), msgs)
    ask(sdk, client(sdk, url), msgs, headers={"x-condense-profile": "short"})
    return {**through, "direct": direct["input_tokens"]}


def query(sdk, url, _):
    """A query string of the client's own (`extra_query`), as Claude Code sends `?beta=true`."""
    return ask(sdk, client(sdk, url), tool_thread(sdk, 1), query={"beta": "true", "api-version": "2024-10-21"})


def errors(sdk, url, _):
    """A provider's 400/429/500 reach the SDK as the same error, body included."""
    c = client(sdk, url)
    big = [{"role": "user", "content": "hello " * 9000}]
    out = {}
    for name, messages in [("over_window", big), ("status", [{"role": "user", "content": "hi"}])]:
        try:
            ask(sdk, c, messages)
            out[name] = {"error": None}
        except (openai.APIStatusError, anthropic.APIStatusError) as e:
            out[name] = {"error": type(e).__name__, "status": e.status_code, "body": e.response.text}
    return out


if __name__ == "__main__":
    scenario, sdk, url = sys.argv[1], sys.argv[2], sys.argv[3]
    provider = sys.argv[4] if len(sys.argv) > 4 else None
    print(json.dumps(globals()[scenario](sdk, url, provider)))
