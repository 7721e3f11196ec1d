"""Every ```python block of the user guide (docs/guide/*.md) runs, as written, against the
installed kvq module. A block preceded by `<!-- not run: REASON -->` is skipped (and
listed as skipped with its reason). The Markdown parser is scripts/check_snippets.py's,
so this test and the C++/CLI checks see the same blocks."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_spec = importlib.util.spec_from_file_location("check_snippets", os.path.join(ROOT, "scripts", "check_snippets.py"))
check_snippets = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_snippets)


def python_blocks():
    out = []
    for page in check_snippets.pages(ROOT):
        rel = os.path.relpath(page, ROOT)
        for line, kind, arg, lang, body in check_snippets.blocks(page):
            if lang == "python":
                out.append(pytest.param(body, kind, arg, id=f"{rel}:{line}"))
    return out


BLOCKS = python_blocks()


def test_the_guide_has_python_blocks():
    assert BLOCKS, "no ```python block found in docs/guide"


@pytest.mark.parametrize("body,kind,arg", BLOCKS)
def test_guide_python_block(body, kind, arg, tmp_path, monkeypatch):
    if kind == "not run":
        pytest.skip(arg)
    monkeypatch.chdir(tmp_path)  # blocks that write files write them here
    exec(compile(body, "<guide>", "exec"), {"__name__": "__guide__"})
