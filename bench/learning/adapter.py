"""The trained LoRA as a llama.cpp adapter: peft's folder converted by ``convert_lora_to_gguf.py`` from the pinned
llama.cpp source (run in the learning venv, with the source's own ``gguf-py``), f16, plus its sha256."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from bench.learning.llama import ROOT, source_tree

__all__ = ["convert", "sha256"]


def convert(python: Path, update: Path, target: Path) -> Path:
    """``update``'s checkpointed adapter (``sft`` wrote it, with the base config beside) as GGUF at ``target``."""
    script = source_tree() / "convert_lora_to_gguf.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    command = [str(python), str(script), "--base", str(update / "base"), "--outtype", "f16"]
    command += ["--outfile", str(partial), str(update / "checkpoint" / "adapter")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if done.returncode:
        raise RuntimeError(f"convert_lora_to_gguf.py failed ({done.returncode}): {done.stderr[-2000:]}")
    partial.replace(target)
    return target


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as opened:
        for block in iter(lambda: opened.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
