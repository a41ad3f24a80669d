#!/usr/bin/env python3
"""Writes the seed corpus, Fuzz/corpus/<target>/<name>, from readable steps.

Run from the repository root after changing an input format in Fuzz/Checks
(the byte layouts are described there); the files are committed, and
FuzzCorpusTests runs every check over them.
"""
import json
import os
import struct

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    os.makedirs(os.path.join(ROOT, target), exist_ok=True)
    with open(os.path.join(ROOT, target, name), "wb") as f:
        f.write(data)


def frame(body):
    body = body.encode() if isinstance(body, str) else body
    return struct.pack(">I", len(body)) + body


# --- requests and JSON -------------------------------------------------------
REQUESTS = {
    "hello": {"type": "hello", "id": 1, "protocol": 1, "name": "Doc", "token": "s3cret"},
    "subscribe": {"type": "subscribe", "id": "a-1", "channel": "timers/hill-valley"},
    "command": {"type": "command", "id": 7, "channel": "starport/lobby", "action": "dispatch",
                "args": {"model": "SWingV2", "path": "AC", "departs_at": "2026-11-22T09:00:00.250Z"}},
    "publish": {"type": "publish", "id": 9007199254740992, "channel": "delorean/main",
                "data": {"x": [1, 2.5, -3e-7, True, None, "\u00e9\u20ac\U0001F697"]}},
    "history": {"type": "history", "id": None, "channel": "laps/race", "since": 0, "limit": 1000},
    "list": {"type": "list", "cursor": "laps/a", "limit": 5.0},
    "bad-id": {"type": "ping", "id": 1.5},
    "no-type": {"id": 3, "channel": "bad channel"},
}
for name, request in REQUESTS.items():
    write("request", name, json.dumps(request, ensure_ascii=(name == "publish")).encode())
    write("json", name, json.dumps(request, indent=1).encode())
write("json", "numbers", b"[0,-0,1e2,1E-2,-1.5e+300,123456789012345678901234567890,9223372036854775807,-9223372036854775808]")
write("json", "strings", b'["\\u0041\\ud83d\\ude97\\n\\t\\"\\\\\\/", "", "\xc3\xa9"]')
write("json", "nested", b'{"a":{"b":[[[{}]]],"c":null},"d":[true,false]}')

# --- frames: [maxFrame choice][k][k chunk sizes][copy after][stream] --------
# maxFrame choices: 2, 3, 5, 16, 64, 255, 4096, 16 MiB.
two = frame('{"type":"ping","id":1}') + frame('{"type":"hello","protocol":1,"name":"Doc"}')
write("frame", "whole", bytes([6, 0, 0]) + two)
write("frame", "split", bytes([6, 3, 1, 2, 5, 2]) + two)
write("frame", "byte-by-byte", bytes([6, 1, 1, 9]) + two + frame("{}")[:3])
write("frame", "too-large", bytes([4, 1, 3, 0]) + frame("{}") + frame("x" * 65))
write("frame", "too-short", bytes([6, 0, 0]) + frame("{}") + b"\x00\x00\x00\x01{")
write("frame", "partial", bytes([7, 2, 0, 7, 1]) + frame("{}") + struct.pack(">I", 300) + b"{" * 100)

# --- actions: see ActionChecks ------------------------------------------------
# Clock step: [0, index] into (0, 1, 99, 100, 101, 499, 500, 999, 1000, 1001,
# 8800, 60000, 3600000, 86400000, 1 year) ms, [1, hi, lo] ms, [2, n] n*10 ms.
# Session: 0 ann, 1 bob, 2 cy. Op: 0 perform, 5 wake (then a tick count
# byte), 7 release. Perform: action index (sorted names), argument count,
# then per argument a key index and a value.
KEYS = ["id", "event", "location", "note", "remaining_s", "at", "departs_at", "model", "path", "time", "extra"]
WORDS = ["SWingV1", "SWingV2", "SWingV3", "TearDrop", "tEaRdRoP", "AB", "AC", "e-d-c", "ABCDE", "EDCBA",
         "A", "AA", "A-", "F", "", " ", "Hill Valley", "Doc", "Twin Pines Mall", "\u00e9"]


def ms(n):
    return bytes([1, n >> 8, n & 0xFF])


def key(name):
    return bytes([KEYS.index(name)])


def integer(n):  # value choice 2: a byte
    return bytes([2, n])


def word(w):  # value choice 9: a word
    return bytes([9, WORDS.index(w)])


def time(offset_index, extra_ms=0, back=False):  # value choice 6: now ± offset
    return bytes([6, offset_index, extra_ms >> 8, extra_ms & 0xFF, 1 if back else 0])


def perform(action, *args, session=0, step=ms(500)):
    out = step + bytes([session, 0, action, len(args)])
    for k, v in args:
        out += key(k) + v
    return out


def wake(ticks=1, step=ms(500)):
    return step + bytes([0, 5, ticks - 1])


def release(session, step=ms(10)):
    return step + bytes([session, 7])


# delorean: actions set_destination 0, travel 1
write("actions", "delorean-trip",
      bytes([0, 0, 250]) + perform(0, ("time", time(12, 0, back=True)))
      + perform(1) + wake(ticks=50, step=ms(100)) + wake(ticks=60, step=ms(6000)) + perform(1))
# starport: cancel 0, catalog 1, dispatch 2, quote 3
write("actions", "starport-board",
      bytes([1, 1, 0]) + perform(1) + perform(3, ("model", word("SWingV1")), ("path", word("AB")))
      + perform(2, ("model", word("SWingV2")), ("path", word("AC")), ("departs_at", time(9)))
      + perform(2, ("model", word("tEaRdRoP")), ("path", word("e-d-c")))
      + wake(step=ms(30000)) + perform(0, ("id", integer(1))) + wake(step=ms(60000)))
# timers: add 0, remove 1, start 2, stop 3, update 4
write("actions", "timers-countdown",
      bytes([2, 0, 125]) + perform(0, ("event", word("Doc")), ("remaining_s", integer(3)))
      + perform(0, ("event", word("A")), ("location", word("Hill Valley")), ("at", time(9)))
      + perform(2, ("id", integer(1)), session=1) + perform(2, ("id", integer(2)), session=2)
      + wake(step=ms(1000)) + release(2) + perform(4, ("id", integer(1)), ("remaining_s", integer(9)))
      + wake(step=ms(3500)) + perform(3, ("id", integer(1)), session=1) + perform(1, ("id", integer(2))))
# laps: lap 0, reset 1, start 2, stop 3
write("actions", "laps-race",
      bytes([3, 3, 231]) + perform(2) + perform(0, step=ms(1234)) + wake(step=ms(99)) + perform(0, step=ms(2001))
      + perform(3) + perform(2, step=ms(5000)) + perform(1) + perform(0))


# --- HTTP heads: [k][k chunk sizes][bytes] -------------------------------------
write("http", "metrics", bytes([0]) + b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9090\r\nAccept: text/plain\r\n\r\n")
write("http", "split", bytes([3, 1, 7, 40]) + b"\r\nHEAD /healthz?x=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET")
write("http", "refused", bytes([1, 5]) + b"POST /readyz HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc")
write("http", "not-http", bytes([0]) + b"\x00\x00\x00\x10{\"type\":\"ping\"}")


# --- PROXY headers: [k][k chunk sizes][bytes] ----------------------------------
write("proxy", "v1-tcp4", bytes([0]) + b"PROXY TCP4 203.0.113.7 127.0.0.1 50000 1985\r\n\x00\x00\x00\x10")
write("proxy", "v1-split", bytes([2, 1, 9]) + b"PROXY TCP6 2001:db8::1 ::1 65535 1985\r\n\x16\x03\x01")
write("proxy", "v2-inet", bytes([3, 5, 1, 12]) + b"\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x10"
      + bytes([203, 0, 113, 7, 127, 0, 0, 1, 0xC3, 0x50, 0x07, 0xC1, 4, 0, 1, 42]) + b"\x16\x03")
write("proxy", "v2-local", bytes([0]) + b"\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00")
write("proxy", "v1-overlong", bytes([1, 50]) + b"PROXY TCP4 " + b"1" * 94 + b"\r\n")
write("proxy", "not-proxy", bytes([0]) + b"\x00\x00\x00\x10{\"type\":\"ping\"}")
# found by the fuzzer: an LF before the first CR is a bare LF, even while the line is incomplete
write("proxy", "bare-lf-then-cr", bytes([1, 20]) + b"PROXY TCP4 1.2.3.4\n 5.6.7.8 1 2\r")


# --- WebSocket: [settings][k][k chunk sizes][stream] ----------------------------
# settings: bit 0 server side (frames must be masked); bits 1-3 choose
# maxMessageBytes from 0, 1, 5, 125, 126, 1000, 65536, 1 MiB.
def ws(opcode, payload, fin=True, mask=None, length_form=None):
    payload = payload.encode() if isinstance(payload, str) else payload
    first = (0x80 if fin else 0) | opcode
    mask_bit = 0x80 if mask is not None else 0
    n = len(payload)
    form = length_form or (7 if n <= 125 else 16 if n <= 0xFFFF else 64)
    if form == 7:
        header = bytes([first, mask_bit | n])
    elif form == 16:
        header = bytes([first, mask_bit | 126]) + struct.pack(">H", n)
    else:
        header = bytes([first, mask_bit | 127]) + struct.pack(">Q", n)
    if mask is None:
        return header + payload
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


KEY = bytes([0x37, 0xFA, 0x21, 0x3D])
SERVER_1MIB = 1 | 7 << 1
CLIENT_1MIB = 7 << 1
write("websocket", "rfc-hello", bytes([CLIENT_1MIB, 0]) + bytes.fromhex("810548656c6c6f") + bytes.fromhex("010348656c") + bytes.fromhex("80026c6f"))
write("websocket", "rfc-masked", bytes([SERVER_1MIB, 2, 1, 3]) + bytes.fromhex("818537fa213d7f9f4d5158") + bytes.fromhex("8a8537fa213d7f9f4d5158"))
write("websocket", "interleaved", bytes([SERVER_1MIB, 3, 2, 7, 1])
      + ws(1, '{"type":', fin=False, mask=KEY) + ws(9, "p", mask=KEY) + ws(0, '"ping"}', fin=False, mask=KEY)
      + ws(10, "", mask=KEY) + ws(0, "", mask=KEY) + ws(8, b"\x03\xe8bye", mask=KEY))
write("websocket", "utf8-split", bytes([SERVER_1MIB, 1, 4])
      + ws(1, "Zeit ", fin=False, mask=KEY)
      + ws(0, "\u26a1".encode()[:1], fin=False, mask=KEY) + ws(0, "\u26a1\U0001D11E".encode()[1:], mask=KEY))
write("websocket", "lengths", bytes([CLIENT_1MIB, 0]) + ws(1, "a" * 125) + ws(1, "b" * 126) + ws(1, "c" * 200, length_form=64)
      + ws(1, "d" * 5, length_form=16))
write("websocket", "too-big", bytes([1 | 3 << 1, 1, 3]) + ws(1, "x" * 100, mask=KEY) + ws(1, "x" * 200, mask=KEY))
write("websocket", "binary", bytes([SERVER_1MIB, 0]) + ws(2, b"\x00\x01", mask=KEY))
write("websocket", "bad-utf8", bytes([SERVER_1MIB, 0]) + ws(1, b"\xed\xa0\x80", mask=KEY))
write("websocket", "bad-close", bytes([CLIENT_1MIB, 0]) + ws(8, b"\x03\xed"))
write("websocket", "unmasked-at-server", bytes([SERVER_1MIB, 0]) + ws(1, "hi"))
