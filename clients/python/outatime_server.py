"""The real ``outatime-server`` as a child process, for tests and trials.

One class, :class:`ServerProcess`, shared by the Python client's tests
(``clients/python/tests``), the board's browser tests (``clients/web/tests``)
and the crash trials (``tools/crash_trials.py``): it starts the binary with the
arguments given, reads the ports from the ``listening on`` lines it prints
(``--port 0`` and ``--http 0`` pick free ones), keeps reading its stdout so the
pipe never fills, and stops it with SIGTERM (or SIGKILL). stderr goes to a log
file whose tail every failure quotes. Every wait is bounded.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional, Sequence

STARTUP_TIMEOUT = 20.0   # the server prints its lines within this
STOP_TIMEOUT = 10.0      # the server bounds its shutdown to 5 s
BINARY_WAIT = 10.0       # a concurrent `swift build` may be relinking the binary

_LISTENING = re.compile(r"(tls |http )?listening on (\S+):(\d+)")


class ServerProcess:
    """One ``outatime-server`` child: ``start()``, then ``port`` (plain),
    ``tls_port`` and ``http_port`` (each 0 when that listener is not asked
    for), ``stop()`` or ``kill()``.

    ``failure`` is the exception type raised when the server does not come
    up or go down in time (``AssertionError`` in tests).
    """

    def __init__(self, binary: Path, args: Sequence[str], log: Path,
                 failure: type[Exception] = AssertionError,
                 startup_timeout: float = STARTUP_TIMEOUT, stop_timeout: float = STOP_TIMEOUT) -> None:
        self.binary = Path(binary)
        self.args = list(args)
        self.log = Path(log)
        self.failure = failure
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.pump: Optional[threading.Thread] = None
        self.terminated = False
        self.port = self.tls_port = self.http_port = 0

    def start(self) -> "ServerProcess":
        """Starts the server and returns once every listener it was asked for
        (plain unless ``--no-plain``, TLS with ``--tls-port``, HTTP with
        ``--http``) printed its address."""
        deadline = time.monotonic() + BINARY_WAIT
        while not os.access(self.binary, os.X_OK):
            if time.monotonic() > deadline:
                raise self.failure(f"{self.binary} is missing; run `swift build` (or set OUTATIME_SERVER)")
            time.sleep(0.1)
        command = [str(self.binary), *self.args]
        with open(self.log, "ab") as log:
            log.write(f"--- start: {' '.join(command)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL)
        self.terminated = False
        self.port = self.tls_port = self.http_port = 0  # a restart may listen on new ports
        lines: "queue.Queue[Optional[bytes]]" = queue.Queue()
        stdout = self.proc.stdout
        assert stdout is not None

        def pump() -> None:  # read stdout to its end so the pipe never fills
            for line in stdout:
                lines.put(line)
            lines.put(None)

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        wants_plain = "--no-plain" not in self.args
        wants_tls = "--tls-port" in self.args
        wants_http = "--http" in self.args
        deadline = time.monotonic() + self.startup_timeout
        while (wants_plain and not self.port) or (wants_tls and not self.tls_port) or (wants_http and not self.http_port):
            try:
                line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                self.kill()
                raise self.failure(f"server printed no 'listening on' line within {self.startup_timeout} s; "
                                   f"log:\n{self.log_text()}")
            if line is None:
                self.kill()
                raise self.failure(f"server exited before listening; log:\n{self.log_text()}")
            m = _LISTENING.fullmatch(line.decode(errors="replace").strip())
            if m and m.group(1) == "tls ":
                self.tls_port = int(m.group(3))
            elif m and m.group(1) == "http ":
                self.http_port = int(m.group(3))
            elif m:
                self.port = int(m.group(3))
        return self

    def terminate(self) -> None:
        """Sends SIGTERM once (a second one during shutdown is not what tests ask)."""
        assert self.proc is not None
        if not self.terminated and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.terminated = True

    def stop(self) -> int:
        """SIGTERM (unless already sent) and wait; the exit code."""
        assert self.proc is not None
        self.terminate()
        try:
            rc = self.proc.wait(timeout=self.stop_timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise self.failure(f"server did not stop within {self.stop_timeout} s of SIGTERM")
        self._close_pipe()
        return rc

    def kill(self) -> None:
        """SIGKILL and reap (bounded)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=self.stop_timeout)
        self._close_pipe()

    def _close_pipe(self) -> None:
        if self.pump is not None:
            self.pump.join(timeout=self.stop_timeout)
            self.pump = None
        if self.proc is not None and self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()

    def log_text(self) -> str:
        """The log's last 4,000 characters."""
        try:
            return self.log.read_text(errors="replace")[-4000:]
        except OSError:
            return "(no log)"
