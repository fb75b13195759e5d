#!/usr/bin/env python3
"""Huge messages to a real host: a `status` request carrying one string of
N MB, then a `ping`. Prints, per size and host: seconds until the reply to
the huge request, seconds until the ping after it is answered, the reply
(an error or the status), and the host's peak RSS (VmHWM).

  benches/rpc_huge.py [--mb 50 100] [HOST ...]

HOST defaults to this checkout's target/release/laya; give an older build
as a second HOST for a before/after table in one run.
"""

import argparse
import os
import subprocess
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def pack_str(b):
    n = len(b)
    if n < 32:
        return bytes([0xA0 | n]) + b
    if n < 256:
        return bytes([0xD9, n]) + b
    if n < 65536:
        return bytes([0xDA]) + n.to_bytes(2, "big") + b
    return bytes([0xDB]) + n.to_bytes(4, "big") + b


def request(msgid, method, params):
    # [0, msgid, method, params]; msgid < 128, params: a list of bytes strings
    body = bytes([0x94, 0x00, msgid]) + pack_str(method.encode())
    body += bytes([0x90 | len(params)]) + b"".join(pack_str(p) for p in params)
    return body


def read_replies(stdout, replies):
    """Notes (msgid, is_error, time) for every reply; skips notifications."""
    buf = b""
    while True:
        chunk = stdout.read1(65536)
        if not chunk:
            return
        buf += chunk
        # Replies start 0x94 0x01 <msgid fixint> then error (nil 0xc0 or a str).
        i = 0
        while True:
            j = buf.find(b"\x94\x01", i)
            if j < 0 or j + 4 > len(buf):
                break
            replies.append((buf[j + 2], buf[j + 3] != 0xC0, time.monotonic()))
            i = j + 4
        buf = buf[-8:]


def vmhwm_mb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def run(host, mb):
    p = subprocess.Popen(
        [host, "serve", "--model", "/nonexistent/model.safetensors"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    replies = []
    threading.Thread(target=read_replies, args=(p.stdout, replies), daemon=True).start()
    p.stdin.write(request(1, "ping", []))
    p.stdin.flush()
    while not replies:
        time.sleep(0.01)
    huge = request(2, "status", [b"h" * (mb << 20)]) + request(3, "ping", [])
    t0 = time.monotonic()
    p.stdin.write(huge)
    p.stdin.flush()
    peak = 0.0
    deadline = t0 + 300
    while time.monotonic() < deadline and not any(r[0] == 3 for r in replies):
        peak = max(peak, vmhwm_mb(p.pid))
        time.sleep(0.01)
    peak = max(peak, vmhwm_mb(p.pid))
    got = {r[0]: r for r in replies}
    p.kill()
    p.wait()
    huge_s = got[2][2] - t0 if 2 in got else float("nan")
    ping_s = got[3][2] - t0 if 3 in got else float("nan")
    kind = "error" if 2 in got and got[2][1] else ("answered" if 2 in got else "none")
    return huge_s, ping_s, kind, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, nargs="+", default=[50, 100])
    ap.add_argument("hosts", nargs="*", default=[os.path.join(ROOT, "target/release/laya")])
    a = ap.parse_args()
    print("| host | MB | reply to the huge request s | next ping answered s | reply | peak RSS MB |")
    print("|------|----|-----------------------------|----------------------|-------|-------------|")
    for mb in a.mb:
        for host in a.hosts:
            huge_s, ping_s, kind, peak = run(host, mb)
            print(f"| {host} | {mb} | {huge_s:.2f} | {ping_s:.2f} | {kind} | {peak:.1f} |", flush=True)


if __name__ == "__main__":
    main()
