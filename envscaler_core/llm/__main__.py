"""``python -m envscaler_core.llm serve|models`` — the embedded server for other clients."""

from envscaler_core.cli import run_cli

COMMANDS = {
    "serve": ("envscaler_core.llm.serve_cmd", "start the embedded llama.cpp server on 127.0.0.1"),
    "check": ("envscaler_core.llm.check_cmd", "one structured call and one tool call against the endpoint"),
    "models": ("envscaler_core.llm.models_cmd", "list embedded models and whether they are installed"),
}

if __name__ == "__main__":
    raise SystemExit(run_cli("python -m envscaler_core.llm", __doc__, COMMANDS))
