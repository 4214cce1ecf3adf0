"""Teach the tiny random model a few tool-calling episodes, so that GRPO's rollouts are multi-turn.

Run by the TRL venv's python (``tests/test_consumers/test_trl.py``)::

    warm_tiny.py --model TINY --out DIR --url SERVER --plan '{"scenario": [["tool", {args}], ...]}'

Each plan is played on the OpenEnv server through the classes ``rl trl-train`` gives TRL (so
the tool results are the server's), rendered with the tokenizer's chat template and the same
tool list TRL renders, and learnt by next-token training on the assistant turns until greedy
decoding replays every turn. Prints one JSON line: steps, final loss, whether greedy decoding gives the plans.
The result is cached in ``--out`` (a marker holds the hash of the base model path and the ids).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from rl.trl_openenv import RESERVED, environment_classes

FINAL = "Task Completed"
MARKER = "envscaler_warm.sha256"


def tools_of(instance) -> list:
    """The bound tool methods, in the order TRL lists them (``inspect.getmembers`` of the class)."""
    return [
        getattr(instance, name)
        for name, _ in inspect.getmembers(type(instance), predicate=inspect.isfunction)
        if name not in RESERVED and not name.startswith("_")
    ]


def play(tasks, row, plan) -> tuple[list, list[dict]]:
    """``(tools, messages)`` of one planned episode, the tool results taken from the server."""
    instance = tasks.classes[row["environment"]]()
    instance.reset(scenario_id=row["scenario_id"])
    messages = [dict(m) for m in row["prompt"]]
    for name, arguments in plan:
        result = getattr(instance, name)(**arguments)
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "function": {"name": name, "arguments": arguments}}],
            }
        )
        messages.append({"role": "tool", "name": name, "content": result})
    messages.append({"role": "assistant", "content": FINAL})
    instance.get_reward()
    return tools_of(instance), messages


def conversation(tokenizer, tools, messages) -> tuple[list[int], list[tuple[int, int]]]:
    """Token ids of the whole rendered episode and the ``(start, end)`` span of each assistant turn."""
    ids = list(tokenizer.apply_chat_template(messages, tools=tools, tokenize=True, return_dict=False))
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    spans = []
    for index, message in enumerate(messages):
        if message["role"] == "assistant":
            prompt = tokenizer.apply_chat_template(
                messages[:index], tools=tools, add_generation_prompt=True, tokenize=True, return_dict=False
            )
            assert ids[: len(prompt)] == list(prompt), "the chat template does not preserve prefixes"
            spans.append((len(prompt), ids.index(im_end, len(prompt)) + 1))
    return ids, spans


def target_loss(model, ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Next-token loss on ``positions`` only (the LM head runs on those rows, not the whole prompt)."""
    hidden = model.model(input_ids=ids).last_hidden_state[0]
    logits = model.lm_head(hidden[positions - 1])
    return torch.nn.functional.cross_entropy(logits, ids[0, positions])


def greedy_matches(model, episodes) -> bool:
    model.eval()
    with torch.no_grad():
        for ids, spans in episodes:
            for start, end in spans:
                out = model.generate(torch.tensor([ids[:start]]), max_new_tokens=end - start, do_sample=False)
                if out[0, start:end].tolist() != ids[start:end]:
                    model.train()
                    return False
    model.train()
    return True


def main() -> int:
    parser = argparse.ArgumentParser()
    for flag in ("--model", "--out", "--url", "--plan"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--max-steps", type=int, default=400)
    parser.add_argument("--lr", type=float, default=1e-2)
    args = parser.parse_args()
    plans = json.loads(args.plan)
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    tasks = environment_classes(args.url, list(plans))
    episodes = []
    for row in tasks.rows:
        tools, messages = play(tasks, row, plans[row["scenario_id"]])
        episodes.append(conversation(tokenizer, tools, messages))
    tasks.log.close()
    # The warmed model is cached: the marker names the base model and the exact token ids learnt.
    base = Path(args.model).resolve()
    base_marker = base / "envscaler_tiny_model.json"
    base_id = [base.as_posix(), base_marker.read_text() if base_marker.exists() else ""]
    wanted = hashlib.sha256(json.dumps([base_id, episodes, args.lr]).encode()).hexdigest()
    marker = Path(args.out) / MARKER
    if marker.exists() and marker.read_text() == wanted:
        print(json.dumps({"cached": True, "turns": sum(len(s) for _, s in episodes)}))
        return 0
    batch = [(torch.tensor([ids]), torch.tensor([i for a, b in spans for i in range(a, b)])) for ids, spans in episodes]
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    model.train()
    step, loss_value, learnt = 0, float("nan"), False
    while step < args.max_steps and not learnt:
        total = sum(target_loss(model, ids, positions) for ids, positions in batch) / len(batch)
        total.backward()
        optimizer.step()
        optimizer.zero_grad()
        step += 1
        loss_value = float(total.detach())
        if step % 10 == 0 or loss_value < 0.02:
            learnt = loss_value < 0.05 and greedy_matches(model, episodes)
    Path(args.out).mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    if learnt:
        marker.write_text(wanted)
    turns = sum(len(spans) for _, spans in episodes)
    print(json.dumps({"steps": step, "loss": loss_value, "greedy_replays_plans": learnt, "turns": turns}))
    return 0 if learnt else 1


if __name__ == "__main__":
    raise SystemExit(main())
