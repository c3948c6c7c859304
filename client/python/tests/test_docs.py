"""docs/PYTHON.md's Python code blocks, run in order in one namespace
against a real server, from a scratch directory that sees the repository's
examples/."""

import os
import re

from conftest import REPOSITORY


def python_blocks(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_the_tutorial_runs(server_binary, tmp_path, monkeypatch, capsys):
    blocks = python_blocks(os.path.join(REPOSITORY, "docs", "PYTHON.md"))
    assert len(blocks) >= 6
    os.symlink(os.path.join(REPOSITORY, "examples"), tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TETHER_SERVER", server_binary)
    namespace = {}
    for block in blocks:
        exec(compile(block, "docs/PYTHON.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "largest rod force" in out and "bounded by" in out
    for name in ("slider_crank.png", "slider_crank.gif", "slider_crank.csv"):
        assert (tmp_path / name).stat().st_size > 1000, name
