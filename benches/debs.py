"""Debian packages for the benches' held-out texts: fetched once with
`apt-get download` into ~/.cache/laya-bench (LAYA_BENCH_CACHE) and unpacked
there; never installed."""

import glob
import os
import subprocess


def unpacked(packages, name):
    """The folder (cache/`name`) holding the files of every package of
    `packages`, downloading those not fetched yet. Raises OSError or
    subprocess.CalledProcessError where apt-get or dpkg-deb fails."""
    cache = os.environ.get("LAYA_BENCH_CACHE", os.path.expanduser("~/.cache/laya-bench"))
    root = os.path.join(cache, name)
    os.makedirs(root, exist_ok=True)
    for p in packages:
        if not glob.glob(os.path.join(cache, f"{p}_*.deb")):
            subprocess.run(["apt-get", "download", p], cwd=cache, check=True, capture_output=True)
        deb = sorted(glob.glob(os.path.join(cache, f"{p}_*.deb")))[-1]
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    return root
