"""How fast the embedded model reads and writes on this machine, from llama.cpp's own timings.

    python bench/embedded_speed.py                 # the default model, every core
    ENVSCALER_EMBEDDED_THREADS=1 python bench/embedded_speed.py

Sends one agent-sized prompt (about 1,150 tokens) cold, then two follow-up turns of the same
conversation, and prints per request the tokens read from llama.cpp's prompt cache, the tokens
read anew and their rate, and the tokens written and their rate. The cold read is what every new
episode or stage prompt pays; a follow-up turn pays only its new tokens.
"""

from __future__ import annotations

import argparse

import httpx

from envscaler_core.llm.embedded import start_server

SYSTEM = "You are a helpful agent. " + " ".join(
    f"Tool {i}: does thing number {i} with arguments a, b and c." for i in range(60)
)


def _rate(tokens: float, ms: float) -> float:
    return tokens / ms * 1000 if ms else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=3, help="requests in the conversation (the first is cold)")
    parser.add_argument("--max-tokens", type=int, default=60, help="tokens written per request")
    args = parser.parse_args(argv)
    server = start_server()
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Write a short story."}]
    print(f"{'turn':>4}  {'cached':>6}  {'read':>5}  {'read tok/s':>10}  {'written':>7}  {'write tok/s':>11}")
    try:
        with httpx.Client(timeout=600) as client:
            for turn in range(args.turns):
                body = {"model": "embedded", "messages": messages, "max_tokens": args.max_tokens, "seed": turn}
                reply = client.post(server.base_url + "/chat/completions", json=body).json()
                t = reply.get("timings", {})
                print(
                    f"{turn:>4}  {t.get('cache_n', 0):>6}  {t.get('prompt_n', 0):>5}  "
                    f"{_rate(t.get('prompt_n', 0), t.get('prompt_ms', 0)):>10.1f}  {t.get('predicted_n', 0):>7}  "
                    f"{_rate(t.get('predicted_n', 0), t.get('predicted_ms', 0)):>11.1f}"
                )
                content = reply["choices"][0]["message"]["content"]
                messages += [{"role": "assistant", "content": content}, {"role": "user", "content": "Go on."}]
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
