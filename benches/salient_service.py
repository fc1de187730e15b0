#!/usr/bin/env python3
"""A small TCP service and its clients, for `salient.py`: a real asyncio
server on localhost whose faults are real (connections reset by their
clients, malformed requests, missing files, timeouts, a division by zero),
logged through Python's `logging` as a service logs them.

    python3 benches/salient_service.py text|json LABELS

Writes the log to stdout: `text` in a ZooKeeper-like layout, `json` as one
JSON object per line with a `level` field. Writes to LABELS one JSON line
per record at ERROR or above: the record's own level and its message
template (`record.msg`), which is what the program itself reports.
"""
import asyncio
import json
import logging
import random
import socket
import struct
import sys

log = logging.getLogger("quorum.NIOServerCnxn")
learner = logging.getLogger("quorum.LearnerHandler")
CLIENTS = 700


class Labels(logging.Handler):
    def __init__(self, path):
        super().__init__(logging.ERROR)
        self.out = open(path, "w")

    def emit(self, record):
        self.out.write(json.dumps({"level": record.levelname, "template": record.msg}) + "\n")
        self.out.flush()


class JsonLines(logging.Formatter):
    def format(self, record):
        doc = {
            "time": self.formatTime(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            doc["error"] = f"{record.exc_info[0].__name__}: {record.exc_info[1]}"
        return json.dumps(doc)


async def handle(reader, writer):
    sid = 0x100000000 + writer.get_extra_info("peername")[1]
    peer = "/127.0.0.1:%d" % writer.get_extra_info("peername")[1]
    log.info("Accepted socket connection from %s", peer)
    try:
        line = await asyncio.wait_for(reader.readline(), 0.05)
        if not line:
            raise ConnectionResetError("peer closed the connection")
        req = json.loads(line)
        op = req["op"]
        if op == "get":
            log.info("Processed session 0x%x request %s in %d ms", sid, req["key"], req["n"] % 7)
        elif op == "stats":
            log.info("Stats for session 0x%x: %d", sid, req["total"] // req["count"])
        elif op == "snapshot":
            with open(f"/nonexistent/snapshot.{req['n']:x}") as f:
                f.read()
        elif op == "sync":
            learner.warning("Follower sid %d is %d transactions behind", req["n"] % 5, req["n"] % 300)
        else:
            raise KeyError(op)
        writer.write(b"ok\n")
        await writer.drain()
    except (ConnectionResetError, BrokenPipeError) as e:
        log.warning("Connection broken for id 0x%x, my id = %d, error = %s", sid, 3, e)
    except asyncio.TimeoutError:
        log.error("Session 0x%x expired: no request within %d ms", sid, 50)
    except json.JSONDecodeError:
        log.exception("Unexpected exception causing shutdown while sock still open")
    except KeyError as e:
        log.error("Unknown operation %s from session 0x%x", e, sid)
    except ZeroDivisionError:
        log.exception("Failed to compute stats for session 0x%x", sid)
    except OSError as e:
        learner.error("Unexpected exception causing shutdown while sock still open: %s", e)
    finally:
        writer.close()
        log.info("Closed socket connection for client %s which had sessionid 0x%x", peer, sid)


async def client(port, n, rng):
    kind = rng.random()
    if n % 199 == 57:
        request = b'{"op": "get", "key": \n'  # malformed
    elif n % 251 == 90:
        request = json.dumps({"op": "stats", "total": n, "count": 0}).encode() + b"\n"
    elif n % 317 == 140:
        request = json.dumps({"op": "snapshot", "n": n}).encode() + b"\n"
    elif n % 401 == 200:
        request = json.dumps({"op": "purge", "n": n}).encode() + b"\n"
    elif n % 523 == 300:
        request = None  # says nothing: the session expires
    elif kind < 0.3:
        request = b"RESET"
    elif kind < 0.4:
        request = json.dumps({"op": "sync", "n": n}).encode() + b"\n"
    else:
        request = json.dumps({"op": "get", "key": f"/app/node-{n}", "n": n}).encode() + b"\n"
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    if request == b"RESET":
        # Close with a reset: the server's read fails as a real peer's would.
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.write(b'{"op": "get"')
        await writer.drain()
        writer.transport.abort()
        await asyncio.sleep(0.001)
        return
    if request is not None:
        writer.write(request)
        await writer.drain()
    try:
        await reader.read()
    except ConnectionResetError:
        pass
    writer.close()


async def main(mode, labels):
    handler = logging.StreamHandler(sys.stdout)
    if mode == "json":
        handler.setFormatter(JsonLines())
    else:
        handler.setFormatter(
            logging.Formatter("%(asctime)s [myid:3] - %(levelname)s  [%(threadName)s:%(name)s@%(lineno)d] - %(message)s")
        )
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(handler)
    root.addHandler(Labels(labels))
    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    rng = random.Random(7)
    for n in range(CLIENTS):
        await client(port, n, rng)
    server.close()
    await server.wait_closed()


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("text", "json"):
        sys.exit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2]))
