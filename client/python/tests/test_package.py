"""The package as a package: its generated modules match proto/, it
installs with pip without writing into the checkout, it imports from
anywhere without changing sys.path, and mypy finds nothing."""

import filecmp
import os
import subprocess
import sys
import venv

import pytest

from conftest import PACKAGE_ROOT, REPOSITORY


def differences(left, right):
    compared = filecmp.dircmp(left, right, ignore=["__pycache__"])
    found = [os.path.join(left, name) for name in
             compared.left_only + compared.right_only + compared.diff_files +
             compared.funny_files]
    for name, sub in compared.subdirs.items():
        found += differences(os.path.join(left, name), os.path.join(right, name))
    return found


def test_generated_modules_match_the_protos(tmp_path):
    out = tmp_path / "_proto"
    subprocess.run(["bash", os.path.join(PACKAGE_ROOT, "generate.sh"), "--into", str(out)],
                   check=True)
    committed = os.path.join(PACKAGE_ROOT, "src", "tether_client", "_proto")
    # Compare contents, not timestamps.
    filecmp.clear_cache()
    assert differences(committed, str(out)) == [], (
        "client/python/src/tether_client/_proto differs from proto/: run "
        "client/python/generate.sh and commit the result")


def test_import_leaves_sys_path_alone():
    code = ("import sys; before = list(sys.path); import tether_client, "
            "tether_client.plotting; assert sys.path == before, "
            "(before, sys.path); assert 'tether' not in sys.modules; "
            "print(tether_client.__file__)")
    env = dict(os.environ, PYTHONPATH=os.path.join(PACKAGE_ROOT, "src"))
    result = subprocess.run([sys.executable, "-c", code], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def git_status():
    # The package's own tree, less __pycache__: the other tests, run beside
    # this one by ctest -j, import the package and the examples from the
    # checkout, which writes bytecode there (seen as a flaky failure).
    lines = subprocess.run(["git", "-C", REPOSITORY, "status", "--porcelain", "--ignored",
                            "--", PACKAGE_ROOT],
                           capture_output=True, text=True, check=True).stdout.splitlines()
    return [line for line in lines if "__pycache__" not in line]


def test_pip_installs_it_without_touching_the_checkout(tmp_path):
    if not os.path.exists(os.path.join(REPOSITORY, ".git")):
        pytest.skip("not a git checkout")
    before = git_status()
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=True).create(env_dir)
    python = str(env_dir / "bin" / "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                    "--no-index", PACKAGE_ROOT], check=True, cwd=tmp_path)
    assert git_status() == before
    # Imported from the venv, from a directory outside the checkout.
    result = subprocess.run(
        [python, "-c", "import tether_client as t; print(t.__file__); "
         "print(t.pb.SimulationSpec.DESCRIPTOR.full_name)"],
        cwd=tmp_path, capture_output=True, text=True, check=True)
    path, name = result.stdout.split()
    assert path.startswith(str(env_dir)), path
    assert name == "tether.v1.SimulationSpec"
    assert (env_dir / "bin" / "tether-plot").exists()


def test_mypy_finds_nothing():
    pytest.importorskip("mypy")
    result = subprocess.run([sys.executable, "-m", "mypy", "--config-file",
                             os.path.join(PACKAGE_ROOT, "pyproject.toml"),
                             "--cache-dir", "/dev/null"],
                            cwd=PACKAGE_ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_local_server_that_exits_before_listening_says_why_at_once(server_binary, tmp_path):
    # It waited its whole startup timeout (30 s) and said only that no
    # "listening on" line came, the server's own error discarded.
    import time
    from tether_client import LocalServer
    for log in (None, tmp_path / "server.log"):
        started = time.monotonic()
        with pytest.raises(RuntimeError) as error:
            LocalServer(binary=server_binary, extra_args=["--max-sessions", "-5"],
                        log_path=log).start()
        assert time.monotonic() - started < 10
        assert "exited with status 2 before listening" in str(error.value)
        assert "--max-sessions" in str(error.value)
