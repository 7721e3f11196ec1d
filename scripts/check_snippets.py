#!/usr/bin/env python3
"""The code in the documentation is code that CI runs, and its links lead somewhere.

  check_snippets.py check [ROOT]
      Every fenced block of README.md, CHANGELOG.md, docs/*.md, docs/guide/*.md and
      docs/results/*.md is accounted for:
        <!-- snippet: PATH -->      the next fenced block equals the file PATH (repository
                                    relative) byte for byte; C++ snippets under
                                    docs/guide/snippets/ are built and run as ctest tests.
        <!-- output: PATH -->       the next fenced block equals PATH (a snippet's stated
                                    output, which its test compares with what it prints).
        <!-- run: cli -->           the next fenced block holds `kvq ...` commands that the
                                    test docs_cli_commands runs with the built command.
        <!-- not run: REASON -->    the next block is not run, for the stated reason.
      ```python blocks of docs/guide/ need no marker: python/tests/test_docs_snippets.py
      runs them; elsewhere nothing runs them, so they need a `not run` marker.
      Any other unmarked ```cpp, ```cmake, ```sh or ```console block is an error, and so is
      a snippet file under docs/guide/snippets/ that no page includes.
      Also: README.md has at most 300 lines, and every relative link of those pages
      (and of any other docs/**/*.md) leads to a file or folder of the repository and, for
      a link to a Markdown page with #anchor, to a heading of that page (GitHub's anchors:
      lower case, punctuation dropped, spaces to hyphens, -1, -2 for repeats).

  check_snippets.py run-cli KVQ WORKDIR [ROOT]
      Runs every command of the `run: cli` blocks (`kvq` replaced by the KVQ executable)
      in WORKDIR with bash; each must exit 0.

Exit status: 0 when all is well, 1 with one line per problem otherwise.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

MARKER = re.compile(r"^<!--\s*(snippet|output|run|not run):\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(```+|~~~+)\s*([A-Za-z0-9_+-]*)\s*$")
NEEDS_MARKER = {"cpp", "c++", "cmake", "sh", "bash", "console", "shell"}


def blocks(path):
    """Yields (line number, marker kind or None, marker argument, language, body)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    pending = None
    while i < len(lines):
        m = MARKER.match(lines[i])
        if m:
            pending = (m.group(1), m.group(2), i + 1)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            fence, lang = f.group(1), f.group(2).lower()
            start = i + 1
            j = start
            while j < len(lines) and lines[j].rstrip() != fence:
                j += 1
            if j == len(lines):
                raise SystemExit(f"{path}:{i + 1}: unterminated code fence")
            body = "\n".join(lines[start:j]) + "\n" if j > start else ""
            kind, arg = (pending[0], pending[1]) if pending and pending[2] == i else (None, "")
            yield i + 1, kind, arg, lang, body
            pending = None
            i = j + 1
            continue
        if lines[i].strip():
            pending = None  # a marker applies to the block right below it only
        i += 1


README_MAX_LINES = 300


def pages(root):
    """The user guide's pages (their ```python blocks run in python/tests/test_docs_snippets.py)."""
    guide = os.path.join(root, "docs", "guide")
    out = [os.path.join(guide, n) for n in sorted(os.listdir(guide)) if n.endswith(".md")]
    return out


def documented_pages(root):
    """Every page whose blocks are checked and whose `run: cli` commands run: the README, the
    changelog, docs/*.md, the user guide and docs/results/*.md."""
    out = [os.path.join(root, "README.md"), os.path.join(root, "CHANGELOG.md")]
    for sub in (("docs",), ("docs", "guide"), ("docs", "results")):
        d = os.path.join(root, *sub)
        out += [os.path.join(d, n) for n in sorted(os.listdir(d)) if n.endswith(".md")]
    return [p for p in out if os.path.isfile(p)]


def linked_pages(root):
    """Every page whose relative links are checked: the documented pages and any other
    Markdown file under docs/."""
    out = documented_pages(root)
    for d, dirs, files in os.walk(os.path.join(root, "docs")):
        dirs.sort()
        out += [os.path.join(d, n) for n in sorted(files) if n.endswith(".md")]
    seen = set()
    return [p for p in out if not (p in seen or seen.add(p))]


LINK = re.compile(r"(?<!\\)!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`+[^`]*`+")


def prose_lines(path):
    """Yields (line number, text) of every line, with fenced blocks blanked and inline code
    removed. HTML comments stay: a marker holds no Markdown link."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fence = None
    for i, line in enumerate(lines):
        if fence is None:
            f = FENCE.match(line)
            if f:
                fence = f.group(1)
                yield i + 1, ""
                continue
            yield i + 1, INLINE_CODE.sub("", line)
        else:
            if line.rstrip() == fence:
                fence = None
            yield i + 1, ""


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation other than - and _ dropped,
    spaces to hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading: its text
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def anchors(path):
    """The anchors of a page's headings (a repeated heading gets -1, -2, ...)."""
    with open(path, encoding="utf-8") as f:
        raw = f.read().split("\n")
    out, count = set(), {}
    for line, text in prose_lines(path):
        if not HEADING.match(text):
            continue
        base = slug(HEADING.match(raw[line - 1]).group(1))  # the heading as written, code included
        n = count.get(base, 0)
        out.add(base if n == 0 else f"{base}-{n}")
        count[base] = n + 1
    return out


def check_links(root):
    problems = []
    cache = {}
    for page in linked_pages(root):
        rel = os.path.relpath(page, root)
        text = "\n".join(t for _line, t in prose_lines(page))  # a link's text may span lines
        for m in LINK.finditer(text):
            line = text.count("\n", 0, m.end()) + 1
            target = m.group(1)
            if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
                continue  # http:, https:, mailto: ...
            path, _, anchor = target.partition("#")
            where = f"{rel}:{line}"
            dest = page if not path else os.path.normpath(os.path.join(os.path.dirname(page), path))
            if path and not os.path.relpath(dest, root).startswith(".."):
                if not os.path.exists(dest):
                    problems.append(f"{where}: link to {target}: no such file")
                    continue
            elif path:
                problems.append(f"{where}: link to {target} leaves the repository")
                continue
            if anchor and dest.endswith(".md") and os.path.isfile(dest):
                if dest not in cache:
                    cache[dest] = anchors(dest)
                if anchor not in cache[dest]:
                    problems.append(f"{where}: link to {target}: no heading with that anchor")
    return problems


def check(root):
    problems = []
    used = set()
    guide = set(pages(root))
    for page in documented_pages(root):
        rel = os.path.relpath(page, root)
        for line, kind, arg, lang, body in blocks(page):
            where = f"{rel}:{line}"
            if kind in ("snippet", "output"):
                target = os.path.join(root, arg)
                if not os.path.isfile(target):
                    problems.append(f"{where}: {kind} file {arg} does not exist")
                    continue
                with open(target, encoding="utf-8") as f:
                    text = f.read()
                if text != body:
                    problems.append(f"{where}: the block differs from {arg} (copy the file into the page verbatim)")
                used.add(os.path.normpath(arg))
            elif kind == "run":
                if arg != "cli":
                    problems.append(f"{where}: unknown runner '{arg}' (only 'cli')")
                elif not any(cli_commands(body)):
                    problems.append(f"{where}: a 'run: cli' block without a kvq command")
            elif kind == "not run":
                if not arg:
                    problems.append(f"{where}: 'not run' needs a reason")
            elif lang in NEEDS_MARKER or (lang == "python" and page not in guide):
                problems.append(f"{where}: ```{lang} block without a snippet/run/not run marker")
    snippets = os.path.join(root, "docs", "guide", "snippets")
    for n in sorted(os.listdir(snippets)):
        if n.endswith(".cpp"):
            rel = os.path.normpath(os.path.join("docs", "guide", "snippets", n))
            if rel not in used:
                problems.append(f"{rel}: no guide page includes this snippet")
    with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
        n = len(f.read().splitlines())
    if n > README_MAX_LINES:
        problems.append(f"README.md: {n} lines, more than {README_MAX_LINES} (move detail into docs/ and link it)")
    problems += check_links(root)
    return problems


def cli_commands(body):
    for raw in body.split("\n"):
        line = raw.strip()
        if line.startswith("$ "):
            line = line[2:]
        if line.startswith("kvq "):
            yield line


def run_cli(kvq, workdir, root):
    problems = []
    shutil.rmtree(workdir, ignore_errors=True)  # every run starts from an empty directory
    os.makedirs(workdir)
    count = 0
    for page in documented_pages(root):
        rel = os.path.relpath(page, root)
        for line, kind, arg, _lang, body in blocks(page):
            if kind != "run" or arg != "cli":
                continue
            for cmd in cli_commands(body):
                full = shlex.quote(kvq) + cmd[len("kvq"):]
                p = subprocess.run(["bash", "-c", full], cwd=workdir, capture_output=True, text=True)
                count += 1
                if p.returncode != 0:
                    problems.append(f"{rel}:{line}: `{cmd}` exited {p.returncode}: {p.stderr.strip()[:400]}")
    if count == 0:
        problems.append("no `run: cli` commands found")
    print(f"{count} documented kvq commands run")
    return problems


def main(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(argv) >= 2 and argv[1] == "check":
        problems = check(argv[2] if len(argv) > 2 else here)
    elif len(argv) >= 4 and argv[1] == "run-cli":
        problems = run_cli(os.path.abspath(argv[2]), argv[3], argv[4] if len(argv) > 4 else here)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
