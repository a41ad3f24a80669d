#!/usr/bin/env python3
"""A/B of two release builds on the single-node hot paths, interleaved.

    docs/bench/ab.py --base /path/to/old/checkout --new . [--rounds 5]

Each round runs, for each build in turn (the order alternates between
rounds, so a drift of the machine's speed hits both alike), on a fresh
server and database:

- fan-out: the neutral harness `fanout` (../shared/bench, built into
  --fanout) with 100 subscribers x 64 B, --msgs messages: deliveries/s and
  deliveries per server CPU second;
- durable commands: `outatime-load commands --clients 50` for --seconds:
  acknowledged commands/s, and the server's CPU µs per acknowledged command
  (/proc/PID/stat; lower is better: the ratio new/base of it should be
  <= 1).

Against a build as old as 6a3a241 (issue 28's fan-out baseline), which has
neither limit flag: `--base-args '' --fanout-only` (its outatime-load may
lack today's `commands` flags); `--subs 10` or `--subs 1000` for the other
fan-out points.

Prints one line per run and the medians per build. Needs the release
binaries (`swift build -c release`) in both checkouts. Every run is bounded:
a server that does not come up in 20 s, or a harness that runs past its
deadline, fails the run.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time


PIN = {"server": [], "client": []}


# The limits a build of today needs lifted for the harness; builds as old as
# 6a3a241 have neither flag (--base-args '' for them).
LIMIT_ARGS = ["--max-requests-per-second", "0", "--max-connections-per-address", "15000"]
SERVER_ARGS = {"base": LIMIT_ARGS, "new": LIMIT_ARGS}


def start_server(checkout, folder, name="new"):
    binary = os.path.join(checkout, ".build/release/outatime-server")
    proc = subprocess.Popen(
        PIN["server"] + [binary, "--port", "0", "--db", os.path.join(folder, "ab.sqlite")] + SERVER_ARGS[name]
        + ["--log-level", "error"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        match = re.search(r"listening on 127\.0\.0\.1:(\d+)", line or "")
        if match:
            return proc, int(match.group(1))
        if proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError(f"{binary} did not start")


def stop_server(proc):
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def fanout(args, pid, port):
    out = subprocess.run(
        PIN["client"] + [args.fanout, "--proto", "lpjson", "--port", str(port), "--server-pid", str(pid), "--label", "ab",
         "--lp-config", os.path.join(os.path.dirname(args.fanout), "outatime.conf"), "--channel", "starport/ab",
         "--scenario", "fanout", "--subs", str(args.subs), "--msgs", str(args.msgs), "--size", "64"],
        capture_output=True, text=True, timeout=300)
    line = next(l for l in out.stdout.splitlines() if l.startswith("{"))
    result = json.loads(line)
    return result["deliveries_per_s"], result.get("deliveries_per_server_cpu_s", 0.0)


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def commands(args, checkout, port, pid):
    """Acknowledged durable commands/s, and the server's CPU µs per command
    (the fair figure where the disk's fsync time moves the rate)."""
    load = os.path.join(checkout, ".build/release/outatime-load")
    before = cpu_seconds(pid)
    out = subprocess.run(PIN["client"] + [load, "commands", "--port", str(port), "--clients", "50", "--duration", str(args.seconds),
                          "--json"], capture_output=True, text=True, timeout=args.seconds + 120)
    used = cpu_seconds(pid) - before
    result = json.loads(out.stdout)
    return result["commands_per_s"], used * 1e6 / max(1, result["acknowledged"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="checkout of the previous build")
    parser.add_argument("--new", required=True, help="checkout of the build measured")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--msgs", type=int, default=200_000, help="fan-out messages per run")
    parser.add_argument("--seconds", type=int, default=8, help="durable-command run length")
    parser.add_argument("--subs", type=int, default=100, help="fan-out subscribers")
    parser.add_argument("--fanout-only", action="store_true", help="skip the durable-command runs")
    parser.add_argument("--base-args", default=None,
                        help="server flags for the base build instead of the request-rate and per-address limits "
                             "lifted (--base-args '' for builds as old as 6a3a241, which have neither flag)")
    parser.add_argument("--fanout", default="/tmp/bench/fanout", help="the fanout harness binary")
    parser.add_argument("--pin", action="store_true",
                        help="a named placement: the server on CPU 0, the harness on CPU 1 (taskset); on this "
                             "2-core VM unpinned runs are bimodal (3.7 or 5.9 M deliveries/s for the same build)")
    args = parser.parse_args()
    if args.pin:
        PIN["server"], PIN["client"] = ["taskset", "-c", "0"], ["taskset", "-c", "1"]
    if args.base_args is not None:
        SERVER_ARGS["base"] = args.base_args.split()
    builds = {"base": args.base, "new": args.new}
    results = {name: {"fanout": [], "fanout_cpu": [], "commands": [], "command_cpu_us": []} for name in builds}
    for round_number in range(args.rounds):
        order = ["base", "new"] if round_number % 2 == 0 else ["new", "base"]
        for name in order:
            with tempfile.TemporaryDirectory() as folder:
                proc, port = start_server(builds[name], folder, name)
                try:
                    dps, per_cpu = fanout(args, proc.pid, port)
                finally:
                    stop_server(proc)
            cps, us_per_command = float("nan"), float("nan")
            if not args.fanout_only:
                with tempfile.TemporaryDirectory() as folder:
                    proc, port = start_server(builds[name], folder, name)
                    try:
                        cps, us_per_command = commands(args, builds[name], port, proc.pid)
                    finally:
                        stop_server(proc)
            results[name]["fanout"].append(dps)
            results[name]["fanout_cpu"].append(per_cpu)
            results[name]["commands"].append(cps)
            results[name]["command_cpu_us"].append(us_per_command)
            print(f"round {round_number + 1} {name:4}: fan-out {dps:,.0f}/s ({per_cpu:,.0f} per server CPU s), "
                  f"commands {cps:,.0f}/s ({us_per_command:.1f} server CPU µs each)", flush=True)
    print("medians:")
    for name in builds:
        r = results[name]
        print(f"  {name:4}: fan-out {statistics.median(r['fanout']):,.0f}/s "
              f"({statistics.median(r['fanout_cpu']):,.0f} per server CPU s), "
              f"commands {statistics.median(r['commands']):,.0f}/s "
              f"({statistics.median(r['command_cpu_us']):.1f} server CPU µs each)")
    base, new = results["base"], results["new"]
    for key in ("fanout", "fanout_cpu") if args.fanout_only else ("fanout", "fanout_cpu", "commands", "command_cpu_us"):
        ratio = statistics.median(new[key]) / statistics.median(base[key])
        print(f"  new/base {key}: {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
