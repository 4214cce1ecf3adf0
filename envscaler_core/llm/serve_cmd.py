"""Start the embedded server alone (for other clients) and stop it cleanly on Ctrl-C/SIGTERM."""

from __future__ import annotations

import argparse
import signal
import threading

from envscaler_core.cli import UserError
from envscaler_core.llm.embedded import DEFAULT_SLOTS, start_server
from envscaler_core.llm.models import MODELS, ModelUnavailable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", choices=sorted(MODELS), help="embedded model (default: qwen2.5-coder-0.5b)")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--ctx", type=int, default=8192, help="context length of one conversation (one slot)")
    parser.add_argument(
        "--slots", type=int, default=DEFAULT_SLOTS, help="conversations whose prompts stay cached between turns"
    )
    parser.add_argument("--threads", type=int, help="CPU threads (default: ENVSCALER_EMBEDDED_THREADS, else all cores)")


def run(args: argparse.Namespace) -> int:
    try:
        server = start_server(args.model, args.port, args.ctx, args.threads, args.slots)
    except ModelUnavailable as exc:
        raise UserError(str(exc)) from None
    stop = threading.Event()
    # Installed before the URL is printed: a client may send SIGTERM as soon as it reads it.
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"embedded model {server.model_path}\nOPENAI_BASE_URL={server.base_url}\npress Ctrl-C to stop", flush=True)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        print("stopped", flush=True)
    return 0
