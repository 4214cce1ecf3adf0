"""``mine``: tasks -> source_tasks.jsonl -> env_descriptions.jsonl (judged, described, selected)."""

from skel_builder import pipeline
from skel_builder.commands.common import add_common, add_tasks, context, execute


def add_arguments(parser):
    add_tasks(parser)
    add_common(parser)


def run(args):
    ctx = context(args)

    async def step(sandbox):
        return await pipeline.mine(ctx, args.tasks, args.format, args.limit)

    return execute(ctx, "skel_builder mine", step)
