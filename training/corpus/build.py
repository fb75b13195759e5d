"""Builds the corpus: fetch every source, clean each file into a document,
drop excluded, non-English and duplicate documents, apply the licence gate and
the caps, split train/valid/test by document hash, and write the documents
(JSON lines) and a manifest under training/work/corpus/."""

import fnmatch
import hashlib
import json
import os
import re
import time
from multiprocessing import Pool

from . import clean, langs
from .fetch import WORK
from .langs import lang_of
from .reserved import EXCLUDE as EVAL_EXCLUDE
from .sources import SMALL, SOURCES

OUT = os.path.join(WORK, "corpus")

PERMISSIVE = re.compile(r"mit|bsd|apache|isc|zlib|mpl|psf|python|unlicense|cc0|blueoak|0bsd|wtfpl|"
                        r"public domain|artistic|hpnd|x11|boost|bsl", re.I)

RAW_CAP = {"code": 400_000, "prose": 2_000_000}  # bytes of a single raw file
TEST_PER_MILLE, VALID_PER_MILLE = 10, 10


def split_key(src, path):
    """What a document's split is decided by: its source and path, so that a
    document stays in its split whatever the caps or deduplication did to its
    text. Vim and Neovim help files of the same name (largely the same text)
    share one key, so one cannot be trained on while the other is tested."""
    if src.endswith("-help"):
        return "help:" + os.path.basename(path)
    return f"{src}:{path}"


def split_of(key):
    bucket = int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:8], 16) % 1000
    return "test" if bucket < TEST_PER_MILLE else "valid" if bucket < TEST_PER_MILLE + VALID_PER_MILLE else "train"


def _files(pkg, src):
    """Files of a package that the source reads, in a stable pseudo-random order
    (so a cap takes a spread of the package, not its alphabetical start)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(pkg.root):
        dirnames.sort()
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, pkg.root)
            if os.path.islink(full) or not any(fnmatch.fnmatch(rel, p) for p in src.include):
                continue
            if any(fnmatch.fnmatch(rel, p) for p in src.exclude):
                continue
            if EVAL_EXCLUDE.search(rel) or clean.non_english_path(rel):
                continue
            if os.path.getsize(full) > RAW_CAP[src.kind] or os.path.getsize(full) < 100:
                continue
            out.append(rel)
    return sorted(out, key=lambda r: hashlib.sha1(r.encode()).hexdigest())


CLEAN_CACHE = os.path.join(WORK, "cache", "clean")


def _cleaner_code():
    """A hash of the cleaning code: a cached document is reused only if it
    was made by the same cleaners."""
    h = hashlib.sha1()
    for mod in (clean, langs):
        with open(mod.__file__, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


CLEANER_CODE = _cleaner_code()


def _clean_file(job):
    """(cleaner, kind, full path, path in the package) -> (cleaned text, language);
    ('', None) if dropped. Runs in a worker. The result is cached under the
    file's identity (path, size, mtime) and the cleaning code's hash, so a
    rebuild cleans only what changed (groff alone takes minutes)."""
    cleaner, kind, full, rel, cache, default_lang = job
    if cache is None:
        return _clean_uncached(cleaner, kind, full, rel, default_lang)
    st = os.stat(full)
    ident = f"{CLEANER_CODE}|{cleaner}|{kind}|{full}|{rel}|{st.st_size}|{st.st_mtime_ns}"
    key = hashlib.sha1((ident + (f"|{default_lang}" if default_lang else "")).encode()).hexdigest()
    cached = os.path.join(cache, key[:2], key + ".json")
    try:
        with open(cached, encoding="utf-8") as f:
            text, lang = json.load(f)
        return text, lang
    except (OSError, ValueError):
        pass
    text, lang = _clean_uncached(cleaner, kind, full, rel, default_lang)
    os.makedirs(os.path.dirname(cached), exist_ok=True)
    with open(cached + ".tmp", "w", encoding="utf-8") as f:
        json.dump([text, lang], f, ensure_ascii=False)
    os.replace(cached + ".tmp", cached)
    return text, lang


def _clean_uncached(cleaner, kind, full, rel, default_lang=None):
    lang = "en"
    try:
        if cleaner == "man":
            text = clean.man(full)
        else:
            raw = clean.read_text(full)
            if cleaner == "code":
                lang = lang_of(rel, raw) or default_lang
                if lang is None or "\x00" in raw[:4096]:
                    return "", None  # not a language the corpus takes, or binary
                text = clean.code(raw, lang, rel)
            else:
                text = getattr(clean, "html_text" if cleaner == "html" else cleaner)(raw)
        text = clean.normalise(text)
    except Exception:  # a file a cleaner cannot read is dropped, not fatal
        return "", None
    if len(text) < clean.MIN_CHARS or not clean.english_enough(text, kind):
        return "", None
    return text, lang


def _licence_ok(src, pkg):
    if pkg.registry == "apt":
        return True  # Debian main: free; the source names the licence
    return bool(PERMISSIVE.search(pkg.licence or ""))


def _para_key(p):
    return hashlib.sha1(re.sub(r"\s+", " ", p).strip().encode()).digest()


MANIFEST = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "corpus-manifest.json")


def pins_from(manifest_path):
    """Exact versions from a committed manifest: {registry: {name: version}}."""
    if not manifest_path or not os.path.exists(manifest_path):
        return {}
    with open(manifest_path) as f:
        pkgs = json.load(f)["packages"]
    pins = {}
    for p in pkgs:
        pins.setdefault(p["registry"], {})[p["name"] if p["registry"] != "npm" else p.get("spec", p["name"])] = p["version"]
    return pins


def build(profile="full", log=print, workers=2, pins_path=MANIFEST, sources=None, out=OUT, clean_cache=CLEAN_CACHE):
    """`pins_path`: a manifest whose exact versions are fetched (None: newest);
    `sources`: instead of SOURCES; `out`: instead of training/work/corpus;
    `clean_cache`: where cleaned files are kept between builds (None: nowhere)."""
    t0 = time.time()
    pins = pins_from(pins_path)
    os.makedirs(out, exist_ok=True)
    seen_docs, seen_paras = set(), set()
    outs = {s: open(os.path.join(out, f"{s}.jsonl.tmp"), "w", encoding="utf-8") for s in ("train", "valid", "test")}
    manifest = {"profile": profile, "sources": [], "packages": [], "langs": {}}
    if sources is None:
        sources = [s for s in SOURCES if profile == "full" or s.name in SMALL]
    with Pool(workers) as pool:
        for src in sources:
            cap = SMALL[src.name] if profile == "small" else src.cap_mb
            stats = {"name": src.name, "kind": src.kind, "bytes": 0, "docs": 0, "dropped_dup": 0,
                     "dropped_licence": 0, "split_bytes": {"train": 0, "valid": 0, "test": 0}}
            pkgs = src.fetch(log=log, pins=pins)
            for pkg in pkgs:
                if not _licence_ok(src, pkg):
                    stats["dropped_licence"] += 1
                    log(f"  licence gate: dropped {pkg.registry}:{pkg.name} ({pkg.licence!r})")
                    continue
                if stats["bytes"] >= cap * 1e6:
                    break
                files = _files(pkg, src)
                pkg_bytes, pkg_docs = 0, 0
                jobs = [(src.clean, src.kind, os.path.join(pkg.root, r), r, clean_cache, src.lang) for r in files]
                for rel, (text, lang) in zip(files, pool.imap(_clean_file, jobs, chunksize=8)):
                    if not text or pkg_bytes >= src.cap_pkg_mb * 1e6 or stats["bytes"] >= cap * 1e6:
                        continue
                    key = hashlib.sha1(re.sub(r"\s+", " ", text).encode()).digest()
                    if key in seen_docs:
                        stats["dropped_dup"] += 1
                        continue
                    seen_docs.add(key)
                    if src.kind == "prose":
                        text = _dedup_paragraphs(text, seen_paras)
                        if len(text) < clean.MIN_CHARS:
                            stats["dropped_dup"] += 1
                            continue
                    split = split_of(split_key(src.name, rel))
                    rec = {"src": src.name, "kind": src.kind, "lang": lang,
                           "pkg": pkg.name, "path": rel, "lic": pkg.licence or src.licence, "text": text}
                    outs[split].write(json.dumps(rec, ensure_ascii=False) + "\n")
                    n = len(text.encode("utf-8"))
                    pkg_bytes += n
                    pkg_docs += 1
                    stats["bytes"] += n
                    stats["docs"] += 1
                    stats["split_bytes"][split] += n
                    by_lang = manifest["langs"].setdefault(f"{src.kind}:{lang}", {
                        "bytes": 0, "docs": 0, "split_bytes": {"train": 0, "valid": 0, "test": 0}})
                    by_lang["bytes"] += n
                    by_lang["docs"] += 1
                    by_lang["split_bytes"][split] += n
                manifest["packages"].append({"source": src.name, "registry": pkg.registry, "name": pkg.name,
                                             "version": pkg.version, "file": pkg.file,
                                             "licence": pkg.licence or src.licence, "bytes": pkg_bytes,
                                             "docs": pkg_docs})
            log(f"{src.name:18s} {src.kind:5s} {stats['bytes'] / 1e6:7.2f} MB {stats['docs']:6d} docs "
                f"({time.time() - t0:.0f}s)")
            manifest["sources"].append(stats)
    for s, f in outs.items():
        f.close()
        os.replace(os.path.join(out, f"{s}.jsonl.tmp"), os.path.join(out, f"{s}.jsonl"))
    manifest["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    manifest["langs"] = dict(sorted(manifest["langs"].items(), key=lambda kv: -kv[1]["bytes"]))
    for key, st in manifest["langs"].items():
        log(f"  {key:18s} {st['bytes'] / 1e6:7.2f} MB {st['docs']:6d} docs")
    tot = {k: sum(s["bytes"] for s in manifest["sources"] if s["kind"] == k) for k in ("prose", "code")}
    log(f"corpus: prose {tot['prose'] / 1e6:.1f} MB, code {tot['code'] / 1e6:.1f} MB in {manifest['seconds']}s -> {out}")
    return manifest


def fetch_all(profile="full", log=print, pins_path=MANIFEST):
    """Fetches (and unpacks) every source's packages into the cache, cleaning
    nothing: the slow, network-bound half of a cold build, run ahead of it."""
    pins = pins_from(pins_path)
    for src in SOURCES:
        if profile == "full" or src.name in SMALL:
            try:
                pkgs = src.fetch(log=log, pins=pins)
            except RuntimeError as e:  # one source failing leaves the others fetched
                log(f"{src.name}: {e}")
                continue
            log(f"{src.name:18s} {len(pkgs)} of {len(src.packages)} packages")


def _dedup_paragraphs(text, seen):
    """Drop paragraphs (of 60+ characters) already seen anywhere earlier."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        if len(para) >= 60:
            k = _para_key(para)
            if k in seen:
                continue
            seen.add(k)
        out.append(para)
    return clean.normalise("\n\n".join(out)) if out else ""


def read_docs(split, kind=None):
    """Documents of one split, in file order."""
    with open(os.path.join(OUT, f"{split}.jsonl"), encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if kind is None or rec["kind"] == kind:
                yield rec
