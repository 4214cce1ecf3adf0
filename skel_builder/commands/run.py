"""``run``: mine -> synthesize -> inspect, resumable at every step."""

from skel_builder import pipeline
from skel_builder.commands.common import add_common, add_tasks, context, execute


def add_arguments(parser):
    add_tasks(parser)
    add_common(parser)


def run(args):
    ctx = context(args)

    async def step(sandbox):
        counts = await pipeline.mine(ctx, args.tasks, args.format, args.limit)
        counts.update(await pipeline.synthesize(ctx, sandbox))
        counts.update(await pipeline.inspect(ctx, sandbox))
        return counts

    return execute(ctx, "skel_builder run", step)
