"""A real S3 server for the tests: moto_server on a loopback port, reached
by spillway and checked with boto3, an independent client."""

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import boto3
import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("SPILLWAY_BIN", str(ROOT / "target" / "debug" / "spillway"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, timeout: float = 30.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


class Moto:
    def __init__(self) -> None:
        self.port = free_port()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_port(self.port)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


class Proxy:
    """A TCP forwarder in front of the server: stopping it is the server
    going away for spillway, while boto3 still sees what the server holds."""

    def __init__(self, target_port: int) -> None:
        self.target = target_port
        self.port = free_port()
        self.conns: list[socket.socket] = []
        self.listener: socket.socket | None = None
        self.lock = threading.Lock()

    def start(self) -> None:
        ls = socket.socket()
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind(("127.0.0.1", self.port))
        ls.listen(64)
        self.listener = ls
        threading.Thread(target=self._accept, args=(ls,), daemon=True).start()

    def _accept(self, ls: socket.socket) -> None:
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            for a, b, seen in ((c, u, self.sent), (u, c, None)):
                threading.Thread(target=self._pipe, args=(a, b, seen), daemon=True).start()

    def sent(self, data: bytes) -> None:
        """Called with what the client sends, before the server gets it."""

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket, seen) -> None:
        try:
            while True:
                data = a.recv(1 << 16)
                if not data:
                    break
                if seen is not None:
                    seen(data)
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def stop(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None
        with self.lock:
            for c in self.conns:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self.conns = []

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@pytest.fixture(scope="session")
def moto():
    m = Moto()
    yield m
    m.stop()


@pytest.fixture
def s3(moto):
    return boto3.client(
        "s3",
        endpoint_url=moto.endpoint,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name="us-east-1",
    )


@pytest.fixture
def bucket(s3):
    name = "spill-" + uuid.uuid4().hex[:12]
    s3.create_bucket(Bucket=name)
    return name


def spill_env(endpoint: str, cache: Path) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AWS_") and not k.startswith("SPILLWAY_")
    }
    env.update(
        AWS_ENDPOINT_URL=endpoint,
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        SPILLWAY_S3_CACHE=str(cache),
    )
    return env
