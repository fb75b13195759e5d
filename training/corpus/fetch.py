"""Fetching packages from the registries with their ordinary clients, into a
cache under training/work/cache, and unpacking them. Each fetcher returns one
Package per name: where its files are, its exact version and its licence."""

import fnmatch
import glob
import json
import os
import re
import shutil
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass

from .reserved import ReservedError, refuse, reserved

WORK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "work")
CACHE = os.path.join(WORK, "cache")


@dataclass
class Package:
    registry: str  # apt | pypi | npm | crates
    name: str
    version: str
    file: str  # the exact downloaded artefact (for the manifest)
    root: str  # unpacked tree
    licence: str


def _run(cmd, cwd=None):
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {r.stderr.strip()[-500:]}")
    return r.stdout


def _unpacked(kind, name):
    os.makedirs(os.path.join(CACHE, "x", kind), exist_ok=True)
    return os.path.join(CACHE, "x", kind, name)


def _pinned(name, pins, sep):
    return f"{name}{sep}{pins[name]}" if name in pins else name


def _deb_version(path):
    return os.path.basename(path).split("_")[1].replace("%3a", ":")


def _read(path):
    """A small file's text, or None when there is none."""
    try:
        with open(path) as f:
            return f.read()
    except FileNotFoundError:
        return None


def apt(names, log=print, pins=None):
    """Debian packages: `apt-get download` + `dpkg-deb -x` (nothing installed)."""
    refuse("apt", names)
    pins = pins or {}
    d = os.path.join(CACHE, "apt")
    os.makedirs(d, exist_ok=True)

    def cached(n):  # the .deb to use: the pinned version's when cached, else the last cached one
        debs = sorted(glob.glob(os.path.join(d, f"{n}_*.deb")))
        return next((deb for deb in debs if _deb_version(deb) == pins.get(n)), debs[-1] if debs else None)

    # a cached .deb of another version than the pin is fetched again (after `apt-get update` the pin may be
    # there now); if the pin cannot be had, the listed version is taken and the manifest says which
    missing = [n for n in names if (deb := cached(n)) is None or (n in pins and _deb_version(deb) != pins[n])]
    if missing:
        log(f"apt-get download {len(missing)} packages")
        try:
            _run(["apt-get", "download", *(_pinned(n, pins, "=") for n in missing)], cwd=d)
        except RuntimeError:  # one unknown name (or gone version) fails the batch: one by one
            for n in missing:
                for spec in dict.fromkeys([_pinned(n, pins, "="), n]):
                    try:
                        _run(["apt-get", "download", spec], cwd=d)
                        break
                    except RuntimeError as e:
                        # usually a package index older than the archive: the
                        # pinned version is unknown and the listed one is gone
                        log(f"  could not fetch {spec} (if versions are missing, run `apt-get update`): {e}")
    out = []
    for n in names:
        deb = cached(n)
        if deb is None:
            continue
        version = _deb_version(deb)
        root = _unpacked("apt", n)
        stamp = root + ".version"
        if os.path.isdir(root) and _read(stamp) != version:
            shutil.rmtree(root)  # unpacked from another version of the package (or before stamps)
        if not os.path.isdir(root):
            _run(["dpkg-deb", "-x", deb, root + ".tmp"])
            os.rename(root + ".tmp", root)
            with open(stamp, "w") as f:
                f.write(version)
        out.append(Package("apt", n, version, os.path.basename(deb), root, "debian"))
    return out


_WHEEL_LIC = re.compile(r"^(License|License-Expression|Classifier: License ::.*?)(?::\s*)(.*)$", re.M)


def pypi(specs, log=print, pins=None):
    """PyPI wheels (`pip download --no-deps --only-binary :all:`), unzipped."""
    refuse("pypi", specs)
    pins = pins or {}
    d = os.path.join(CACHE, "pypi")
    os.makedirs(d, exist_ok=True)
    out = []
    for spec in specs:
        name = re.split(r"[=<>\[]", spec)[0]
        if spec == name:
            spec = _pinned(name, pins, "==")
        norm = re.sub(r"[-_.]+", "_", name).lower()
        found = [w for w in glob.glob(os.path.join(d, "*.whl"))
                 if os.path.basename(w).lower().startswith(norm + "-")]
        if not found:
            log(f"pip download {spec}")
            try:
                _run(["python3", "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                      "--disable-pip-version-check", "--python-version", "3.11", "-d", d, spec])
            except RuntimeError as e:
                log(f"  skipped {spec}: {e}")
                continue
            found = [w for w in glob.glob(os.path.join(d, "*.whl"))
                     if os.path.basename(w).lower().startswith(norm + "-")]
        whl = sorted(found)[-1]
        root = _unpacked("pypi", norm)
        if not os.path.isdir(root):
            with zipfile.ZipFile(whl) as z:
                z.extractall(root + ".tmp")
            os.rename(root + ".tmp", root)
        lic = ""
        for meta in glob.glob(os.path.join(root, "*.dist-info", "METADATA")):
            with open(meta, encoding="utf-8", errors="replace") as f:
                head = f.read().split("\n\n", 1)[0]
            lic = " ".join(m.group(2).strip() for m in _WHEEL_LIC.finditer(head))
        version = os.path.basename(whl).split("-")[1]
        out.append(Package("pypi", name, version, os.path.basename(whl), root, lic))
    return out


def npm(names, log=print, pins=None):
    """npm tarballs (`npm pack --ignore-scripts`), untarred."""
    refuse("npm", names)
    pins = pins or {}
    d = os.path.join(CACHE, "npm")
    os.makedirs(d, exist_ok=True)
    out = []
    for spec in names:
        key = re.sub(r"[^A-Za-z0-9.-]+", "_", spec)
        stamp = os.path.join(d, key + ".json")
        if not os.path.exists(stamp):
            base = spec.rsplit("@", 1)[0] if "@" in spec[1:] else spec
            want = f"{base}@{pins[base]}" if base in pins else spec
            log(f"npm pack {want}")
            try:
                info = json.loads(_run(["npm", "pack", "--json", "--ignore-scripts", "--pack-destination", d, want]))
            except (RuntimeError, ValueError) as e:
                log(f"  skipped {spec}: {e}")
                continue
            with open(stamp, "w") as f:
                json.dump(info[0], f)
        with open(stamp) as f:
            info = json.load(f)
        tgz = os.path.join(d, info["filename"].replace("@", "").replace("/", "-"))
        if not os.path.exists(tgz):
            tgz = os.path.join(d, os.path.basename(info["filename"]))
        root = _unpacked("npm", key)
        if not os.path.isdir(root):
            with tarfile.open(tgz) as t:
                t.extractall(root + ".tmp", filter="data")
            os.rename(root + ".tmp", root)
        lic = ""
        pj = os.path.join(root, "package", "package.json")
        if os.path.exists(pj):
            with open(pj, encoding="utf-8", errors="replace") as f:
                lic = str(json.load(f).get("license", ""))
        out.append(Package("npm", info["name"], info["version"], os.path.basename(tgz), root, lic))
    return out


def crates(names, log=print, pins=None):
    """Rust crate sources (the crate registry) via `cargo vendor` of a throwaway crate that depends on
    each name as "*" (or "=version" when pinned); only the named crates are
    returned (newest vendored version). The dependency graph is resolved first
    and checked: a reserved crate pulled in by another is refused before
    anything is downloaded."""
    refuse("crates", names)
    pins = pins or {}
    d = os.path.join(CACHE, "cargo")
    vendor = os.path.join(d, "vendor")
    want = "\n".join(f'{n} = "{"=" + pins[n] if n in pins else "*"}"' for n in sorted(names))
    manifest = f'[package]\nname = "laya-corpus-fetch"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\n{want}\n'
    cargo_toml = os.path.join(d, "Cargo.toml")
    old = open(cargo_toml).read() if os.path.exists(cargo_toml) else ""
    if old != manifest or not os.path.isdir(vendor):
        os.makedirs(os.path.join(d, "src"), exist_ok=True)
        with open(cargo_toml, "w") as f:
            f.write(manifest)
        with open(os.path.join(d, "src", "lib.rs"), "w") as f:
            f.write("")
        _run(["cargo", "generate-lockfile", "--quiet"], cwd=d)
        try:
            check_lock(os.path.join(d, "Cargo.lock"))
        except ReservedError:
            os.remove(cargo_toml)  # so the next run resolves (and checks) again
            raise
        log(f"cargo vendor ({len(names)} crates)")
        _run(["cargo", "vendor", "--quiet", "--versioned-dirs", "vendor"], cwd=d)
    out = []
    for n in sorted(names):
        dirs = sorted(glob.glob(os.path.join(vendor, f"{n}-[0-9]*")), key=_version_key)
        if not dirs:
            continue
        pinned = os.path.join(vendor, f"{n}-{pins.get(n)}")
        root = pinned if os.path.isdir(pinned) else dirs[-1]
        version = os.path.basename(root)[len(n) + 1:]
        lic = ""
        ct = os.path.join(root, "Cargo.toml")
        if os.path.exists(ct):
            m = re.search(r'^license\s*=\s*"([^"]*)"', open(ct, encoding="utf-8", errors="replace").read(), re.M)
            lic = m.group(1) if m else ""
        out.append(Package("crates", n, version, f"{n}-{version}.crate", root, lic))
    return out


def check_lock(lock_path):
    """Raises ReservedError if a Cargo.lock resolves to a reserved crate."""
    with open(lock_path, encoding="utf-8") as f:
        names = re.findall(r'^name = "([^"]+)"', f.read(), re.M)
    bad = sorted({n for n in names if reserved("crates", n)})
    if bad:
        raise ReservedError(f"reserved for evaluation, never fetched: crates {', '.join(bad)} "
                            "(a dependency of a listed crate)")


def unpack_inner(pkg, patterns, log=print):
    """Archives shipped inside a package (Debian's *-source packages carry the
    upstream tarball, the JDK its src.zip), unpacked beside themselves as
    `<archive>.d/`, once."""
    for dirpath, dirnames, filenames in os.walk(pkg.root):
        dirnames[:] = sorted(d for d in dirnames if not d.endswith(".d"))
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, pkg.root)
            if not any(fnmatch.fnmatch(rel, p) for p in patterns) or os.path.isdir(full + ".d"):
                continue
            log(f"  unpacking {pkg.name}:{rel}")
            shutil.rmtree(full + ".d.tmp", ignore_errors=True)
            if fn.endswith(".zip"):
                with zipfile.ZipFile(full) as z:
                    z.extractall(full + ".d.tmp")
            else:  # GNU tar: Python's tarfile re-reads a compressed stream for every hard link
                os.makedirs(full + ".d.tmp")
                _run(["tar", "xf", full, "-C", full + ".d.tmp", "--no-same-owner", "--no-same-permissions"])
            os.rename(full + ".d.tmp", full + ".d")


def _version_key(path):
    m = re.search(r"-(\d+)\.(\d+)\.(\d+)", os.path.basename(path))
    return [int(x) for x in m.groups()] if m else [0]
