"""bench/user_sim_turns.py over the scripted server: each moment played and its replies counted."""

from __future__ import annotations

from envscaler_core.testing.scripted_server import Reply
from tests.bench_scripts import bench_module


def test_each_moment_is_played_and_its_replies_counted(scripted_env, capsys):
    def user(request):
        said = request["messages"][-1]["content"]
        if "Hi!" in said:
            return Reply.text("# Thought: start\n# Reply: Hi, I need book1 changed.")
        if "Task Completed" in said:
            return Reply.text("###STOP###")
        return Reply.text("# Reply: Thought: the id is book1. It is book1.")

    scripted_env.policy = user
    assert bench_module("user_sim_turns").main(["--samples", "2"]) == 0
    rows = {line.split()[0]: line.split()[1:5] for line in capsys.readouterr().out.splitlines()[2:]}
    assert rows["opening"][:3] == ["0", "2", "0"]
    assert rows["done"][:3] == ["2", "0", "0"]
    assert rows["question"][:3] == ["0", "0", "2"]
    assert len(scripted_env.completion_requests) == 6  # nothing answered from a cache
