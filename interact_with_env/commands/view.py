"""``view``: look at a run folder in the browser (served on 127.0.0.1), or export it as one HTML file.

RUN_DIR is a pipeline run folder, a rollouts folder or an arena folder. The page shows the run
(config, models, counts, LLM usage per stage), the environments, the scenarios with their
proofs, the episodes (filtered and sorted), one episode's transcript with its steps, state
diffs and checks, and charts. What cannot be read is listed on the page; the viewer goes on.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from interact_with_env.viewer.page import export_page
from interact_with_env.viewer.run_folder import RunFolder, read_run_folder
from interact_with_env.viewer.server import RunViewer, ViewerServer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=Path, metavar="RUN_DIR", help="pipeline run, rollouts or arena folder")
    parser.add_argument("--port", type=int, default=7870, help="port on 127.0.0.1 (default 7870; 0: any free port)")
    parser.add_argument("--export", type=Path, metavar="FILE.html", help="write one self-contained HTML file and exit")
    parser.add_argument("--envs", type=Path, help="environments from elsewhere (our JSONL or the release's JSON)")
    parser.add_argument("--scenarios", type=Path, help="scenarios from elsewhere (our JSONL or the release's JSON)")


def _describe(run: RunFolder) -> str:
    return (
        f"{len(run.envs)} environments, {len(run.scenarios)} scenarios, {len(run.episodes)} episodes, "
        f"{len(run.problems)} problems"
    )


def run(args: argparse.Namespace) -> int:
    def read() -> RunFolder:
        return read_run_folder(args.run_dir, args.envs, args.scenarios)

    if args.export:
        folder = read()
        size = export_page(folder, args.export)
        print(f"wrote {args.export} ({size / 1e6:.1f} MB): {_describe(folder)}")
        return 0
    viewer = RunViewer(read, args.run_dir)
    server = ViewerServer(viewer, args.port)
    print(f"viewing {args.run_dir} ({_describe(viewer.run)}) at {server.url}  (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
