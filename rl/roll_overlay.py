"""``python -m rl roll-overlay``: hook the EnvScaler environments into a ROLL checkout.

1. appends the registration (:func:`rl.register.register_envs`) to
   ``roll/pipeline/agentic/env/__init__.py`` (once: a marker line makes it idempotent);
2. writes the pipeline YAML to ``examples/envscaler/`` (paths filled in when given, else read
   from ``ENVSCALER_RL_*`` at launch).

ROLL must be able to import this repository (``pip install --no-deps -e <this repo>`` plus
``requirements.txt`` in ROLL's environment). Nothing of ROLL is imported here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from envscaler_core.cli import UserError

MARKER = "# envscaler: register EnvScaler gem environments"
REGISTRATION = f"""
{MARKER}
from rl.register import register_envs as _envscaler_register_envs

_envscaler_register_envs()
"""
CONFIG = Path(__file__).parent / "configs" / "envscaler_task_qwen3_8gpu.yaml"
ENV_INIT = Path("roll/pipeline/agentic/env/__init__.py")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--roll", type=Path, required=True, help="ROLL checkout (git clone)")
    parser.add_argument("--envs", type=Path, help="envs file to write into the YAML")
    parser.add_argument("--scenarios", type=Path, help="train scenarios file")
    parser.add_argument("--val-scenarios", type=Path, help="validation scenarios file")
    parser.add_argument("--pretrain", help="SFT checkpoint to start from")


def register_in_roll(roll: Path) -> bool:
    """Append the registration to ROLL's env package; False when it is already there."""
    init = roll / ENV_INIT
    if not init.exists():
        raise UserError(f"{roll} is not a ROLL checkout: {ENV_INIT} is missing")
    text = init.read_text()
    if MARKER in text:
        return False
    init.write_text(text.rstrip("\n") + "\n" + REGISTRATION)
    return True


def render_config(envs=None, scenarios=None, val_scenarios=None, pretrain=None) -> str:
    """The pipeline YAML with the given paths written in place of the ``oc.env`` lookups."""
    text = CONFIG.read_text()
    val = val_scenarios or scenarios
    replacements = {
        "${oc.env:ENVSCALER_RL_VAL_SCENARIOS,${oc.env:ENVSCALER_RL_SCENARIOS}}": val,
        "${oc.env:ENVSCALER_RL_ENVS}": envs,
        "${oc.env:ENVSCALER_RL_SCENARIOS}": scenarios,
    }
    for placeholder, value in replacements.items():
        if value is not None:
            text = text.replace(placeholder, str(Path(value).resolve()))
    if pretrain:
        text = text.replace("pretrain: saves/qwen3-8b/full/envscaler_sft", f"pretrain: {pretrain}")
    return text


def run(args: argparse.Namespace) -> int:
    for path in (args.envs, args.scenarios, args.val_scenarios):
        if path is not None and not path.exists():
            raise UserError(f"file not found: {path}")
    added = register_in_roll(args.roll)
    target = args.roll / "examples" / "envscaler" / CONFIG.name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_config(args.envs, args.scenarios, args.val_scenarios, args.pretrain))
    print(f"registration {'added to' if added else 'already in'} {args.roll / ENV_INIT}")
    print(f"pipeline config: {target}")
    print(
        f"run: cd {args.roll} && python examples/start_agentic_pipeline.py "
        f"--config_path envscaler --config_name {CONFIG.stem}"
    )
    return 0
