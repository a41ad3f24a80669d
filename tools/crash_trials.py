#!/usr/bin/env python3
"""Crash trials: SIGKILL the real ``outatime-server`` under durable load and
check that nothing acknowledged was lost (issue 13, scope item 6).

Each trial:

1. starts ``outatime-server`` on 127.0.0.1, port 0 (the port is read from its
   ``listening on HOST:PORT`` line), on the run's database (one temporary
   SQLite file for the whole run, so every trial also restarts on what the
   earlier crashes left);
2. runs ``--clients`` connections at once (one thread each), all subscribed
   to the trial's ``--channels`` timer lists, each sending timer ``add`` and
   ``update`` commands one after the other. Every command names a unique tag
   as the timer's ``event``; a command whose reply is OK is *acknowledged*,
   and its seq is taken from the ``event`` push carrying that tag, which a
   subscribed issuer receives before the reply (PROTOCOL.md 6.9);
3. SIGKILLs the server at a random moment (seeded: ``--seed``) between
   ``--min-kill-s`` and ``--max-kill-s`` after the load started;
4. restarts it on the same database and reads every trial channel's whole
   ``history`` (paged by 1,000, PROTOCOL.md 6.7; the server runs with a
   ``--history-limit`` above anything a trial writes, so nothing is pruned):
   the seqs must run 1, 2, ... up to the channel's seq with no gap and no
   duplicate, and each acknowledged command's event must be at its seq with
   its tag;
5. stops the server with SIGTERM (exit code 0 expected) and runs
   ``PRAGMA integrity_check`` on the database file opened read-only.

After the last trial the server is started once more and every trial's
channels are checked again (a later crash must not damage earlier data).

Prints one line per trial and a summary; exits 1 when an acknowledged event
is lost, a seq is missing or repeated, the integrity check fails, or the
server misbehaves (2 for bad usage). Every wait is bounded.

    python3 tools/crash_trials.py --trials 100 --server .build/debug/outatime-server

Python 3 standard library plus the project's client (clients/python/outatime.py).
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "clients" / "python"))

from outatime import Client, ConnectionClosed, OutaTimeError  # noqa: E402
from outatime_server import ServerProcess  # noqa: E402

DEFAULT_SERVER = REPO_ROOT / ".build" / "debug" / "outatime-server"
STARTUP_TIMEOUT = 30.0   # the server prints its line within this
STOP_TIMEOUT = 15.0      # the server bounds its shutdown to 5 s
CLIENT_TIMEOUT = 10.0    # every request's reply
HISTORY_LIMIT = 100_000  # far above what a trial writes per channel: no pruning


class TrialFailure(Exception):
    """The server did something the trial cannot continue past (would not
    start, would not stop, answered garbage)."""


# --------------------------------------------------------------------------
# The server process
# --------------------------------------------------------------------------


class Server(ServerProcess):
    """One ``outatime-server`` child on a free port, stderr to a log file
    (the shared :class:`outatime_server.ServerProcess`)."""

    def __init__(self, binary: Path, db: Path, log: Path) -> None:
        self.db = db
        super().__init__(binary, ["--host", "127.0.0.1", "--port", "0", "--db", str(db),
                                  "--history-limit", str(HISTORY_LIMIT), "--log-level", "warning"],
                         log, failure=TrialFailure, startup_timeout=STARTUP_TIMEOUT, stop_timeout=STOP_TIMEOUT)

    def log_tail(self) -> str:
        return self.log_text()


# --------------------------------------------------------------------------
# Load
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Ack:
    """An acknowledged command: its event must be at ``seq`` on ``channel``."""

    channel: str
    seq: int
    event: str   # timer_added or timer_updated
    tag: str     # the timer's `event` text the command set


@dataclass
class WorkerResult:
    acks: list[Ack] = field(default_factory=lambda: [])
    in_flight: int = 0            # a command sent when the connection died
    errors: list[str] = field(default_factory=lambda: [])


def _load_worker(port: int, channels: list[str], index: int, trial: int, seed: int,
                 ready: threading.Barrier, stop: threading.Event, result: WorkerResult) -> None:
    rng = random.Random(seed)
    client = Client("127.0.0.1", port, name=f"crash-{index}", timeout=CLIENT_TIMEOUT)
    try:
        client.connect()
        for ch in channels:
            client.subscribe(ch)
    except OutaTimeError as exc:
        result.errors.append(f"client {index}: setup failed: {exc}")
        ready.abort()
        return
    try:
        ready.wait(timeout=STARTUP_TIMEOUT)
    except threading.BrokenBarrierError:
        client.close()
        return
    own: dict[str, list[int]] = {ch: [] for ch in channels}   # timer ids this client added
    n = 0
    try:
        while not stop.is_set():
            n += 1
            ch = rng.choice(channels)
            tag = f"t{trial}-c{index}-n{n}"
            if own[ch] and rng.random() < 0.5:
                action, want = "update", "timer_updated"
                args: dict[str, Any] = {"id": rng.choice(own[ch]), "event": tag,
                                        "remaining_s": rng.randrange(0, 100_000)}
            else:
                action, want = "add", "timer_added"
                args = {"event": tag, "location": f"client {index}", "remaining_s": rng.randrange(1, 100_000)}
            result.in_flight = 1
            reply = client.command(ch, action, **args)
            result.in_flight = 0
            if action == "add":
                own[ch].append(int(reply["id"]))
            # The issuer is subscribed: its event came before the reply and is queued.
            seq = None
            while client.pending_pushes():
                push = client.next_push(0)
                if (push.get("type") == "event" and push.get("channel") == ch
                        and push.get("event") == want and _tag_of(push) == tag):
                    seq = push.get("seq")
            if not isinstance(seq, int):
                result.errors.append(f"client {index}: '{action}' on {ch} ({tag}) was acknowledged "
                                     f"without its event push before the reply")
                return
            result.acks.append(Ack(ch, seq, want, tag))
    except ConnectionClosed:
        pass  # the kill: expected; a command in flight is neither acked nor lost
    except OutaTimeError as exc:
        if not stop.is_set():
            result.errors.append(f"client {index}: {exc}")
    finally:
        client.close()


def _tag_of(event: dict[str, Any]) -> Optional[str]:
    data = event.get("data")
    timer = data.get("timer") if isinstance(data, dict) else None
    tag = timer.get("event") if isinstance(timer, dict) else None
    return tag if isinstance(tag, str) else None


# --------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------


@dataclass
class Check:
    lost: list[str] = field(default_factory=lambda: [])      # acknowledged events not found
    seq_errors: list[str] = field(default_factory=lambda: [])  # gaps, duplicates, wrong order
    events: int = 0                                          # events in storage on these channels


def check_channels(port: int, acks: list[Ack], channels: list[str]) -> Check:
    """Read each channel's whole history from the running server and compare
    it with the acknowledged commands."""
    out = Check()
    by_channel: dict[str, list[Ack]] = {ch: [] for ch in channels}
    for a in acks:
        by_channel.setdefault(a.channel, []).append(a)
    with Client("127.0.0.1", port, name="crash-check", timeout=CLIENT_TIMEOUT) as c:
        for ch, ch_acks in by_channel.items():
            stored: dict[int, dict[str, Any]] = {}
            after, last, channel_seq = 0, 0, 0
            for _ in range(10_000):  # bounded paging
                page = c.history(ch, after=after, limit=1000)
                channel_seq = int(page["seq"])
                events = page["events"]
                for ev in events:
                    seq = int(ev["seq"])
                    if seq in stored:
                        out.seq_errors.append(f"{ch}: seq {seq} appears twice in history")
                    elif seq != last + 1:
                        out.seq_errors.append(f"{ch}: seq {seq} follows {last} (gap or out of order)")
                    stored[seq] = ev
                    last = seq
                if not events or last >= channel_seq:
                    break
                after = last
            if last != channel_seq:
                out.seq_errors.append(f"{ch}: history ends at seq {last} but the channel's seq is {channel_seq}")
            out.events += len(stored)
            for a in ch_acks:
                ev = stored.get(a.seq)
                if ev is None:
                    out.lost.append(f"{ch}: acknowledged {a.event} '{a.tag}' at seq {a.seq} is missing "
                                    f"(channel seq {channel_seq})")
                elif ev.get("event") != a.event or _tag_of(ev) != a.tag:
                    out.lost.append(f"{ch}: seq {a.seq} should be {a.event} '{a.tag}' but is "
                                    f"{ev.get('event')} '{_tag_of(ev)}'")
    return out


def integrity_check(db: Path) -> str:
    """``PRAGMA integrity_check`` on the database opened read-only: 'ok' or the problems."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=STOP_TIMEOUT)
    try:
        rows = conn.execute("PRAGMA integrity_check").fetchall()
    finally:
        conn.close()
    return "; ".join(str(r[0]) for r in rows)


# --------------------------------------------------------------------------
# Trials
# --------------------------------------------------------------------------


@dataclass
class TrialResult:
    trial: int
    kill_after_s: float
    acked: int
    in_flight: int
    stored: int
    lost: list[str]
    seq_errors: list[str]
    integrity: str
    errors: list[str]

    @property
    def ok(self) -> bool:
        return not self.lost and not self.seq_errors and self.integrity == "ok" and not self.errors


@dataclass
class Summary:
    trials: list[TrialResult]
    final: Optional[Check]
    seconds: float
    seed: int

    @property
    def acked(self) -> int:
        return sum(t.acked for t in self.trials)

    @property
    def lost(self) -> int:
        return sum(len(t.lost) for t in self.trials) + (len(self.final.lost) if self.final else 0)

    @property
    def integrity_errors(self) -> int:
        return sum(1 for t in self.trials if t.integrity != "ok")

    @property
    def ok(self) -> bool:
        final_ok = self.final is not None and not self.final.lost and not self.final.seq_errors
        return all(t.ok for t in self.trials) and final_ok


def run_trial(binary: Path, db: Path, log: Path, trial: int, rng: random.Random, clients: int,
              n_channels: int, min_kill_s: float, max_kill_s: float) -> tuple[TrialResult, list[Ack], list[str]]:
    channels = [f"timers/crash-{trial}-{k}" for k in range(n_channels)]
    server = Server(binary, db, log)
    server.start()
    errors: list[str] = []
    ready = threading.Barrier(clients + 1)
    stop = threading.Event()
    results = [WorkerResult() for _ in range(clients)]
    threads = [threading.Thread(target=_load_worker, daemon=True,
                                args=(server.port, channels, i, trial, rng.randrange(1 << 30), ready, stop, results[i]))
               for i in range(clients)]
    kill_after = rng.uniform(min_kill_s, max_kill_s)
    try:
        for t in threads:
            t.start()
        try:
            ready.wait(timeout=STARTUP_TIMEOUT)
        except threading.BrokenBarrierError:
            errors.append("the clients could not connect and subscribe")
        time.sleep(kill_after)
    finally:
        server.kill()  # SIGKILL mid-load: no shutdown, no flush, no goodbye
        stop.set()     # only now: the clients were sending until the kill
    for t in threads:
        t.join(timeout=CLIENT_TIMEOUT + 5)
        if t.is_alive():
            errors.append("a load client did not finish within its timeout")
    acks = [a for r in results for a in r.acks]
    for r in results:
        errors.extend(r.errors)

    server.start()  # same database: recovery
    try:
        check = check_channels(server.port, acks, channels)
    finally:
        rc = server.stop()
    if rc != 0:
        errors.append(f"the restarted server exited {rc} after SIGTERM; log:\n{server.log_tail()}")
    integrity = integrity_check(db)
    return (TrialResult(trial, kill_after, len(acks), sum(r.in_flight for r in results), check.events,
                        check.lost, check.seq_errors, integrity, errors), acks, channels)


def run_trials(trials: int = 10, server: Path = DEFAULT_SERVER, seed: Optional[int] = None,
               clients: int = 4, channels: int = 3, min_kill_s: float = 0.1, max_kill_s: float = 1.5,
               workdir: Optional[Path] = None, out: Any = sys.stdout) -> Summary:
    """Run ``trials`` crash trials; print a line per trial to ``out``; return the summary."""
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 31)
    rng = random.Random(seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="outatime-crash-", dir=workdir) as tmp:
        db = Path(tmp) / "crash.sqlite"
        log = Path(tmp) / "server.log"
        print(f"crash trials: {trials} trials, {clients} clients on {channels} timer lists each, "
              f"SIGKILL {min_kill_s}-{max_kill_s} s into the load, seed {seed}, server {server}", file=out, flush=True)
        results: list[TrialResult] = []
        all_acks: list[Ack] = []
        all_channels: list[str] = []
        for i in range(1, trials + 1):
            r, acks, chans = run_trial(server, db, log, i, rng, clients, channels, min_kill_s, max_kill_s)
            results.append(r)
            all_acks.extend(acks)
            all_channels.extend(chans)
            status = "ok" if r.ok else "FAIL"
            print(f"trial {i:3d}: killed after {r.kill_after_s:.2f} s, {r.acked} acknowledged, "
                  f"{r.in_flight} in flight, {r.stored} stored, {len(r.lost)} lost, "
                  f"{len(r.seq_errors)} seq errors, integrity {r.integrity}: {status}", file=out, flush=True)
            for line in (r.lost + r.seq_errors + r.errors)[:10]:
                print(f"    {line}", file=out, flush=True)
        # Once more over everything: later crashes must not have hurt earlier trials.
        final_server = Server(server, db, log)
        final_server.start()
        try:
            final = check_channels(final_server.port, all_acks, all_channels)
        finally:
            rc = final_server.stop()
        if rc != 0:
            final.seq_errors.append(f"the final server exited {rc} after SIGTERM")
        final_integrity = integrity_check(db)
        if final_integrity != "ok":
            final.seq_errors.append(f"final integrity check: {final_integrity}")
        for line in (final.lost + final.seq_errors)[:10]:
            print(f"    final: {line}", file=out, flush=True)
        summary = Summary(results, final, time.monotonic() - started, seed)
    print(f"summary: {len(results)} trials, {summary.acked} acknowledged events, {summary.lost} lost, "
          f"{summary.integrity_errors} integrity errors, final re-check of all {len(all_channels)} channels "
          f"({final.events} events): {'ok' if not final.lost and not final.seq_errors else 'FAIL'}; "
          f"{summary.seconds:.1f} s, seed {seed}: {'PASS' if summary.ok else 'FAIL'}", file=out, flush=True)
    return summary


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(
        description="SIGKILL the real outatime-server under durable load, restart it on the same database "
                    "and check that every acknowledged event is stored, seqs are contiguous without duplicates, "
                    "and PRAGMA integrity_check is ok. Exits 1 on any loss or error.")
    p.add_argument("--trials", type=int, default=10, help="how many kill/restart trials (default 10)")
    p.add_argument("--server", type=Path, default=DEFAULT_SERVER,
                   help="the outatime-server binary (default .build/debug/outatime-server)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed of the kill moments and the load (default: random, printed; pass it to repeat a run)")
    p.add_argument("--clients", type=int, default=4, help="concurrent client connections (default 4)")
    p.add_argument("--channels", type=int, default=3, help="timer lists per trial, shared by all clients (default 3)")
    p.add_argument("--min-kill-s", type=float, default=0.1, help="earliest SIGKILL after the load starts (default 0.1)")
    p.add_argument("--max-kill-s", type=float, default=1.5, help="latest SIGKILL after the load starts (default 1.5)")
    a = p.parse_args(argv)
    if a.trials < 1 or a.clients < 1 or a.channels < 1:
        p.error("--trials, --clients and --channels must be at least 1")
    if not 0 <= a.min_kill_s <= a.max_kill_s <= 60:
        p.error("need 0 <= --min-kill-s <= --max-kill-s <= 60")
    if not os.access(a.server, os.X_OK):
        p.error(f"{a.server} is not an executable; build it with `swift build` or pass --server")
    try:
        summary = run_trials(a.trials, a.server, a.seed, a.clients, a.channels, a.min_kill_s, a.max_kill_s)
    except TrialFailure as exc:
        print(f"crash trials: error: {exc}", file=sys.stderr)
        return 1
    return 0 if summary.ok else 1


if __name__ == "__main__":
    sys.exit(main())
