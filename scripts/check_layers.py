#!/usr/bin/env python3
"""Checks kvq's layering: a folder under include/kvq/ includes only itself and the
folders below it in LAYERS (docs/design.md, "Layers"); umbrella headers
include/kvq/<layer>.hpp only include headers (no code). Above the library, every other
source folder is checked too (OUTER): the studies (studies/) include the library and
themselves; the programs (tools/, python/src/, examples/, bench/) and the tests include the
library, the studies' header and their own folder, never one another. No library header
includes anything outside include/kvq. Exit 0 if clean, 1 with one line per violation
otherwise. Run with any Python 3 (no third-party modules)."""
import pathlib
import re
import sys

# Lowest first. config.hpp is the root every layer may include.
LAYERS = ["core", "format", "mma", "block", "kv", "cost", "inject", "attention", "compact",
          "metrics", "verify", "device", "study"]
REPO = pathlib.Path(__file__).resolve().parent.parent
ROOT = REPO / "include" / "kvq"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]kvq/([^>"]+)[>"]', re.M)
QUOTED = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
# Source folders above the library, each with the folders it may include (besides the
# library and itself). A folder not listed here that holds C++ sources is an error.
OUTER = {
    "studies": [],
    "tools": ["studies"],
    "python/src": ["studies"],
    "examples": ["studies"],
    "bench": [],
    "tests": ["studies", "tools"],  # tests of the programs include their headers
    "docs/guide/snippets": [],
}
SOURCES = (".hpp", ".cpp", ".cuh", ".cu", ".h")


def layer_of_include(target: str):
    """Layer of an included path such as 'core/math.hpp' or 'block.hpp' (umbrella)."""
    head = target.split("/", 1)[0]
    if head.endswith(".hpp"):
        head = head[:-4]
    return head


def folder_of(path: pathlib.Path):
    """The OUTER folder (or 'include') holding path, or None."""
    rel = path.resolve().relative_to(REPO).as_posix()
    if rel.startswith("include/"):
        return "include"
    for f in sorted(OUTER, key=len, reverse=True):
        if rel.startswith(f + "/"):
            return f
    return None


def resolve_quoted(src: pathlib.Path, target: str):
    """The file a quoted include names: next to the including file, in one of its parent
    folders up to its OUTER folder, or at the top of an OUTER folder (a target's include
    directory); None when nothing matches (a third-party header)."""
    d = src.parent
    while True:
        cand = d / target
        if cand.is_file():
            return cand
        if d == REPO or folder_of(d / "x") != folder_of(src):
            break
        d = d.parent
    for f in OUTER:
        cand = REPO / f / target
        if cand.is_file():
            return cand
    for f in OUTER:  # a program's own include directory below its folder (tools/kvq/...)
        for cand in (REPO / f).rglob(pathlib.PurePath(target).name):
            if cand.is_file() and cand.as_posix().endswith("/" + target):
                return cand
    return None


def check_outer():
    """Include rules of the folders above the library, and the library's own quoted includes."""
    errors = []
    for path in sorted(REPO.rglob("*")):
        if path.suffix not in SOURCES or not path.is_file():
            continue
        rel = path.relative_to(REPO).as_posix()
        if rel.startswith(("build/", ".git/")) or "/build/" in rel:
            continue
        own = folder_of(path)
        if own is None:
            errors.append(f"{rel}: C++ source outside the folders scripts/check_layers.py knows")
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        for m in QUOTED.finditer(text):
            target = m.group(1)
            if target.startswith("kvq/") and (ROOT.parent / target).is_file():
                continue  # a library header, spelled with quotes
            found = resolve_quoted(path, target)
            if found is None:
                continue
            dep = folder_of(found)
            if dep == own:
                continue
            if own == "include":
                errors.append(f"{rel}: the library includes \"{target}\" from {dep}/")
            elif dep == "include":
                continue
            elif dep not in OUTER.get(own, []):
                errors.append(f"{rel}: {own}/ includes \"{target}\" from {dep}/ (allowed: the library, "
                              f"{', '.join(OUTER[own] + [own]) }/)")
    return errors


def main() -> int:
    errors = []
    for path in sorted(ROOT.rglob("*")):
        if path.suffix not in (".hpp", ".cuh", ".h") or not path.is_file():
            continue
        rel = path.relative_to(ROOT)
        if len(rel.parts) == 1:
            own = rel.stem  # umbrella header or config.hpp / kvq.hpp
        else:
            own = rel.parts[0]
        text = path.read_text(encoding="utf-8")
        if own not in LAYERS and own not in ("config", "kvq"):
            errors.append(f"{rel}: folder '{own}' is not in the layer list of scripts/check_layers.py")
            continue
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            dep = layer_of_include(target)
            if dep == "config" or own == "kvq":
                continue
            if dep not in LAYERS:
                errors.append(f"{rel}: includes kvq/{target}, which belongs to no layer")
            elif own == "config":
                errors.append(f"{rel}: config.hpp must include no other kvq header (kvq/{target})")
            elif LAYERS.index(dep) > LAYERS.index(own):
                errors.append(f"{rel}: layer '{own}' includes kvq/{target} from the higher layer '{dep}'")
        if len(rel.parts) == 1 and own in LAYERS:
            code = [ln for ln in text.splitlines()
                    if ln.strip() and not ln.strip().startswith(("//", "#"))]
            if code:
                errors.append(f"{rel}: an umbrella header must only include (found: {code[0].strip()!r})")
    errors += check_outer()
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} violation(s)")
        return 1
    print("check_layers: every include goes to the same or a lower layer, in include/kvq and in " +
          ", ".join(f + "/" for f in OUTER))
    return 0


if __name__ == "__main__":
    sys.exit(main())
