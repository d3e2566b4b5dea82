#!/usr/bin/env python3
"""Probes under hostile load (issue 24), against a release build.

    scripts/with-postgres.sh bench/hostile_ops.py [--no-build] [--condense PATH] [--part a|b]

(a) Readiness under a /readyz flood: condense's summary cache is PostgreSQL
    (DATABASE_URL; use a throwaway server, condense creates its tables in
    it) reached through a relay in this script that holds every chunk 5 ms
    each way. 128 clients ask /readyz as fast as they can while compress
    requests (each a new thread, so each needs the cache: lookup, claim,
    store) run one after another. Reported: the share of /readyz answers
    saying `cache: down`, and compress latency and the share of summaries
    left uncached, without the flood and during it.
(b) Liveness under slow headers: 1,100 sockets from 127.0.0.1 each send a
    request head a byte at a time (reconnecting when closed), while a
    kubelet-like probe (1 s timeout) asks GET /healthz 24 times, once a
    second: from 127.0.0.2, from 127.0.0.1 itself, and on the probe
    listener (CONDENSE_PROBE_LISTEN) when the build has one. Reported:
    successes out of 24 for each.

Prints the numbers; no assertion. `--condense` runs another binary (say,
main's) with the same load, for a before/after.
"""

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid

import common

THREAD = common.load_thread("small-01.openai")


# ------------------------------------------------------------------ HTTP

async def http(host, port, method, path, body=None, source=None, timeout=60.0, conn=None):
    """One request; returns (status, body bytes, conn). Reuses `conn` (a
    reader/writer pair) when given and keeps the connection open."""
    async def go():
        nonlocal conn
        if conn is None:
            conn = await asyncio.open_connection(host, port, local_addr=(source, 0) if source else None)
        reader, writer = conn
        data = json.dumps(body).encode() if body is not None else b""
        head = f"{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(data)}\r\n"
        if body is not None:
            head += "Content-Type: application/json\r\n"
        writer.write(head.encode() + b"\r\n" + data)
        await writer.drain()
        status_line = await reader.readline()
        if not status_line:
            raise ConnectionError("closed")
        length = 0
        while True:
            line = await reader.readline()
            if line in (b"\r\n", b""):
                break
            k, _, v = line.decode().partition(":")
            if k.lower() == "content-length":
                length = int(v)
        return int(status_line.split()[1]), await reader.readexactly(length)
    status, payload = await asyncio.wait_for(go(), timeout)
    return status, payload, conn


def close(conn):
    if conn:
        conn[1].close()


# ----------------------------------------------------------------- relay

async def relay(listen_port, upstream, delay):
    """A TCP relay that delivers every chunk `delay` seconds after reading it, both ways."""
    async def pump(reader, writer):
        queue = asyncio.Queue()

        async def deliver():
            while True:
                due, data = await queue.get()
                if data is None:
                    break
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                writer.write(data)
                await writer.drain()
            writer.close()
        task = asyncio.create_task(deliver())
        try:
            while data := await reader.read(65536):
                queue.put_nowait((time.monotonic() + delay, data))
        except ConnectionError:
            pass
        queue.put_nowait((0, None))
        try:
            await task
        except ConnectionError:
            pass

    async def handle(cr, cw):
        try:
            sr, sw = await asyncio.open_connection(*upstream)
        except OSError:
            cw.close()
            return
        try:
            await asyncio.gather(pump(cr, sw), pump(sr, cw), return_exceptions=True)
        except asyncio.CancelledError:
            pass  # the run is over

    return await asyncio.start_server(handle, "127.0.0.1", listen_port)


# --------------------------------------------------------------- servers

async def start(binary, args=(), env=None):
    """condense with the caller's settings and RUST_LOG=error, started in a
    thread: the loop keeps serving the relay it may connect through."""
    return await asyncio.to_thread(common.Condense, binary, env, args, clean=False, rust_log="error")


def has_probe_listener(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True).stdout
    return "--probe-listen" in out


# ------------------------------------------------------------- part (a)

def compress_body():
    messages = json.loads(json.dumps(THREAD["messages"]))
    # A new thread each time: every request needs the cache (miss, claim, store).
    messages[0]["content"] = f"[{uuid.uuid4()}] " + str(messages[0].get("content") or "")
    return {"messages": messages, "force": True}


async def compress_run(port, n):
    times, uncached, failed = [], 0, 0
    for _ in range(n):
        t = time.perf_counter()
        try:
            status, payload, c = await http("127.0.0.1", port, "POST", "/v1/compress", compress_body())
            close(c)
        except (OSError, asyncio.TimeoutError, ConnectionError):
            failed += 1
            continue
        times.append(time.perf_counter() - t)
        if status != 200:
            failed += 1
        elif "cache is unavailable" in json.loads(payload).get("warnings", []).__str__():
            uncached += 1
    return times, uncached, failed


async def readyz_flood(port, clients, stop):
    counts = {"ok": 0, "down": 0, "other": 0, "errors": 0}

    async def one():
        conn = None
        while not stop.is_set():
            try:
                status, payload, conn = await http("127.0.0.1", port, "GET", "/readyz", timeout=30, conn=conn)
                cache = json.loads(payload)["checks"].get("cache")
                counts[cache if cache in ("ok", "down") else "other"] += 1
            except (OSError, asyncio.TimeoutError, ConnectionError, ValueError, KeyError):
                counts["errors"] += 1
                close(conn)
                conn = None
                await asyncio.sleep(0.05)
        close(conn)
    tasks = [asyncio.create_task(one()) for _ in range(clients)]
    return counts, tasks


def describe(times):
    if not times:
        return "none answered"
    q = statistics.quantiles(times, n=10) if len(times) > 1 else times * 9
    return f"median {statistics.median(times):.2f} s, p90 {q[8]:.2f} s"


async def part_a(args):
    url = os.environ.get("DATABASE_URL")
    if not url:
        raise SystemExit("part (a) needs PostgreSQL: run under scripts/with-postgres.sh or set DATABASE_URL")
    u = urllib.parse.urlsplit(url)
    relay_port = common.free_port()
    server_relay = await relay(relay_port, (u.hostname, u.port or 5432), args.delay_ms / 1000)
    via = u._replace(netloc=u.netloc.replace(f"{u.hostname}:{u.port}", f"127.0.0.1:{relay_port}")).geturl()
    server = None
    try:
        server = await start(args.condense, env={"CONDENSE_DATABASE_URL": via})
        port = server.port
        await compress_run(port, 3)  # warm-up: pool, schema
        quiet = await compress_run(port, args.requests)
        stop = asyncio.Event()
        counts, tasks = await readyz_flood(port, args.clients, stop)
        await asyncio.sleep(2)  # the flood at full strength
        loud = await compress_run(port, args.requests)
        stop.set()
        await asyncio.gather(*tasks)
    finally:
        if server:
            server.stop()
        server_relay.close()
    answers = counts["ok"] + counts["down"] + counts["other"]
    print(f"(a) /readyz flood, {args.clients} clients, {args.delay_ms} ms to PostgreSQL each way")
    print(f"    /readyz answers during the flood: {answers} ({counts['errors']} failed), "
          f"cache: down in {counts['down']} = {100 * counts['down'] / max(answers, 1):.1f}%"
          + (f", other {counts['other']}" if counts["other"] else ""))
    for name, (times, uncached, failed) in (("without the flood", quiet), ("during the flood", loud)):
        print(f"    compress {name}: {describe(times)}; uncached {uncached}/{args.requests}"
              + (f", failed {failed}" if failed else ""))


# ------------------------------------------------------------- part (b)

async def slow_headers(port, sockets, stop):
    held = {"open": 0}

    async def one():
        while not stop.is_set():
            try:
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.2)
                continue
            held["open"] += 1
            try:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
                await writer.drain()
                while not stop.is_set():
                    await asyncio.sleep(5)
                    writer.write(b"X")  # a header that never ends
                    await writer.drain()
                    if reader.at_eof():
                        break
            except (OSError, ConnectionError):
                pass
            held["open"] -= 1
            writer.close()
            await asyncio.sleep(0.2)
    return held, [asyncio.create_task(one()) for _ in range(sockets)]


async def probe(port, source):
    try:
        status, _, c = await http("127.0.0.1", port, "GET", "/healthz", source=source, timeout=1.0)
        close(c)
        return status == 200
    except (OSError, asyncio.TimeoutError, ConnectionError, ValueError, IndexError):
        return False


async def part_b(args):
    probe_port = common.free_port()
    extra = ["--probe-listen", f"127.0.0.1:{probe_port}"] if has_probe_listener(args.condense) else []
    server = await start(args.condense, ["--database-url", "off", *extra])
    port = server.port
    try:
        stop = asyncio.Event()
        held, tasks = await slow_headers(port, args.slow, stop)
        await asyncio.sleep(5)  # every socket connected and holding
        targets = [("from 127.0.0.2", port, "127.0.0.2"), ("from 127.0.0.1", port, "127.0.0.1")]
        if extra:
            targets.append(("on the probe listener", probe_port, "127.0.0.1"))
        ok = {name: 0 for name, _, _ in targets}
        for _ in range(24):
            for name, p, source in targets:
                ok[name] += await probe(p, source)
            await asyncio.sleep(1)
        open_now = held["open"]
        stop.set()
        for t in tasks:
            t.cancel()
    finally:
        server.stop()
    print(f"(b) liveness under {args.slow} slow-header sockets from 127.0.0.1 ({open_now} open at the end)")
    for name, n in ok.items():
        print(f"    GET /healthz {name}: {n}/24 answered within 1 s")


async def quietly(work):
    """Runs `work` with the relay's connections, cut when the run ends, not reported."""
    asyncio.get_running_loop().set_exception_handler(lambda loop, ctx: None)
    await work


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--condense", default=str(common.BINARY))
    ap.add_argument("--part", choices=["a", "b", "both"], default="both")
    ap.add_argument("--clients", type=int, default=128)
    ap.add_argument("--delay-ms", type=float, default=5.0)
    ap.add_argument("--requests", type=int, default=20)
    ap.add_argument("--slow", type=int, default=1100)
    args = ap.parse_args()
    if not args.no_build:
        common.build()
    if args.part in ("a", "both"):
        asyncio.run(quietly(part_a(args)))
    if args.part in ("b", "both"):
        asyncio.run(part_b(args))


if __name__ == "__main__":
    sys.exit(main())
