"""A tether-server of your own on loopback, for examples, notebooks and
tests: LocalServer."""

from __future__ import annotations

import collections
import os
import re
import shutil
import subprocess
import threading
import time
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


def _tail(path: "Union[str, os.PathLike[str]]", lines: int = 40) -> str:
    """The last lines of the file at ``path`` ("" when it cannot be read)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 16384))
            return "\n".join(f.read().decode("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return ""


class LocalServer:
    """Starts ``tether-server --listen 127.0.0.1:PORT`` (PORT 0: one the
    system picks) and reads the address from its "listening on
    127.0.0.1:PORT" line; stops it (SIGTERM, then SIGKILL after 10 s) on
    exit. ``address`` is "127.0.0.1:PORT". The server's log (stderr) goes to
    ``log_path`` when given, else it is discarded (its last lines kept: a
    server that exits before listening, on a bad flag or a taken port, is a
    RuntimeError at once with what it said). ``kill()`` ends it at
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
                     else subprocess.PIPE)
        self.process = subprocess.Popen(
            [self.binary, "--listen", "127.0.0.1:%d" % self.port] + self.extra_args,
            stdout=subprocess.PIPE, stderr=self._log,
            stdin=subprocess.DEVNULL, text=True)
        found = threading.Event()
        process = self.process
        # Without log_path, the log's last lines are kept (to say why a
        # start failed) and the rest dropped.
        tail: "collections.deque[str]" = collections.deque(maxlen=40)

        def read_stdout() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                match = re.search(r"listening on (\S+:\d+)", line)
                if match and not found.is_set():
                    self.address = match.group(1)
                    found.set()
            # Keep draining so the server never blocks on a full pipe.

        def read_stderr() -> None:
            assert process.stderr is not None
            for line in process.stderr:
                tail.append(line)

        threading.Thread(target=read_stdout, daemon=True).start()
        if process.stderr is not None:
            threading.Thread(target=read_stderr, daemon=True).start()
        deadline = time.monotonic() + self.startup_timeout
        while not found.wait(0.05):
            code = process.poll()
            if code is not None:
                # It ended before listening (a bad flag, a taken port):
                # say so at once, with what it said.
                time.sleep(0.1)  # its last lines
                said = "".join(tail) if not self.log_path else _tail(self.log_path)
                self._end(kill=True)
                raise RuntimeError("tether-server exited with status %d before listening:\n%s"
                                   % (code, said.strip() or "(it printed nothing)"))
            if time.monotonic() > deadline:
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
