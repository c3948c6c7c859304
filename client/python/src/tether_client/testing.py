"""A tether-server of your own on loopback, for examples, notebooks and
tests: LocalServer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from typing import IO, Any, Optional, Sequence, Union

__all__ = ["LocalServer", "default_server_binary"]


def default_server_binary() -> str:
    """$TETHER_SERVER when set, else ``tether-server`` found on PATH
    (FileNotFoundError, saying where it looked, when neither)."""
    if os.environ.get("TETHER_SERVER"):
        return os.environ["TETHER_SERVER"]
    found = shutil.which("tether-server")
    if found:
        return found
    raise FileNotFoundError(
        "tether-server is not on PATH and TETHER_SERVER is not set: install "
        "it, build it (build/bin/tether-server), or pass binary=")


class LocalServer:
    """Starts ``tether-server --listen 127.0.0.1:PORT`` (PORT 0: one the
    system picks) and reads the address from its "listening on
    127.0.0.1:PORT" line; stops it (SIGTERM, then SIGKILL after 10 s) on
    exit. ``address`` is "127.0.0.1:PORT". The server's log (stderr) goes to
    ``log_path`` when given, else it is discarded. ``kill()`` ends it at
    once (SIGKILL), as a crash would; start() again after stop() or kill()
    serves on the same port when ``port`` was given."""

    def __init__(self, binary: Optional[str] = None, extra_args: Sequence[str] = (),
                 startup_timeout: float = 30.0,
                 log_path: "Optional[Union[str, os.PathLike[str]]]" = None,
                 port: int = 0) -> None:
        self.binary = binary or default_server_binary()
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.log_path = log_path
        self.port = port
        self.process: "Optional[subprocess.Popen[str]]" = None
        self.address: Optional[str] = None
        self._log: "Optional[Union[IO[bytes], int]]" = None

    def start(self) -> str:
        """Starts the server; its address."""
        if not os.path.exists(self.binary):
            raise FileNotFoundError("tether-server not found at %s" % self.binary)
        self._log = (open(self.log_path, "ab") if self.log_path
                     else subprocess.DEVNULL)
        self.process = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:%d" % self.port] + self.extra_args,
            stdout=subprocess.PIPE, stderr=self._log,
            stdin=subprocess.DEVNULL, text=True)
        found = threading.Event()
        process = self.process

        def read_stdout() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                match = re.search(r"listening on (\S+:\d+)", line)
                if match and not found.is_set():
                    self.address = match.group(1)
                    found.set()
            # Keep draining so the server never blocks on a full pipe.

        threading.Thread(target=read_stdout, daemon=True).start()
        if not found.wait(self.startup_timeout):
            self.stop()
            raise RuntimeError("tether-server did not print 'listening on' "
                               "within %.0f s" % self.startup_timeout)
        assert self.address is not None
        return self.address

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 10 s."""
        self._end(kill=False)

    def kill(self) -> None:
        """SIGKILL now (a crash, for tests of what clients do then)."""
        self._end(kill=True)

    def _end(self, kill: bool) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None
        if self._log is not None and not isinstance(self._log, int):
            self._log.close()
        self._log = None

    def __enter__(self) -> "LocalServer":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()
