#!/usr/bin/env python3
"""The code in the user guide is code that CI runs.

  check_snippets.py check [ROOT]
      Every fenced block of docs/guide/*.md (and of README.md's marked blocks) is
      accounted for:
        <!-- snippet: PATH -->      the next fenced block equals the file PATH (repository
                                    relative) byte for byte; C++ snippets under
                                    docs/guide/snippets/ are built and run as ctest tests.
        <!-- output: PATH -->       the next fenced block equals PATH (a snippet's stated
                                    output, which its test compares with what it prints).
        <!-- run: cli -->           the next fenced block holds `kvq ...` commands that the
                                    test docs_cli_commands runs with the built command.
        <!-- not run: REASON -->    the next block is not run, for the stated reason.
      ```python blocks need no marker: python/tests/test_docs_snippets.py runs them.
      Any other unmarked ```cpp, ```cmake, ```sh or ```console block is an error, and so is
      a snippet file under docs/guide/snippets/ that no page includes.

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


def pages(root):
    guide = os.path.join(root, "docs", "guide")
    out = [os.path.join(guide, n) for n in sorted(os.listdir(guide)) if n.endswith(".md")]
    return out


def check(root):
    problems = []
    used = set()
    for page in pages(root) + [os.path.join(root, "README.md")]:
        rel = os.path.relpath(page, root)
        in_guide = rel.startswith("docs")
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
            elif in_guide and lang in NEEDS_MARKER:
                problems.append(f"{where}: ```{lang} block without a snippet/run/not run marker")
    snippets = os.path.join(root, "docs", "guide", "snippets")
    for n in sorted(os.listdir(snippets)):
        if n.endswith(".cpp"):
            rel = os.path.normpath(os.path.join("docs", "guide", "snippets", n))
            if rel not in used:
                problems.append(f"{rel}: no guide page includes this snippet")
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
    for page in pages(root) + [os.path.join(root, "README.md")]:
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
