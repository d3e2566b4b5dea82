"""The recording relay: CLI -> relay -> (condense or the provider). It keeps
the method, path with its query string and every header (adding only
`x-relay-id`, which lets the provider's record name this one), relays the
answer as it streams, and compares the bytes that reached it with the bytes
the provider sent for the same request."""

import hashlib
import http.client
import http.server
import json
import urllib.parse

from .log import now_ms

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"}
RELAY_ID = "x-relay-id"
TIMEOUT_SECS = 900  # a hang guard only


def read_body(handler):
    if handler.headers.get("transfer-encoding", "").lower() == "chunked":
        data = b""
        while True:
            size = int(handler.rfile.readline().split(b";")[0], 16)
            if size == 0:
                handler.rfile.readline()
                return data
            data += handler.rfile.read(size)
            handler.rfile.readline()
    return handler.rfile.read(int(handler.headers.get("content-length") or 0))


def parsed(data):
    try:
        return json.loads(data)
    except ValueError:
        return data.decode(errors="replace")


def make_handler(log):
    class Relay(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            self.relay()

        do_POST = do_PUT = do_DELETE = do_GET

        def relay(self):
            body = read_body(self)
            target = urllib.parse.urlsplit(log.relay_target)
            entry = {"kind": "relay", "method": self.command, "path": self.path,
                     "headers": [[k, v] for k, v in self.headers.items()], "body": parsed(body)}
            rid = log.add(entry)
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=TIMEOUT_SECS)
            conn.putrequest(self.command, target.path.rstrip("/") + self.path,
                            skip_host=True, skip_accept_encoding=True)
            conn.putheader("host", target.netloc)
            for k, v in self.headers.items():
                if k.lower() not in HOP_BY_HOP and k.lower() not in ("host", "content-length"):
                    conn.putheader(k, v)
            conn.putheader(RELAY_ID, str(rid))
            conn.putheader("content-length", str(len(body)))
            entry["t_forward"] = now_ms()
            conn.endheaders(body)
            res = conn.getresponse()
            entry["t_response"] = now_ms()
            entry["status"] = res.status
            entry["response_headers"] = [[k, v] for k, v in res.getheaders()]
            self.send_response_only(res.status, res.reason)
            for k, v in res.getheaders():
                if k.lower() not in HOP_BY_HOP and k.lower() != "content-length":
                    self.send_header(k, v)
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            got = b""
            while True:
                chunk = res.read1(65536)
                if not chunk:
                    break
                if not got:
                    entry["t_first_byte"] = now_ms()
                got += chunk
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            conn.close()
            entry["t_done"] = now_ms()
            entry["response_sha256"] = hashlib.sha256(got).hexdigest()
            entry["response_len"] = len(got)
            sent = next((e for e in log.entries() if e["kind"] == "provider" and e.get("relay_id") == rid), None)
            entry["provider_id"] = sent and sent["id"]
            entry["stream_identical"] = None if sent is None else sent.get("response_sha256") == entry["response_sha256"]

    return Relay
