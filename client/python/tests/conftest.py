"""pytest options and fixtures of the client's tests.

    /usr/bin/python3 -m pytest client/python/tests \
        --server-binary build/bin/tether-server --cli-binary build/bin/tether

The tests import the package from client/python/src (this file puts it on
sys.path for the test process only; the package itself never touches
sys.path). Tests that need a server or the CLI are skipped without the
option (ctest always gives both: tests/CMakeLists.txt)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_ROOT = os.path.dirname(HERE)
REPOSITORY = os.path.abspath(os.path.join(PACKAGE_ROOT, "..", ".."))
sys.path.insert(0, os.path.join(PACKAGE_ROOT, "src"))


def pytest_addoption(parser):
    parser.addoption("--server-binary", default=os.environ.get("TETHER_SERVER"),
                     help="tether-server for the tests that need one")
    parser.addoption("--cli-binary", default=None,
                     help="the tether CLI for the tests that run it")


@pytest.fixture(scope="session")
def server_binary(request):
    path = request.config.getoption("--server-binary")
    if not path:
        pytest.skip("needs --server-binary")
    return path


@pytest.fixture(scope="session")
def cli_binary(request):
    path = request.config.getoption("--cli-binary")
    if not path:
        pytest.skip("needs --cli-binary")
    return path


@pytest.fixture(scope="session")
def server(server_binary, tmp_path_factory):
    from tether_client import LocalServer
    log = tmp_path_factory.mktemp("server") / "server.log"
    with LocalServer(binary=server_binary, log_path=log) as running:
        yield running


@pytest.fixture()
def client(server):
    from tether_client import Client
    with Client(server.address, timeout=60) as connected:
        yield connected


def example(name):
    return os.path.join(REPOSITORY, "examples", name)
