"""Which language a source file is written in, from its name and, for files
without a telling extension (scripts in bin/, C/C++ headers), its first line
or its contents. None: not a language the corpus takes."""

import os
import re

EXTENSIONS = {
    ".py": "python", ".pyi": "python", ".rs": "rust", ".lua": "lua", ".vim": "vim",
    ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".c": "c", ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".ipp": "cpp", ".java": "java", ".go": "go", ".sh": "shell", ".bash": "shell", ".zsh": "shell",
    ".rb": "ruby", ".rake": "ruby", ".cs": "csharp", ".kt": "kotlin", ".kts": "kotlin", ".sql": "sql",
    ".mk": "make", ".cmake": "cmake", ".yml": "yaml", ".yaml": "yaml", ".toml": "toml",
}
NAMES = {"Makefile": "make", "GNUmakefile": "make", "makefile": "make", "CMakeLists.txt": "cmake",
         "Rakefile": "ruby", "Gemfile": "ruby", "Cargo.toml.orig": "toml"}
_SHEBANG = re.compile(r"#!\s*(?:/usr)?(?:/local)?/bin/(?:env\s+)?(sh|bash|dash|ksh|zsh|python3?|ruby|lua)\b")
_CPP_HEADER = re.compile(r"^\s*(namespace\s+\w+|template\s*<|class\s+\w+[^;]*\{|#include\s*<[a-z_]+>\s*$)", re.M)


def lang_of(path, text=None):
    base = os.path.basename(path)
    lang = NAMES.get(base) or EXTENSIONS.get(os.path.splitext(base)[1].lower())
    if lang == "c" or (lang is None and base.endswith(".h")):
        # a header is C++ when it reads like C++ (classes, templates, namespaces)
        return "cpp" if text is not None and base.endswith(".h") and _CPP_HEADER.search(text[:20000]) else "c"
    if lang is None and text is not None and "." not in base:
        m = _SHEBANG.match(text)
        if m:
            return {"sh": "shell", "bash": "shell", "dash": "shell", "ksh": "shell", "zsh": "shell",
                    "python": "python", "python3": "python"}.get(m.group(1), m.group(1))
    return lang
