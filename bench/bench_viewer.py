"""The run viewer on large runs: reading, export time and file size, and time to first render.

For each size it writes a synthetic pipeline run folder (the library fixture's environment;
scenarios of 8 episodes each, half task mode, half user mode; 1-12 tool calls an episode with
observations, state diffs, failed calls, checks and progress, all varied so that compression
sees realistic text), then measures:

* ``read``: ``read_run_folder`` (every line parsed and validated, the list rows built);
* ``export``: ``view --export`` end to end (read, every part built and compressed, the file written);
* the exported file's size;
* in headless Chromium (``make setup-browser``), medians over ``--repeats`` fresh pages:
  first render of the run page and of the episode list (from navigation start to the end of the
  page's first render), and opening one transcript (its part decompressed and drawn).

    .venv/bin/python bench/bench_viewer.py [--episodes 1000 10000] [--repeats 3] [--no-browser]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from envscaler_core.artifacts import (
    ChecklistItem,
    CheckResult,
    RewardBreakdown,
    Scenario,
    StepRecord,
    ToolCall,
    Trajectory,
    Usage,
)
from envscaler_core.store import JsonlStore
from interact_with_env.viewer.page import export_page
from interact_with_env.viewer.run_folder import read_run_folder

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "test_interact_with_env" / "fixtures"
CHROMIUM = "/usr/bin/chromium"
SAMPLES = 8
WORDS = [
    "dune",
    "emma",
    "ulysses",
    "beloved",
    "hamlet",
    "odyssey",
    "walden",
    "persuasion",
    "middlemarch",
    "rebecca",
    "dracula",
    "frankenstein",
    "lolita",
    "matilda",
    "heidi",
]
TOOLS = ["list_books", "get_book", "checkout_book", "return_book", "renew_loan", "find_member"]
ERRORS = ["not_found", "invalid_argument", "unknown_tool", "precondition_failed"]
SYSTEM = (
    "You are a helpful agent operating a library loan system. Use the tools to act on the "
    "system; answer in plain text when the task is done, starting with 'Task Completed' or "
    "'Task Failed'. " * 12
)


def _record(rng: random.Random) -> dict:
    book = f"B{rng.randint(1, 999)}"
    return {
        "book_id": book,
        "title": " ".join(rng.sample(WORDS, 2)).title(),
        "status": rng.choice(["available", "on_loan"]),
    }


def _step(rng: random.Random, index: int) -> tuple[StepRecord, dict, dict]:
    """A step, the assistant message that asked for it and the tool message that answered it."""
    name = rng.choice(TOOLS)
    call_id = f"call_{index}_{rng.randint(0, 10**9)}"
    arguments = {"book_id": f"B{rng.randint(1, 999)}", "member_id": f"M{rng.randint(1, 99)}"}
    failed = rng.random() < 0.12
    if failed:
        error = rng.choice(ERRORS)
        observation = {"success": False, "error_type": error, "error": f"{name}: {error} for {arguments['book_id']}"}
        diff = []
    elif name in ("list_books", "get_book", "find_member"):
        observation = {"success": True, "data": [_record(rng) for _ in range(rng.randint(1, 6))]}
        diff = []
    else:
        observation = {"success": True, "message": f"{name} done for {arguments['book_id']}"}
        diff = [
            {"op": "replace", "path": f"/books/{arguments['book_id']}/status", "value": "on_loan"},
            {"op": "add", "path": f"/loans/L{rng.randint(1, 9999)}", "value": arguments},
        ]
    step = StepRecord(
        index=index,
        tool_call_id=call_id,
        name=name,
        arguments=json.dumps(arguments),
        observation=observation,
        error_type=observation.get("error_type") if failed else None,
        state_diff=diff,
        state_hash=f"{rng.getrandbits(64):016x}",
        duration_ms=rng.uniform(0.2, 30),
    )
    asked = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }
    answered = {"role": "tool", "tool_call_id": call_id, "name": name, "content": json.dumps(observation)}
    return step, asked, answered


def _trajectory(rng: random.Random, scenario: Scenario, sample: int, mode: str) -> Trajectory:
    steps, messages = [], [{"role": "system", "content": SYSTEM}, {"role": "user", "content": scenario.task}]
    for index in range(rng.randint(1, 12)):
        step, asked, answered = _step(rng, index)
        steps.append(step)
        messages += [asked, answered]
    messages.append({"role": "assistant", "content": "Task Completed: " + " ".join(rng.sample(WORDS, 5))})
    statuses = [rng.choices(["true", "false", "error"], [0.7, 0.27, 0.03])[0] for _ in scenario.checklist_with_func]
    checks = [
        CheckResult(check_item=c.check_item, status=s, error="KeyError: 'loans'" if s == "error" else None)  # type: ignore[arg-type]  # statuses drawn from the Literal's values
        for c, s in zip(scenario.checklist_with_func, statuses, strict=True)
    ]
    final = sum(s == "true" for s in statuses) / len(statuses)
    return Trajectory(
        id=f"{scenario.id}#{sample}",
        scenario_id=scenario.id,
        env_id=scenario.env_id,
        sample=sample,
        mode=mode,  # type: ignore[arg-type]  # "task" or "user"
        model="bench-model",
        seed=rng.randint(0, 10**9),
        task=scenario.task,
        messages=messages,
        steps=steps,
        reward=RewardBreakdown(
            final=final, checks=checks, progress=[round(rng.random(), 2) for _ in steps], state_match=final == 1.0
        ),
        usage=Usage(calls=len(steps) + 1, prompt_tokens=rng.randint(800, 9000), completion_tokens=rng.randint(50, 900)),
        timings={"wall_s": round(rng.uniform(1, 60), 2)},
        termination=rng.choice(["agent_answered", "agent_answered", "max_steps", "user_stop"]),
        flags=rng.choice([[], [], [], ["premature_stop"], ["checker_error"]]),
    )


def synthetic_run(folder: Path, episodes: int, seed: int = 0) -> Path:
    """A pipeline run folder of ``episodes`` synthetic episodes (see the module docstring)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / "envs.jsonl", folder / "envs.jsonl")
    scenarios = [
        Scenario(
            id=f"library-{n:05d}",
            env_id="library",
            env_class_name="LibraryLoanSystem",
            task=f"Lend {' '.join(rng.sample(WORDS, 2)).title()} (B{rng.randint(1, 999)}) to M{rng.randint(1, 99)}.",
            checklist_with_func=[
                ChecklistItem(check_item=f"check {i} of scenario {n}", check_func="def check_func(s):\n    return True")
                for i in range(rng.randint(2, 5))
            ],
            reference_solution=[ToolCall(name="checkout_book", arguments={"book_id": "B1", "member_id": "M1"})],
            status="proven",
        )
        for n in range(max(1, episodes // SAMPLES))
    ]
    JsonlStore(folder / "scenarios.jsonl", Scenario).extend(scenarios)
    for mode in ("task", "user"):
        store = JsonlStore(folder / f"rollouts_{mode}" / "trajectories.jsonl", Trajectory)
        batch = []
        for n in range(episodes // 2):
            scenario = scenarios[(n // (SAMPLES // 2)) % len(scenarios)]
            batch.append(_trajectory(rng, scenario, n % (SAMPLES // 2) + (SAMPLES // 2 if mode == "user" else 0), mode))
        store.extend(batch)
    return folder


def measure_export(folder: Path, out: Path) -> dict[str, float]:
    started = time.perf_counter()
    run = read_run_folder(folder)
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    size = export_page(read_run_folder(folder), out)
    export_s = time.perf_counter() - started
    return {"episodes": len(run.episodes), "read_s": read_s, "export_s": export_s, "size_mb": size / 1e6}


def measure_browser(page_file: Path, first_key: str, repeats: int) -> dict[str, float]:
    """Medians, in ms, of the first render of the run page and the episode list, and of opening one transcript."""
    from playwright.sync_api import sync_playwright

    url = page_file.as_uri()
    timings: dict[str, list[float]] = {"run_page_ms": [], "episode_list_ms": [], "transcript_ms": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        for _ in range(repeats):
            for hash_, key in (("#/run", "run_page_ms"), ("#/episodes", "episode_list_ms")):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                page.goto(url + hash_, wait_until="load")
                page.wait_for_function("window.esFirstRender !== undefined", timeout=120_000)
                timings[key].append(page.evaluate("window.esFirstRender"))
                if key == "episode_list_ms":
                    started = page.evaluate("performance.now()")
                    page.evaluate(f"location.hash = '#/episode/' + encodeURIComponent({json.dumps(first_key)})")
                    page.wait_for_selector(".step", timeout=120_000)
                    timings["transcript_ms"].append(page.evaluate("performance.now()") - started)
                page.close()
        browser.close()
    return {key: statistics.median(values) for key, values in timings.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--repeats", type=int, default=3, help="fresh pages per browser measure (median)")
    parser.add_argument("--no-browser", action="store_true", help="skip the Chromium measures")
    args = parser.parse_args(argv)
    browser = not args.no_browser and Path(CHROMIUM).exists()
    if not args.no_browser and not browser:
        print(f"no {CHROMIUM} (make setup-browser): browser measures skipped")
    header = ["episodes", "run MB", "read s", "export s", "file MB", "KB/episode"]
    header += ["run page ms", "episode list ms", "transcript ms"] if browser else []
    print("  ".join(f"{h:>15}" for h in header))
    with tempfile.TemporaryDirectory(prefix="bench-viewer-") as tmp:
        for n in args.episodes:
            folder = synthetic_run(Path(tmp) / f"run{n}", n)
            run_mb = sum(p.stat().st_size for p in folder.rglob("*.jsonl")) / 1e6
            figures = measure_export(folder, Path(tmp) / f"run{n}.html")
            row = [figures["episodes"], run_mb, figures["read_s"], figures["export_s"], figures["size_mb"]]
            row.append(figures["size_mb"] * 1000 / max(1, figures["episodes"]))
            if browser:
                timed = measure_browser(Path(tmp) / f"run{n}.html", "rollouts_task/library-00000#0", args.repeats)
                row += [timed["run_page_ms"], timed["episode_list_ms"], timed["transcript_ms"]]
            print("  ".join(f"{v:>15.2f}" if isinstance(v, float) else f"{v:>15}" for v in row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
