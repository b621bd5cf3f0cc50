"""Generates the gRPC stubs (clickd.v1) while building the package.

pyproject.toml holds the package's metadata; this file only adds a build
step: protoc and grpc_python_plugin (Debian: protobuf-compiler,
protobuf-compiler-grpc) write clickd/v1/clickd_pb2*.py into the build
directory, so the stubs are installed with the package and never
committed. CLICKD_PROTO_DIR overrides where clickd/v1/clickd.proto is found
(default: the repository's proto/, two levels up).
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO = "clickd/v1/clickd.proto"


def _tool(name):
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(
            f"{name} not found: apt-get install protobuf-compiler protobuf-compiler-grpc")
    return path


class BuildWithStubs(build_py):
    def run(self):
        super().run()
        proto_dir = os.environ.get("CLICKD_PROTO_DIR", os.path.join(HERE, "..", "..", "proto"))
        if not os.path.exists(os.path.join(proto_dir, PROTO)):
            raise RuntimeError(f"{PROTO} not found under {proto_dir}; set CLICKD_PROTO_DIR")
        out = self.build_lib
        subprocess.run([_tool("protoc"), "-I", proto_dir, f"--python_out={out}", f"--pyi_out={out}",
                        f"--grpc_out={out}",
                        f"--plugin=protoc-gen-grpc={_tool('grpc_python_plugin')}",
                        os.path.join(proto_dir, PROTO)], check=True)
        with open(os.path.join(out, "clickd", "v1", "__init__.py"), "w"):
            pass


setup(cmdclass={"build_py": BuildWithStubs})
