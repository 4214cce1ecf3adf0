"""``python -m sft``: export trajectories to LlamaFactory datasets and run training."""

from envscaler_core.cli import run_cli

COMMANDS = {
    "export": ("sft.export", "trajectories.jsonl -> LlamaFactory dataset (sharegpt | alpaca) or a Hub dataset (hf)"),
    "tiny-model": ("sft.tiny_model", "build a tiny random model from a shipped GGUF (smoke tests)"),
    "train": ("sft.train", "run LlamaFactory SFT in-process (needs `make setup-train`)"),
}


def main(argv=None) -> int:
    return run_cli("sft", __doc__, COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main())
