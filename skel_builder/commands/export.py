"""``export``: envs.jsonl -> filtered_env_metadata.json (the original release shape)."""

from pathlib import Path

from envscaler_core.cli import UserError
from envscaler_core.original_format import load_envs
from envscaler_core.store import ArtifactError
from skel_builder.pipeline import METADATA_FILE, export


def add_arguments(parser):
    parser.add_argument("--envs", type=Path, required=True, help="envs.jsonl of a run")
    parser.add_argument("--output", type=Path, help=f"default: {METADATA_FILE} next to --envs")


def run(args):
    try:
        envs = list(load_envs(args.envs).values())
    except ArtifactError as exc:
        raise UserError(str(exc)) from None
    output = args.output or args.envs.parent / METADATA_FILE
    count = export(envs, output)
    print(f"wrote {count} accepted environments to {output}")
    return 0
