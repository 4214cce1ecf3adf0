"""``inspect``: env_drafts.jsonl -> envs.jsonl (accepted / rejected with reports) + metadata."""

from skel_builder import pipeline
from skel_builder.commands.common import add_common, context, execute


def add_arguments(parser):
    add_common(parser)


def run(args):
    ctx = context(args)
    return execute(ctx, "skel_builder inspect", lambda sandbox: pipeline.inspect(ctx, sandbox, args.limit))
