"""What ``python -m pipeline`` shows while it runs and at the end: each step's place, the live
status of its rollouts, and the play command with the run's config."""

from __future__ import annotations

import codecs
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import yaml

from envscaler_core.testing import ScriptedServer
from tests.test_interact_with_env.helpers import CHECKOUT_PLAN, ENVS, SCENARIOS, WatchedOutput, gated, planned

ROOT = Path(__file__).resolve().parents[2]


def _copy_into(pipe: IO[bytes], watched: WatchedOutput) -> None:
    """Everything the pipe carries, as it comes (a progress line ends in a carriage return)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    while chunk := os.read(pipe.fileno(), 4096):
        watched.write(decoder.decode(chunk))


def test_the_pipeline_shows_its_rollouts_live_and_prints_the_play_command_with_its_config(tmp_path):
    config = tmp_path / "rollouts.yaml"
    rollouts = ["run", "--envs", str(ENVS), "--scenarios", str(SCENARIOS), "--scenario-id", "library-checkout"]
    config.write_text(
        yaml.safe_dump(
            {
                "llm": {"default": {"timeout_s": 600, "max_retries": 0}},
                "pipeline": {
                    "out": str(tmp_path / "run"),
                    "steps": [
                        {
                            "name": "rollouts",
                            "module": "interact_with_env",
                            "args": [*rollouts, "--config", "{config}", "--out", "{out}/rollouts_task", "--no-cache"],
                        }
                    ],
                },
                "interact_with_env": {"max_steps": 8},
            }
        )
    )
    policy, gate = gated(planned(CHECKOUT_PLAN), at_turn=2)
    stdout, stderr = WatchedOutput(), WatchedOutput()
    with ScriptedServer(policy) as server:
        env = {
            **os.environ,
            "OPENAI_BASE_URL": server.base_url,
            "OPENAI_API_KEY": "sk-test",
            "OPENAI_MODEL": "scripted",
        }
        env.pop("ENVSCALER_NO_PROGRESS", None)
        proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline", "--config", str(config)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        readers = [
            threading.Thread(target=_copy_into, args=(pipe, watched))
            for pipe, watched in ((proc.stdout, stdout), (proc.stderr, stderr))
        ]
        for reader in readers:
            reader.start()
        try:
            assert stdout.wait_for("=== [1/1] rollouts: python -m interact_with_env run"), stdout.getvalue()
            # the episode is held before its third turn: the line shows its two turns and calls
            assert stderr.wait_for("1 running: 2 turns, 2 tool calls, ETA ≤ "), stderr.getvalue()
        finally:
            gate.set()
            code = proc.wait()
            for reader in readers:
                reader.join()
    assert code == 0, stdout.getvalue()[-3000:] + stderr.getvalue()[-3000:]
    assert "episodes: 1/1" in stderr.getvalue()
    play = stdout.getvalue().split("Play with what was just built:\n", 1)[1].splitlines()[0].strip()
    assert shlex.split(play)[:4] == ["python", "-m", "interact_with_env", "app"]
    assert shlex.split(play)[-2:] == ["--config", str(config)]
