#!/usr/bin/env python3
"""Checks kvq's layering: a folder under include/kvq/ includes only itself and the
folders below it in LAYERS (docs/design.md, "Layers"); umbrella headers
include/kvq/<layer>.hpp only include headers (no code). Exit 0 if clean, 1 with one line
per violation otherwise. Run with any Python 3 (no third-party modules)."""
import pathlib
import re
import sys

# Lowest first. config.hpp is the root every layer may include.
LAYERS = ["core", "format", "mma", "block", "kv", "inject", "attention", "compact",
          "metrics", "verify", "device", "study"]
ROOT = pathlib.Path(__file__).resolve().parent.parent / "include" / "kvq"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]kvq/([^>"]+)[>"]', re.M)


def layer_of_include(target: str):
    """Layer of an included path such as 'core/math.hpp' or 'block.hpp' (umbrella)."""
    head = target.split("/", 1)[0]
    if head.endswith(".hpp"):
        head = head[:-4]
    return head


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
    for e in errors:
        print(e)
    if errors:
        print(f"check_layers: {len(errors)} violation(s)")
        return 1
    print("check_layers: every include goes to the same or a lower layer")
    return 0


if __name__ == "__main__":
    sys.exit(main())
