"""``demo``: the Gradio build demo, bound to 127.0.0.1 unless ``--host`` says otherwise."""

from skel_builder.commands.common import add_common, context


def add_arguments(parser):
    add_common(parser, limit=False)
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=7860, help="port (default 7860)")


def run(args):
    from envscaler_core.runtime import Sandbox
    from skel_builder.demo import build_app

    config = context(args, "skel_builder_demo").config
    with Sandbox(config.sandbox_workers, 1) as sandbox:
        app = build_app(config, sandbox)
        app.queue().launch(server_name=args.host, server_port=args.port, share=False)
    return 0
