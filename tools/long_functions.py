#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (default 60 lines).

Usage: tools/long_functions.py [--max N] [paths...]   (default: cc/ python/bindings.cc)

A brace counter, not a parser: comments, string and character literals are
blanked out, then a `{` opened outside any function whose head (the text since
the previous `;`, `{` or `}`) has a `)` and is not a namespace/class/struct/
enum opens a function body. Lambdas count toward the function they are in.
The length is the number of lines from the body's `{` to its `}`. Exits 1 when
any function is longer than the limit.
"""
import argparse
import pathlib
import re
import sys

_SCOPE = re.compile(r"\b(namespace|class|struct|union|enum)\b|extern\s*\"C\"")


def _blank(text):
    """Replaces comments and literals by spaces, keeping newlines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _drop_directives(text):
    """Blanks preprocessor lines (with their continuations), keeping newlines."""
    return re.sub(r"(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def functions(path):
    """Yields (name, first_line, length) for each function body in `path`."""
    text = _drop_directives(_blank(path.read_text()))
    stack = []  # (kind, line, head)
    head_start = 0
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[head_start:i]
            if any(kind == "function" for kind, _, _ in stack):
                kind = "block"
            elif _SCOPE.search(head) and "(" not in head:
                kind = "scope"
            elif ")" in head:
                kind = "function"
            else:
                kind = "other"
            stack.append((kind, line, head))
            head_start = i + 1
        elif c == "}":
            if stack:
                kind, start, head = stack.pop()
                if kind == "function":
                    name = re.sub(r"\s+", " ", head.strip().split("(")[0]).split(" ")[-1]
                    yield name, start, line - start + 1
            head_start = i + 1
        elif c == ";":
            head_start = i + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=60)
    parser.add_argument("paths", nargs="*", default=["cc", "python/bindings.cc"])
    args = parser.parse_args()
    files = []
    for p in map(pathlib.Path, args.paths):
        files += sorted(p.rglob("*.cc")) + sorted(p.rglob("*.h")) if p.is_dir() else [p]
    long = [(f, *fn) for f in files for fn in functions(f) if fn[2] > args.max]
    for f, name, start, length in sorted(long, key=lambda r: -r[3]):
        print(f"{f}:{start}: {name} is {length} lines")
    return 1 if long else 0


if __name__ == "__main__":
    sys.exit(main())
