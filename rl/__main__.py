"""``python -m rl``: RL on EnvScaler environments (ROLL via gem envs, TRL GRPO)."""

from envscaler_core.cli import run_cli

COMMANDS = {
    "trl-train": ("rl.trl_train", "multi-turn GRPO with TRL 1.x on the scenarios served over OpenEnv (.venv-trl)"),
    "roll-overlay": ("rl.roll_overlay", "write the ROLL registration + pipeline YAML into a ROLL checkout"),
}


def main() -> int:
    return run_cli("rl", __doc__, COMMANDS)


if __name__ == "__main__":
    raise SystemExit(main())
