"""The package installs from the repository with pip and Debian's setuptools,
generating its stubs on the way (setup.py), and the installed copy works."""

import os
import shutil
import subprocess
import sys

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_DIR = os.path.join(PACKAGE_DIR, "..", "..", "proto")


def test_pip_installs_the_package_with_its_stubs(tmp_path, server):
    # A copy, so that the in-tree build leaves nothing in the repository.
    source = tmp_path / "src"
    shutil.copytree(PACKAGE_DIR, source, ignore=shutil.ignore_patterns(
        "tests", "build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    env = dict(os.environ, CLICKD_PROTO_DIR=PROTO_DIR, PYTHONPATH="")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                    "--no-deps", "--no-index", "--target", str(target), str(source)],
                   env=env, check=True, timeout=300)
    assert (target / "clickd" / "v1" / "clickd_pb2_grpc.py").exists()
    script = ("import clickd, sys\n"
              "assert clickd.__file__.startswith(sys.argv[1]), clickd.__file__\n"
              "assert clickd.pb.__file__.startswith(sys.argv[1]), clickd.pb.__file__\n"
              "with clickd.Client(sys.argv[2]) as c:\n"
              "    print(len(c.predict('default', [{'ad': [1]}]).predictions))\n")
    out = subprocess.run([sys.executable, "-c", script, str(target), server.address],
                         env=dict(env, PYTHONPATH=str(target)), cwd=tmp_path, check=True,
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "1"
