"""Material reserved for evaluation, never fetched or trained on: the
PostgreSQL documentation; the Go standard library and Go's own documentation
(and copies of them); git's documentation; libcurl's documentation, examples
and sources wherever they are vendored; presage and its data.

Two guards: `refuse` stops a fetch that names a reserved package (before any
client runs), and `EXCLUDE` drops any file of another package whose path says
it is about them."""

import re


class ReservedError(RuntimeError):
    """A fetch asked for a package reserved for evaluation."""


# Package names, per registry. Debian: the PostgreSQL server/docs and libpq
# (its sources' headers), Go's own toolchain, standard library and docs, git
# and its docs, curl/libcurl, presage. golang.org/x/{crypto,net,sys,text,
# tools,mod} are refused too: Go's source tree vendors copies of them.
PACKAGES = {
    "apt": re.compile(
        r"^(postgresql|libpq|pgadmin|pgdocs|golang-(\d|go$|src$|doc$|golang-x-)|golang$|git$|git-|"
        r"curl$|libcurl|.*presage)", re.I),
    "pypi": re.compile(r"^(pycurl|presage|.*-presage)", re.I),
    "npm": re.compile(r"^(node-libcurl|.*presage)", re.I),
    "crates": re.compile(r"^(curl|curl-sys|.*presage.*)$", re.I),
}

# Paths inside other packages that are about the reserved material.
EXCLUDE = re.compile(
    r"postgres|psql|(^|/)pg_|presage|"
    r"(^|/)golang-1\.|(^|/)go-1\.\d+/|(^|/)goroot/|(^|/)golang\.org/x/(crypto|net|sys|text|tools|mod)/|"
    r"golang\.rs$|gofmt|godoc|"
    r"(^|/)git-|(^|/)git[a-z]*\.\d|gittutorial|gitglossary|gitcore|"
    r"libcurl|curl_easy|curl_multi|(^|/)curl[./]|(^|/)curl-sys", re.I)


def reserved(registry, name):
    """Whether `name` (a package of `registry`, possibly with a version) is reserved."""
    base = re.split(r"[=<>]", name)[0]
    if registry == "npm" and "@" in base[1:]:
        base = base.rsplit("@", 1)[0]
    return bool(PACKAGES[registry].search(base))


def refuse(registry, names):
    """Raises ReservedError if any of `names` is reserved for evaluation."""
    bad = [n for n in names if reserved(registry, n)]
    if bad:
        raise ReservedError(f"reserved for evaluation, never fetched: {registry} {', '.join(bad)}")
