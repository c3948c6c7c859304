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


def test_the_client_readme_example_runs(server, tmp_path, monkeypatch):
    # client/README.md's first block, as a user pastes it, against a real
    # server: its address in place of the example's 127.0.0.1:50051. (It
    # once stepped circle_pendulum.json with an input Fx it does not have.)
    path = os.path.join(REPOSITORY, "client", "README.md")
    block = python_blocks(path)[0]
    assert '"127.0.0.1:50051"' in block
    block = block.replace('"127.0.0.1:50051"', repr(server.address))
    os.symlink(os.path.join(REPOSITORY, "examples"), tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    exec(compile(block, "client/README.md", "exec"), {})
    assert (tmp_path / "run.png").stat().st_size > 1000
    assert (tmp_path / "run.csv").stat().st_size > 100
