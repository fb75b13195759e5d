#!/usr/bin/env python3
"""Stands between Neovim and the real host ($LAYA_SHIM_HOST, given the same
arguments): passes Neovim's bytes on to the host's stdin, and when the file
$LAYA_SHIM_TRIGGER appears, writes its bytes (the garbage) to the host
first, at a message boundary, then deletes it. The host's stdout and
stderr are Neovim's; the shim exits with the host's exit code."""

import os
import subprocess
import sys
import threading

host = subprocess.Popen([os.environ["LAYA_SHIM_HOST"]] + sys.argv[1:], stdin=subprocess.PIPE)
trigger = os.environ["LAYA_SHIM_TRIGGER"]


def forward():
    try:
        while True:
            chunk = os.read(0, 65536)
            if not chunk:
                break
            if os.path.exists(trigger):
                with open(trigger, "rb") as f:
                    host.stdin.write(f.read())
                os.remove(trigger)
            host.stdin.write(chunk)
            host.stdin.flush()
    except (BrokenPipeError, OSError):
        pass
    try:
        host.stdin.close()
    except OSError:
        pass


threading.Thread(target=forward, daemon=True).start()
sys.exit(host.wait())
