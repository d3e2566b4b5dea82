"""Writing an HTTP/1.1 answer: a JSON body, or a server-sent event stream
sent chunk by chunk (Transfer-Encoding: chunked) as the providers do."""

import json


def event(name, data):
    """One SSE event as the providers frame it: `event:` line, `data:` line, blank line."""
    return f"event: {name}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def send_json(handler, status, body, extra_headers=()):
    data = json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(data)))
    for k, v in extra_headers:
        handler.send_header(k, v)
    handler.end_headers()
    handler.wfile.write(data)
    return data


def send_stream(handler, chunks, extra_headers=()):
    """Sends each chunk as its own HTTP chunk, flushed, like a live stream."""
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream; charset=utf-8")
    handler.send_header("cache-control", "no-cache")
    handler.send_header("transfer-encoding", "chunked")
    for k, v in extra_headers:
        handler.send_header(k, v)
    handler.end_headers()
    for c in chunks:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(c), c))
        handler.wfile.flush()
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()
