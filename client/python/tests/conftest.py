"""Fixtures: a real clickd per test module, and clients of it."""

import os
import sys
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import clickd  # noqa: E402
from server import Server  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A clickd with --data_dir (so snapshots work) and the default model."""
    data_dir = tmp_path_factory.mktemp("data")
    s = Server([f"--data_dir={data_dir}", "--update_log_sync=none"]).start()
    yield s
    code = s.stop()
    s.close()
    assert code == 0, "clickd did not exit cleanly on SIGTERM"


@pytest.fixture
def client(server):
    with clickd.Client(server.address, timeout=10) as c:
        yield c


@pytest.fixture
def model(client):
    """A fresh FTRL model of its own for one test; deleted afterwards."""
    name = "t-" + uuid.uuid4().hex[:12]
    client.create_model({"name": name, "ftrl": {"alpha": 0.1}})
    yield name
    try:
        client.delete_model(name)
    except clickd.NotFoundError:
        pass
