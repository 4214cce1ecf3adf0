"""``python -m sft train``: run LlamaFactory SFT in-process from a YAML config plus overrides.

On GPU machines ``llamafactory-cli train sft/configs/<file>.yaml`` is the normal launcher (it adds
torchrun for several GPUs); this command exists for CPU smoke runs and scripted runs. It applies
the CPU fixes of the training venv (a stub ``torchaudio`` module: LlamaFactory imports it at
import time and the PyPI CUDA build breaks CPU torch), counts LlamaFactory's "Skipping this
abnormal example" warnings and writes ``train_summary.json`` in the output directory: examples
seen by the trainer, steps, per-step losses, wall seconds.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import json
import logging
import math
import sys
import time
import types
from pathlib import Path
from typing import Any

import yaml

from envscaler_core.cli import UserError
from envscaler_core.config import add_set_argument, parse_overrides

SKIP_MESSAGE = "Skipping this abnormal example"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, required=True, help="LlamaFactory YAML")
    add_set_argument(parser, "override a LlamaFactory argument")


def load_train_args(path: Path, overrides: list[str]) -> dict[str, Any]:
    """The YAML at ``path`` with ``KEY=VALUE`` overrides applied (values parsed as YAML)."""
    if not path.exists():
        raise UserError(f"config file not found: {path}")
    args = yaml.safe_load(path.read_text()) or {}
    args.update(parse_overrides(overrides))
    for key in ("model_name_or_path", "dataset", "output_dir"):
        if not args.get(key):
            raise UserError(f"{path}: {key} is not set (use --set {key}=...)")
    return args


def stub_torchaudio() -> None:
    """Make ``import torchaudio`` succeed when it is absent (only audio datasets need it)."""
    if importlib.util.find_spec("torchaudio") is not None:
        return
    module = types.ModuleType("torchaudio")
    module.__spec__ = importlib.machinery.ModuleSpec("torchaudio", None)
    sys.modules["torchaudio"] = module


class _SkipCounter(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.skipped = 0

    def emit(self, record: logging.LogRecord) -> None:
        if SKIP_MESSAGE in record.getMessage():
            self.skipped += 1


def _recorder():
    from transformers import TrainerCallback

    class Recorder(TrainerCallback):
        """Collects the number of training examples and the logged losses."""

        def __init__(self) -> None:
            self.examples = None
            self.losses: list[float] = []
            self.steps = 0

        def on_train_begin(self, args, state, control, **kwargs):
            loader = kwargs.get("train_dataloader")
            if loader is not None and hasattr(loader, "dataset"):
                self.examples = len(loader.dataset)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.losses.append(float(logs["loss"]))
            self.steps = state.global_step

    return Recorder()


def train(args: dict[str, Any]) -> dict[str, Any]:
    """Run ``llamafactory.train.tuner.run_exp(args)``; return the summary it also writes."""
    stub_torchaudio()
    try:
        from llamafactory.train.tuner import run_exp
    except ImportError as exc:
        raise UserError(
            f"LlamaFactory is not importable ({exc}): run `make setup-train` and use .venv-train/bin/python"
        ) from None
    counter = _SkipCounter()
    logging.getLogger("llamafactory").addHandler(counter)
    recorder = _recorder()
    started = time.monotonic()
    run_exp(dict(args), callbacks=[recorder])
    summary = {
        "examples": recorder.examples,
        "steps": recorder.steps,
        "losses": recorder.losses,
        "final_loss": recorder.losses[-1] if recorder.losses else None,
        "loss_finite": bool(recorder.losses) and all(math.isfinite(x) for x in recorder.losses),
        "skipped_examples": counter.skipped,
        "wall_s": round(time.monotonic() - started, 2),
    }
    out = Path(args["output_dir"])
    out.mkdir(parents=True, exist_ok=True)
    (out / "train_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def run(args: argparse.Namespace) -> int:
    summary = train(load_train_args(args.config, args.overrides))
    print(json.dumps({"train_summary": summary}))
    return 0 if summary["loss_finite"] and not summary["skipped_examples"] else 1
