#!/usr/bin/env python3
"""Take a DeLorean on a trip and watch it reach 88 mph.

    python3 clients/python/example.py --channel delorean/demo

Subscribes to the channel, sets the destination time, starts the trip, prints
every speed tick and the ``time_travel`` event, then exits. Needs a running
``outatime-server`` (``make run``) and role ``operate`` (the default on a
server without a tokens file; otherwise pass ``--token``).
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import datetime, timezone
from typing import Any, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from outatime import DEFAULT_PORT, TRANSPORTS, Client, ConnectionClosed, OutaTimeError  # noqa: E402

MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")


def circuit_time(value: Optional[str]) -> str:
    """Render a wire time like the time circuits do: ``OCT 26 1985 01:21 AM``."""
    if value is None:
        return "--- -- ---- --:-- --"
    t = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    hour = t.hour % 12 or 12
    return f"{MONTHS[t.month - 1]} {t.day:02d} {t.year:04d} {hour:02d}:{t.minute:02d} {'AM' if t.hour < 12 else 'PM'}"


def show(state: dict[str, Any]) -> None:
    """Print the three rows of the time circuits."""
    for label, key in (("DESTINATION TIME", "destination_time"), ("PRESENT TIME", "present_time"),
                       ("LAST TIME DEPARTED", "last_departed")):
        print(f"  {label:<18}  {circuit_time(state.get(key))}")


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default=os.environ.get("OUTATIME_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("OUTATIME_PORT", DEFAULT_PORT)))
    parser.add_argument("--transport", choices=TRANSPORTS, default="tcp",
                        help="tcp (default): --port is the protocol port; ws: --port is the server's HTTP port "
                             "(--http) and the client speaks WebSocket to /ws (needs the websockets package)")
    parser.add_argument("--name", default="Marty", help="display name others see (default: Marty)")
    parser.add_argument("--token", default=os.environ.get("OUTATIME_TOKEN"), help="token, when the server has a tokens file")
    parser.add_argument("--channel", default="delorean/demo", help="a delorean/<car> channel (default: delorean/demo)")
    parser.add_argument("--destination", default="1985-10-26T01:21:00Z", help="ISO 8601 time with a zone")
    args = parser.parse_args(argv)

    if not args.channel.startswith("delorean/"):
        parser.error("--channel must be a delorean/<car> channel")

    try:
        with Client(args.host, args.port, name=args.name, token=args.token, transport=args.transport) as client:
            hello = client.hello
            print(f"connected to {hello['server']} as {args.name} (session {hello['session']}, role {hello['role']})")
            sub = client.subscribe(args.channel)
            print(f"{args.channel} at seq {sub['seq']}:")
            show(sub["state"])

            state = client.command(args.channel, "set_destination", time=args.destination)
            print(f"destination set: {circuit_time(state['destination_time'])}")
            try:
                client.command(args.channel, "travel")
                print("travelling…")
            except OutaTimeError as exc:
                if exc.code != "conflict":
                    raise
                print(f"already on a trip ({exc.message}); watching it")

            # Ticks come every --delorean-tick-ms (100 ms by default); 5 s
            # without any push means something is wrong.
            while True:
                push = client.next_push(timeout=5.0)
                if push.get("channel") != args.channel:
                    continue
                if push["type"] == "tick":
                    print(f"  {push['data']['speed_mph']:>2} MPH")
                elif push["type"] == "event":
                    print(f"event #{push['seq']} {push['event']}: {push['data']}")
                    if push["event"] in ("time_travel", "acceleration_aborted"):
                        break
                elif push["type"] == "bye":
                    print(f"server said bye: {push['reason']}", file=sys.stderr)
                    return 1

            final = client.get(args.channel)
            print(f"{args.channel} at seq {final['seq']}:")
            show(final["state"])
            return 0
    except ConnectionClosed as exc:
        print(f"example: connection lost: {exc.message} ({exc.code})", file=sys.stderr)
        return 1
    except OutaTimeError as exc:
        print(f"example: {exc.code}: {exc.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
