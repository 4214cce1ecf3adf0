"""``synthesize``: selected descriptions -> env_drafts.jsonl."""

from skel_builder import pipeline
from skel_builder.commands.common import add_common, context, execute


def add_arguments(parser):
    add_common(parser)


def run(args):
    ctx = context(args)
    return execute(ctx, "skel_builder synthesize", lambda sandbox: pipeline.synthesize(ctx, sandbox, args.limit))
