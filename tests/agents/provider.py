#!/usr/bin/env python3
"""A scripted LLM provider that validates every request as Anthropic's and
OpenAI's APIs do, and a recording relay, in one process (one clock). Used by
tests/suite/agents.rs; stdlib only.

  python3 tests/agents/provider.py   # prints {"provider": PORT, "relay": PORT}

Provider port: POST /v1/messages, /v1/messages/count_tokens, /v1/responses,
/v1/responses/input_tokens, /v1/responses/compact (see emulator/); GET /_log[?session=NAME] (every
request both servers saw, as JSON); POST /_session {"session", "target"}
(labels what follows and points the relay at `target`).
Relay port: anything, relayed to the target (emulator/relay.py).
"""

import hashlib
import http.server
import json
import sys
import threading
import urllib.parse

from emulator import anthropic, responses, sse
from emulator.log import Log, now_ms
from emulator.relay import RELAY_ID, make_handler, parsed, read_body

ROUTES = {
    "/v1/messages": anthropic.messages,
    "/v1/messages/count_tokens": anthropic.count_tokens,
    "/v1/responses": responses.responses,
    "/v1/responses/input_tokens": responses.input_tokens,
    "/v1/responses/compact": responses.compact,
}


def make_provider(log):
    class Provider(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/_log":
                session = urllib.parse.parse_qs(url.query).get("session", [None])[0]
                sse.send_json(self, 200, log.entries(session))
            else:
                sse.send_json(self, 404, {"error": {"message": f"no route {url.path}"}})

        def do_POST(self):
            url = urllib.parse.urlsplit(self.path)
            data = read_body(self)
            if url.path == "/_session":
                control = json.loads(data)
                log.session, log.relay_target = control["session"], control.get("target")
                sse.send_json(self, 200, {"ok": True})
                return
            route = ROUTES.get(url.path)
            entry = {"kind": "provider", "t_received": now_ms(), "path": self.path,
                     "relay_id": int(self.headers[RELAY_ID]) if self.headers.get(RELAY_ID) else None,
                     "headers": [[k, v] for k, v in self.headers.items()], "body": parsed(data)}
            if route is None:
                status, chunks, stream = 404, [json.dumps({"type": "error", "error": {
                    "type": "not_found_error", "message": f"Not found: {url.path}"}}).encode()], False
            elif not isinstance(entry["body"], dict):
                status, chunks, stream = 400, [json.dumps({"type": "error", "error": {
                    "type": "invalid_request_error", "message": "The request body is not valid JSON"}}).encode()], False
                entry["rejected"] = "body is not JSON"
            else:
                status, chunks, stream = route(self, entry["body"], entry)
            whole = b"".join(chunks)
            entry.update(status=status, response_sha256=hashlib.sha256(whole).hexdigest(),
                         response_len=len(whole), response=whole.decode())
            log.add(entry)  # complete before a byte leaves, so the relay can compare
            entry["t_sent"] = now_ms()
            if stream:
                sse.send_stream(self, chunks)
            else:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(whole)))
                self.end_headers()
                self.wfile.write(whole)

    return Provider


def main():
    log = Log()
    provider = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_provider(log))
    relay = http.server.ThreadingHTTPServer(("127.0.0.1", 0), make_handler(log))
    for server in (provider, relay):
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print(json.dumps({"provider": provider.server_address[1], "relay": relay.server_address[1]}), flush=True)
    sys.stdin.read()  # runs until the test closes our stdin (or dies)


if __name__ == "__main__":
    main()
