"""The run viewer in headless Chromium (Playwright), on a run made by the scripted server.

Screenshots of each page go to ``$ENVSCALER_SCREENSHOTS`` when it is set (to look at them),
else to the test's temporary folder.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from interact_with_env.__main__ import main
from interact_with_env.viewer.run_folder import read_run_folder
from interact_with_env.viewer.server import RunViewer, ViewerServer
from tests.test_interact_with_env.viewer_runs import copy_run, make_arena_run, make_bad_run

pytestmark = pytest.mark.browser
TIMEOUT = 30_000
# what the page may not do: fail a script, print an error, or be refused something by its policy
WATCH = """
window.esTrouble = [];
window.addEventListener("securitypolicyviolation", (e) => window.esTrouble.push("csp " + e.blockedURI));
"""


class Watched:
    """A page, what it asked the network for, and what went wrong in it."""

    def __init__(self, context):
        self.context = context
        self.page = context.new_page()
        self.requests: list[str] = []
        self.trouble: list[str] = []
        self.page.on("pageerror", lambda exc: self.trouble.append(f"page error: {exc}"))
        self.page.on("console", lambda m: self.trouble.append(f"console: {m.text}") if m.type == "error" else None)
        self.page.on("request", lambda r: self.requests.append(r.url))


@pytest.fixture
def watch(chromium):
    """Opens watched pages (``offline=True``: with the network off); a script error, a console
    error or a load the page's policy refused fails the test."""
    opened: list[Watched] = []

    def open_page(offline: bool = False) -> Watched:
        context = chromium.new_context(offline=offline, viewport={"width": 1400, "height": 1000})
        context.add_init_script(WATCH)
        opened.append(Watched(context))
        return opened[-1]

    yield open_page
    for watched in opened:
        watched.trouble += watched.page.evaluate("window.esTrouble || []")
        watched.context.close()
        assert watched.trouble == []


def shot(page, name: str, tmp_path: Path) -> None:
    folder = Path(os.environ.get("ENVSCALER_SCREENSHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")  # the sticky tab bar would sit mid-page otherwise
    page.screenshot(path=str(folder / f"viewer-{name}.png"), full_page=True)


@pytest.fixture
def served_url(scripted_run):
    server = ViewerServer(RunViewer(lambda: read_run_folder(scripted_run), scripted_run), 0)
    server.start()
    try:
        yield server.url
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def exported_url(scripted_run, tmp_path):
    out = tmp_path / "run.html"
    assert main(["view", str(scripted_run), "--export", str(out)]) == 0
    return out.as_uri()


def rows(page) -> list[str]:
    return page.locator(".grid-row").evaluate_all("rows => rows.map(r => r.dataset.key)")


def test_episode_list_filters_and_sorts(served_url, watch, tmp_path):
    from playwright.sync_api import expect

    page = watch().page
    page.goto(served_url + "#/episodes")
    count = page.locator("#episode-count")
    expect(count).to_contain_text("5 episodes of 5", timeout=TIMEOUT)
    shot(page, "episodes", tmp_path)
    page.select_option("select[name=mode]", "=user")
    expect(count).to_contain_text("1 episode of 5")
    assert rows(page) == ["rollouts_user/library-checkout#0"]
    page.get_by_role("button", name="clear filters").click()
    expect(count).to_contain_text("5 episodes of 5")
    page.select_option("select[name=outcome]", "=failed")
    expect(count).to_contain_text("2 episodes of 5")
    assert sorted(rows(page)) == ["rollouts_task/library-return#0", "rollouts_task/library-return#1"]
    page.select_option("select[name=outcome]", "")
    page.fill("input[name=rmin]", "0.5")
    page.press("input[name=rmin]", "Enter")
    expect(count).to_contain_text("3 episodes of 5")
    page.fill("input[name=rmin]", "")
    page.press("input[name=rmin]", "Enter")
    page.fill("input[name=q]", "return#1")
    page.press("input[name=q]", "Enter")
    expect(count).to_contain_text("1 episode of 5")
    page.fill("input[name=q]", "")
    page.press("input[name=q]", "Enter")
    assert rows(page) == [  # by name by default, "#2" before "#10", whatever order the file has
        "rollouts_task/library-checkout#0",
        "rollouts_task/library-checkout#1",
        "rollouts_task/library-return#0",
        "rollouts_task/library-return#1",
        "rollouts_user/library-checkout#0",
    ]
    page.locator(".grid-head span", has_text="reward").click()
    expect(count).to_contain_text("5 episodes of 5")
    assert rows(page)[:3] == [
        "rollouts_task/library-return#0",
        "rollouts_task/library-return#1",
        "rollouts_task/library-checkout#0",
    ]
    page.locator(".grid-head span", has_text="reward").click()  # again: descending, ties still by name
    assert rows(page)[-3:] == [
        "rollouts_user/library-checkout#0",
        "rollouts_task/library-return#0",
        "rollouts_task/library-return#1",
    ]
    assert "sort=reward" in page.url and "desc=1" in page.url  # the filters and order are in the link
    page.reload()
    assert rows(page)[-1] == "rollouts_task/library-return#1"


def test_a_failed_episode_shows_calls_observations_diffs_and_failing_checks(served_url, watch, tmp_path):
    from playwright.sync_api import expect

    page = watch().page
    page.goto(served_url + "#/episodes?outcome=failed")
    page.locator(".grid-row", has_text="library-return#0").click()
    steps = page.locator(".step")
    expect(steps).to_have_count(3, timeout=TIMEOUT)
    expect(steps.nth(0)).to_contain_text('get_book({"book_id":"B2"})')
    expect(steps.nth(0)).to_contain_text('"title": "Emma"')  # the observation
    expect(steps.nth(1)).to_contain_text("replace /books/B1/status")  # the state diff
    expect(steps.nth(1)).to_contain_text('add /loans/L2 = {"loan_id":"L2","book_id":"B1","member_id":"M2"}')
    expect(steps.nth(2)).to_contain_text("unknown_tool")
    expect(page.locator(".msg.assistant").first).to_contain_text("→ get_book")
    checks = page.locator("#checks .check-false")
    expect(checks).to_have_count(2)
    expect(checks.nth(0)).to_contain_text("B2 is available")
    checks.nth(0).locator("summary").click()
    expect(checks.nth(0).locator("pre")).to_contain_text("final_state['books']['B2']['status'] == 'available'")
    expect(page.locator(".reward-box")).to_contain_text("not solved")
    shot(page, "failed-episode", tmp_path)
    page.get_by_role("link", name="next").click()
    expect(page.locator("h1")).to_contain_text("library-return#1")
    page.get_by_role("link", name="← episodes").click()
    expect(page.locator("#episode-count")).to_contain_text("2 episodes of 5")  # the filter came back
    page.goto(served_url + "#/episode/rollouts_task%2Flibrary-checkout%231?sort=calls")  # a link to one
    expect(page.locator(".nav-row")).to_contain_text("3 of 5")  # its place in the list the link names
    page.get_by_role("link", name="next").click()
    expect(page.locator("h1")).to_contain_text("library-return#0")  # 2 calls, then 3; ties by name


def test_charts_render(served_url, watch, tmp_path):
    from playwright.sync_api import expect

    page = watch().page
    page.goto(served_url + "#/charts")
    expect(page.locator("#chart-count")).to_contain_text("Over 5 episodes", timeout=TIMEOUT)
    heights = page.locator("#chart-reward rect.bar").evaluate_all("bars => bars.map(b => +b.getAttribute('height'))")
    assert len(heights) == 11 and heights[0] > 0 and heights[10] > heights[0] and sum(h > 0 for h in heights) == 2
    expect(page.locator("#chart-passk circle")).to_have_count(5)  # all and task mode: k = 1, 2; user mode: k = 1
    expect(page.locator("#chart-tools")).to_contain_text("lose_book")
    expect(page.locator("#chart-tools rect.bar.bad")).to_have_count(3)
    expect(page.locator("#chart-errors")).to_contain_text("unknown_tool")
    expect(page.locator("#chart-terminations")).to_contain_text("user_stop")
    expect(page.locator("#chart-difficulty")).to_contain_text("No scenario here records a difficulty")
    expect(page.locator("#failing-checks")).to_contain_text("B2 is available")
    shot(page, "charts", tmp_path)
    page.select_option("select[name=mode]", "=task")
    expect(page.locator("#chart-count")).to_contain_text("Over 4 episodes")
    expect(page.locator("#chart-terminations")).not_to_contain_text("user_stop")


def test_exported_file_opens_offline_and_requests_nothing(exported_url, watch, tmp_path):
    from playwright.sync_api import expect

    watched = watch(offline=True)
    page = watched.page
    page.goto(exported_url)
    expect(page.locator(".cards")).to_contain_text("episodes", timeout=TIMEOUT)
    shot(page, "run", tmp_path)
    for tab, text in [("envs", "LibraryLoanSystem"), ("scenarios", "library-return"), ("problems", "read in full")]:
        page.locator(f"#tab-{tab}").click()
        expect(page.locator("#view")).to_contain_text(text)
    page.locator("#tab-scenarios").click()
    page.fill("input[name=q]", "emma")
    page.press("input[name=q]", "Enter")
    expect(page.locator("#scenario-count")).to_contain_text("1 scenario of 2")
    assert rows(page) == ["library-return"]
    page.goto(exported_url + "#/env/library")
    expect(page.locator("#view")).to_contain_text("checkout_book", timeout=TIMEOUT)  # a part, decompressed
    page.goto(exported_url + "#/scenario/library-return")
    expect(page.locator("#view")).to_contain_text("return_book", timeout=TIMEOUT)
    page.goto(exported_url + "#/episode/" + "rollouts_user%2Flibrary-checkout%230")
    expect(page.locator(".step")).to_have_count(1, timeout=TIMEOUT)
    page.locator("summary", has_text="its instructions and turns").click()
    expect(page.locator("#view")).to_contain_text("Lend the book B1")
    shot(page, "user-episode", tmp_path)
    page.goto(exported_url + "#/charts")
    expect(page.locator("#chart-reward svg")).to_be_visible()
    assert {url.split("#")[0] for url in watched.requests} == {exported_url}


def test_bad_input_is_reported_on_the_page(scripted_run, watch, tmp_path):
    from playwright.sync_api import expect

    run = make_bad_run(scripted_run, tmp_path / "run")
    out = tmp_path / "bad.html"
    assert main(["view", str(run), "--export", str(out)]) == 0
    page = watch().page
    page.goto(out.as_uri())
    banner = page.locator("#banner")
    expect(banner).to_contain_text("3 problems reading this run", timeout=TIMEOUT)
    expect(banner).to_contain_text("rollouts_task/trajectories.jsonl:5")
    shot(page, "bad-input", tmp_path)
    page.locator("#tab-problems").click()
    table = page.locator("#view table")
    expect(table).to_contain_text("broken line")
    expect(table).to_contain_text("not valid JSON")
    expect(table).to_contain_text("missing stage")
    expect(table).to_contain_text("no scenarios.jsonl")
    expect(table).to_contain_text("library-checkout#7 has no reward")
    page.goto(out.as_uri() + "#/episodes?outcome=no%20reward")
    expect(page.locator("#episode-count")).to_contain_text("1 episode of 6")
    page.locator(".grid-row").first.click()
    expect(page.locator("#view")).to_contain_text("This trajectory has no reward", timeout=TIMEOUT)
    expect(page.locator(".step")).to_have_count(2)  # its transcript is shown all the same
    page.goto(out.as_uri() + "#/charts")
    expect(page.locator("#chart-reward")).to_contain_text("1 without a reward left out")


def test_an_arena_shows_its_curve_per_round(scripted_run, watch, tmp_path):
    from playwright.sync_api import expect

    arena = make_arena_run(tmp_path / "arena", scripted_run)
    out = tmp_path / "arena.html"
    assert main(["view", str(arena), "--export", str(out)]) == 0
    page = watch().page
    page.goto(out.as_uri())
    expect(page.locator("#view")).to_contain_text("chosen levels", timeout=TIMEOUT)
    expect(page.locator("#view")).to_contain_text("2 → 2")
    expect(page.locator("#view")).to_contain_text("never solved 1, always solved 0")
    page.goto(out.as_uri() + "#/charts")
    curve = page.locator("#chart-arena")
    expect(curve.locator("polyline")).to_have_count(2)  # one line per round
    expect(curve.locator("circle")).to_have_count(5)
    expect(curve.locator(".legend")).to_contain_text("round 1 (chose 2)")
    expect(curve.locator("rect.band")).to_have_count(1)
    levels = page.locator("#chart-difficulty")
    expect(levels.locator("rect.bar")).to_have_count(2)  # calls 1 and 2
    expect(levels).to_contain_text("3/3")  # the checkout scenario (1 call): 2 task-mode and 1 user-mode episodes
    expect(levels).to_contain_text("0/2")  # the return scenario (2 calls)
    levels.locator("select[name=level]").select_option("distractors")
    expect(page.locator("#chart-difficulty")).to_contain_text("difficulty: distractors")
    shot(page, "arena-charts", tmp_path)
    page.goto(out.as_uri() + "#/scenario/library-return")
    expect(page.locator("#view")).to_contain_text("calls 2 · records 2 · lookups 1 · links 1 · tools 2 · distractors 1")
    expect(page.locator("#view")).to_contain_text("0.5 over 4 episodes of scripted")


def test_an_episode_that_changed_more_than_the_reference_is_marked(scripted_run, watch, tmp_path):
    from playwright.sync_api import expect

    run = copy_run(scripted_run, tmp_path / "run")
    path = run / "rollouts_task" / "trajectories.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        if record["id"] == "library-return#0":  # it lent B1 as well: outside what the reference changes
            record["reward"].update(checklist=0.0, collateral=["books/B1", "loans/L2"])
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "run.html"
    assert main(["view", str(run), "--export", str(out)]) == 0
    page = watch().page
    page.goto(out.as_uri() + "#/episodes")
    page.select_option("select[name=side]", "=changed outside the reference")
    expect(page.locator("#episode-count")).to_contain_text("1 episode of 5", timeout=TIMEOUT)
    page.locator(".grid-row").first.click()
    expect(page.locator("#view")).to_contain_text("collateral changes", timeout=TIMEOUT)
    expect(page.locator(".pill.bad", has_text="books/B1")).to_have_count(1)
    expect(page.locator("#view")).to_contain_text("checklist share")
