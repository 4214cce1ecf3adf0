"""Generated code cannot read the user's files, write outside its folder or forge a verdict.

One test per attack (``row1``-``row4``) and per guarantee (items 1-4). Runs as root (``make test``) and
as a throw-away unprivileged user (``make test-sandbox-user``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

from envscaler_core.runtime import EnvSession, SandboxLimits, WorkerPool, posture, run_checkers
from envscaler_core.runtime import worker as worker_mod
from envscaler_core.runtime.jailed.filesystem import checkout_root
from envscaler_core.runtime.jailed.landlock import abi_version

from .conftest import FAST_LIMITS, hostile

pytestmark = pytest.mark.timeout(60)
CHECKOUT = checkout_root() or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FORGED = {"ok": True, "status": "true", "error": None}


def _call(pool, body, imports="import os", arg=""):
    session = EnvSession(pool, hostile(body, imports), "Hostile")
    try:
        return session.call("attack", {"arg": arg})
    finally:
        session.close()


def _read_attempt(path_expr: str) -> str:
    return (
        f"try:\n    return {{'success': True, 'data': open({path_expr}).read()}}\n"
        f"except OSError as exc:\n    return {{'success': True, 'data': 'denied: ' + type(exc).__name__}}"
    )


# --- attacks -----------------------------------------------------------------------------------


def test_row1_checkout_secrets_are_not_readable_and_not_on_the_path(sandbox_pool):
    secret = f"sk-planted-{uuid.uuid4().hex}"
    planted = os.path.join(CHECKOUT, f".env-integrity-test-{uuid.uuid4().hex[:8]}")
    with open(planted, "w") as fh:
        fh.write(f"OPENAI_API_KEY={secret}\n")
    body = (
        "found = []\n"
        "folders = [p for p in os.environ.get('PYTHONPATH', '').split(os.pathsep) if p] "
        "+ list(sys.path) + [arg.rsplit('/', 1)[0]]\n"
        "for folder in folders:\n"
        "    for name in ('.env', arg.rsplit('/', 1)[1]):\n"
        "        try:\n"
        "            found.append(open(os.path.join(folder, name)).read())\n"
        "        except OSError:\n"
        "            pass\n"
        "return {'success': True, 'data': {'found': found, "
        "'pythonpath': os.environ.get('PYTHONPATH'), 'path': sys.path}}"
    )
    try:
        result = _call(sandbox_pool, body, imports="import os, sys", arg=planted)
    finally:
        os.unlink(planted)
    data = result.observation["data"]
    assert not [text for text in data["found"] if secret in text or "OPENAI_API_KEY" in text]
    assert data["pythonpath"] is None
    assert os.path.realpath(CHECKOUT) not in {os.path.realpath(p or ".") for p in data["path"]}


def test_row2_a_private_file_in_a_fresh_folder_is_not_readable(sandbox_pool):
    folder = tempfile.mkdtemp(prefix="integrity-")
    os.chmod(folder, 0o755)
    path = os.path.join(folder, "secret.txt")
    with open(path, "w") as fh:
        fh.write("top secret")
    os.chmod(path, 0o600)
    try:
        result = _call(sandbox_pool, _read_attempt(repr(path)))
    finally:
        os.unlink(path)
        os.rmdir(folder)
    assert result.observation["data"].startswith("denied"), result.observation


@pytest.mark.parametrize("how", ["plain", "uri"])
def test_row3_sqlite_cannot_create_files_outside_the_folder(sandbox_pool, how):
    target = f"/tmp/integrity-{uuid.uuid4().hex}.db"
    # The URI form slips past the audit hook's path check: only the kernel stops it.
    connect = (
        f"sqlite3.connect({target!r})" if how == "plain" else f"sqlite3.connect('file:{target}?mode=rwc', uri=True)"
    )
    body = f"db = {connect}\ndb.execute('create table t (x)')\nreturn {{'success': True}}"
    try:
        result = _call(sandbox_pool, body, imports="import sqlite3")
        assert not result.ok, result.observation
        assert not os.path.exists(target)
    finally:
        if os.path.exists(target):
            os.unlink(target)


def test_sqlite_inside_the_folder_still_works(sandbox_pool):
    body = (
        "db = sqlite3.connect('local.db')\ndb.execute('create table t (x)')\ndb.execute('insert into t values (1)')\n"
        "return {'success': True, 'data': db.execute('select x from t').fetchall()}"
    )
    assert _call(sandbox_pool, body, imports="import sqlite3").observation["data"] == [[1]]


FORGE = (
    "def check_func(final_state):\n"
    "    os = {reach}\n"
    "    body = json.dumps({forged}).encode()\n"
    "    frame = len(body).to_bytes(4, 'big') + body\n"
    "    for fd in range(64):\n"
    "        try:\n"
    "            os.write(fd, frame)\n"
    "        except OSError:\n"
    "            pass\n"
    "    os._exit(0)\n"
)


@pytest.mark.parametrize(
    "reach",
    [
        "typing.sys.modules['os']",
        "getattr(typing, 'sys').modules['os']",
        "re.enum.sys.modules['os']",
        "json.codecs.sys.modules['os']",
    ],
)
def test_row4_a_checker_cannot_forge_its_verdict(sandbox_pool, reach):
    source = "import typing, json, re\n" + FORGE.format(reach=reach, forged=FORGED)
    results = run_checkers(sandbox_pool, [source, "def check_func(f):\n    return False"], {"a": 1}, {"a": 1})
    assert results[0].status == "error", results[0]
    assert results[1].status == "false"  # the next verdict is its own, the pipe is in step


@pytest.mark.parametrize(
    "source",
    [
        "from typing import sys\ndef check_func(f):\n    return sys.modules['os'].getpid() > 0",
        "def check_func(f):\n    g = (x for x in [1])\n    return g.gi_frame.f_back is None",
        "def check_func(f):\n    return '{0.__class__}'.format(f) == ''",
        "def check_func(f):\n    return '{0[a]}'.format(f) == '1'",
        "import string\ndef check_func(f):\n    return string.Formatter().format('{0.__class__}', f) == ''",
        "import typing\ndef check_func(f):\n"
        "    def g(x: 'exec(\"import os\")'): pass\n    return typing.get_type_hints(g) == {}",
        "def check_func(f):\n    return f.__class__.__base__ is object",
        "def check_func(f):\n    _getattr_ = lambda o, n: 1\n    return True",
        "def check_func(f):\n    return __builtins__ is not None",
    ],
)
def test_restricted_checkers_refuse_the_ways_out(sandbox_pool, source):
    result = run_checkers(sandbox_pool, [source], {"a": 1}, {"a": 1})[0]
    assert result.status == "error", result


def test_honest_checkers_keep_their_verdicts(sandbox_pool):
    sources = [
        "import re, math\nfrom typing import Any, Dict\n"
        "def check_func(final_state: Dict[str, Any], initial_state=None) -> bool:\n"
        "    books = final_state.get('books', {})\n    total = 0\n    for _, b in books.items():\n        total += 1\n"
        "    names = sorted(k for k in books if re.match(r'b\\d', k))\n"
        "    return total == len(names) == 1 and math.isclose(1.0, 1.0) and f'{total}' == '1'",
        "from datetime import datetime\ndef check_func(final_state):\n"
        "    return datetime.strptime('2026-01-02', '%Y-%m-%d').day == 2 "
        "and any(v['status'] == 'out' for v in final_state['books'].values())",
        "def check_func(final_state):\n    seen = {}\n    seen['x'] = [1]\n"
        "    seen['x'] += [2]\n    a, b = seen['x']\n    return (a, b) == (1, 2)",
        "def check_func(final_state):\n    return '{} {n:>3}'.format('a', n=7) == 'a   7'",
        "def _norm(text):\n    return text.strip().lower()\n"
        "def check_func(final_state):\n    _seen = _norm(' OUT ')\n"
        "    return _seen == 'out' and type(final_state) is dict",
    ]
    results = run_checkers(sandbox_pool, sources, {"books": {"b1": {"status": "out"}}}, {"books": {}})
    assert [r.status for r in results] == ["true"] * 5, results


# --- item 1: a kernel-enforced file allow-list -----------------------------------------------


def test_sessions_are_confined_by_landlock(sandbox_pool):
    session = EnvSession(sandbox_pool, hostile("return {'success': True}"), "Hostile")
    try:
        report = session.worker.posture
    finally:
        session.close()
    if abi_version() >= 1:
        assert report["filesystem"] == "landlock" and report["landlock_abi"] == abi_version()
    if abi_version() >= 4:
        assert report["tcp"] == "denied by Landlock"
    if abi_version() >= 6:
        assert report["scoped_signals"] and report["scoped_abstract_sockets"]
    assert not report["problems"]


def test_reads_outside_the_allow_list_are_denied_by_the_kernel(sandbox_pool):
    # /etc/hostname is world-readable: only the allow-list stops it (the audit hook has no read rule).
    assert _call(sandbox_pool, _read_attempt("'/etc/hostname'")).observation["data"].startswith("denied")


def test_mount_namespace_fallback():
    """The fallback for kernels without Landlock: only root (or root in the worker's user namespace) has it."""
    limits = FAST_LIMITS.model_copy(update={"file_confinement": "mount_ns"})
    secret = os.path.join(CHECKOUT, f".env-integrity-test-{uuid.uuid4().hex[:8]}")
    with open(secret, "w") as fh:
        fh.write("OPENAI_API_KEY=sk-x")
    try:
        with WorkerPool(1, limits) as pool:
            data = _call(pool, _read_attempt(repr(secret))).observation["data"]
            write = _call(pool, "open('x', 'w').write('ok')\nreturn {'success': True, 'data': open('x').read()}")
            worker = pool.acquire()
            hidden = worker.posture["hidden"]
            pool.release(worker)
    except Exception as exc:  # noqa: BLE001 - without any root the worker must refuse, not run weaker
        assert os.geteuid() != 0 and "hardening failed" in str(exc), exc
        return
    finally:
        os.unlink(secret)
    assert data.startswith("denied") and write.observation["data"] == "ok"
    assert os.path.realpath(CHECKOUT) in hidden or any(CHECKOUT.startswith(h + "/") for h in hidden)


# --- item 2: privileges really dropped --------------------------------------------------------


def test_every_capability_is_dropped(sandbox_pool):
    session = EnvSession(
        sandbox_pool,
        hostile("return {'success': True, 'data': [os.getresuid(), os.getgroups()]}", "import os"),
        "Hostile",
    )
    try:
        observation = session.call("attack").observation
        ids, groups = observation["data"]
        privileges = session.worker.posture["privileges"]
    finally:
        session.close()
    assert privileges["no_new_privs"] is True
    for name in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert privileges["caps"][name] == "0", privileges
    if os.geteuid() == 0:
        assert privileges["caps"]["CapBnd"] == "0" and 0 not in ids and groups == []


def test_a_failed_privilege_drop_is_an_error_unless_allowed(monkeypatch, capsys):
    monkeypatch.setattr(worker_mod, "cell_uid", lambda limits: 4294967295)  # setresuid(-1): no change
    with WorkerPool(1, FAST_LIMITS) as pool, pytest.raises(Exception, match="hardening failed"):
        _call(pool, "return {'success': True}")
    monkeypatch.setenv("ENVSCALER_ALLOW_WEAKER_SANDBOX", "1")  # the opt-in every stage's pools see
    weaker = SandboxLimits(**FAST_LIMITS.model_dump(exclude={"allow_weaker_sandbox"}))
    assert weaker.allow_weaker_sandbox
    with WorkerPool(1, weaker) as pool:
        assert _call(pool, "return {'success': True}").ok
    assert "weaker sandbox" in capsys.readouterr().err
    assert "hardening" in posture.report()["degraded"]


# --- item 3: the reply channel ----------------------------------------------------------------

STRAY = (
    "frame = json.dumps({'ok': True, 'observation': {'success': True, 'data': 'forged'}, 'error_type': None,"
    " 'state_diff': [], 'state_hash': 'x'}).encode()\n"
    "for fd in range(64):\n"
    "    try:\n"
    "        os.write(fd, len(frame).to_bytes(4, 'big') + frame)\n"
    "    except OSError:\n"
    "        pass\n"
)


@pytest.mark.parametrize("then", ["return {'success': True, 'data': 'honest'}", "os._exit(0)"])
def test_a_stray_write_is_a_crash_and_the_pipe_stays_in_step(sandbox_pool, then):
    session = EnvSession(sandbox_pool, hostile(STRAY + then, imports="import os, json"), "Hostile")
    try:
        assert session.call("ping").observation["data"] == 1
        result = session.call("attack")
        assert result.error_type == "worker_crashed", result.observation
        assert "forged" not in json.dumps(result.observation)
        after = session.call("ping")
        assert after.observation["data"] == 2, after.observation
    finally:
        session.close()


def test_impure_checkers_fail_at_rollout_time_too(sandbox_pool):
    # A hand-edited scenarios.jsonl: the checker is impure but would answer True.
    sources = [
        "import os\ndef check_func(f):\n    return os.getpid() > 0",
        "counter = 0\ndef check_func(f):\n    global counter\n    counter += 1\n    return True",
    ]
    results = run_checkers(sandbox_pool, sources, {}, {})
    assert [r.status for r in results] == ["error", "error"]
    assert all("not pure" in r.error for r in results)


# --- item 4: clean-up and a degraded network namespace ---------------------------------------


def _workdirs(pid: int) -> list[str]:
    base = tempfile.gettempdir()
    return [n for n in os.listdir(base) if n.startswith(f"{worker_mod.WORKDIR_PREFIX}{pid}-")]


def test_no_folder_survives_a_killed_parent():
    script = (
        "from envscaler_core.runtime import EnvSession, WorkerPool, SandboxLimits\n"
        "from tests.test_core.conftest import hostile\n"
        "pool = WorkerPool(2, SandboxLimits(call_timeout_s=2))\n"
        "s = EnvSession(pool, hostile('return {}'), 'Hostile')\n"
        "print('ready', flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=CHECKOUT, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        assert len(_workdirs(proc.pid)) == 2
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    deadline = time.monotonic() + 10
    while _workdirs(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _workdirs(proc.pid) == []


def test_folders_of_dead_parents_are_swept():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = os.path.join(tempfile.gettempdir(), f"{worker_mod.WORKDIR_PREFIX}{dead.pid}-stale")
    os.makedirs(stale, exist_ok=True)
    assert f"{worker_mod.WORKDIR_PREFIX}{dead.pid}-stale" in worker_mod.sweep_stale_workdirs()
    assert not os.path.exists(stale)


def test_a_degraded_network_namespace_is_loud_and_in_the_manifest(monkeypatch, capsys, tmp_path):
    from envscaler_core.config import StageConfig
    from envscaler_core.runner import StageContext, update_manifest
    from envscaler_core.store import read_json

    monkeypatch.setattr(worker_mod.shutil, "which", lambda name: None)
    monkeypatch.setattr(worker_mod, "_NETNS", {})
    monkeypatch.setitem(posture._STATE, "degraded", {})
    assert worker_mod.netns_prefix() is None
    assert "WARNING: envscaler sandbox: cannot create a network namespace" in capsys.readouterr().err
    ctx = StageContext("test", StageConfig(out=tmp_path))
    stage = read_json(update_manifest(ctx, {}))["stages"]["test"]
    assert "network" in stage["sandbox"]["degraded"]


# --- through the project's command ------------------------------------------------------------


def test_the_call_command_contains_the_table_rows(tmp_path, capsys):
    from envscaler_core.artifacts import EnvSpec
    from interact_with_env.__main__ import main

    secret = f"sk-planted-{uuid.uuid4().hex}"
    planted = os.path.join(CHECKOUT, f".env-integrity-test-{uuid.uuid4().hex[:8]}")
    db = f"/tmp/integrity-{uuid.uuid4().hex}.db"
    body = (
        "out = []\n"
        "for attempt in (lambda: open(arg).read(), lambda: sqlite3.connect("
        + repr(db)
        + ").execute('create table t (x)')):\n"
        "    try:\n"
        "        out.append(str(attempt()))\n"
        "    except Exception as exc:\n"
        "        out.append('denied: ' + type(exc).__name__)\n"
        "return {'success': True, 'data': out}"
    )
    spec = EnvSpec(
        id="hostile", env_id="hostile", env_class_name="Hostile", env_class_code=hostile(body, "import sqlite3")
    )
    envs = tmp_path / "envs.jsonl"
    envs.write_text(spec.model_dump_json() + "\n")
    with open(planted, "w") as fh:
        fh.write(f"OPENAI_API_KEY={secret}\n")
    try:
        assert main(["call", "--envs", str(envs), "--tool", "attack", "--args", json.dumps({"arg": planted})]) == 0
    finally:
        os.unlink(planted)
    out = capsys.readouterr().out
    assert secret not in out and not os.path.exists(db)
    assert [x.split(":")[0] for x in json.loads(out)["observation"]["data"]] == ["denied", "denied"]


def test_unconfined_reads_are_loud_and_in_the_manifest(capsys, monkeypatch):
    monkeypatch.setitem(posture._STATE, "degraded", {})
    with WorkerPool(1, FAST_LIMITS.model_copy(update={"file_confinement": "off"})) as pool:
        assert _call(pool, "return {'success': True}").ok
    assert "WARNING: envscaler sandbox: reads are not confined" in capsys.readouterr().err
    assert "filesystem" in posture.report()["degraded"]


def test_a_do_nothing_episode_with_a_forging_checker_scores_nothing(scripted_env, tmp_path):
    """Row 4 end to end: a hand-edited scenarios.jsonl whose checker forges 'true' frames."""
    from envscaler_core.artifacts import Trajectory
    from envscaler_core.store import JsonlStore
    from envscaler_core.testing.scripted_server import Reply
    from interact_with_env.__main__ import main
    from tests.test_interact_with_env.helpers import ENVS, SCENARIOS, planned

    scenario = json.loads(SCENARIOS.read_text().splitlines()[0])
    forging = "import typing, json\n" + FORGE.format(reach="typing.sys.modules['os']", forged=FORGED)
    scenario["checklist_with_func"] = [{"check_item": "forged", "check_func": forging}]
    scenarios = tmp_path / "scenarios.jsonl"
    scenarios.write_text(json.dumps(scenario) + "\n")
    scripted_env.policy = planned([Reply.text("Task Completed.")])  # does nothing
    assert (
        main(
            [
                "run",
                "--envs",
                str(ENVS),
                "--scenarios",
                str(scenarios),
                "--out",
                str(tmp_path / "out"),
                "--set",
                "llm.default.max_retries=0",
            ]
        )
        == 0
    )
    (traj,) = JsonlStore(tmp_path / "out" / "trajectories.jsonl", Trajectory).read_all()
    assert traj.reward.final < 1.0 and traj.reward.checker_errors == 1


def test_sandbox_never_wipes_a_folder_that_is_not_its_own(tmp_path):
    """A host whose working folder is not a sandbox folder (``/tmp``, the checkout) leaves it alone."""
    from envscaler_core.runtime.jailed.host import wipe
    from envscaler_core.runtime.wire.folders import is_own_folder

    outside = tmp_path / "checkout"
    outside.mkdir()
    (outside / "keep.txt").write_text("x")
    own = tmp_path / "envscaler-sbx-1-abc"
    own.mkdir()
    (own / "scratch.txt").write_text("x")
    wipe(str(outside))
    wipe(str(own))
    assert (outside / "keep.txt").exists()
    assert not (own / "scratch.txt").exists()
    assert not is_own_folder("/tmp") and not is_own_folder("/")


def test_workers_of_two_processes_never_share_a_uid():
    """A template's RLIMIT_NPROC counts every process of its uid: two runs side by side (two
    make test, or a stage and its pipeline) whose workers shared a uid failed to fork cells."""
    from envscaler_core.runtime.worker import uid_of_worker

    for pid_max in (32_768, 4_194_304):
        blocks = [{uid_of_worker(pid, n, pid_max) for n in range(1_023)} for pid in (1, 2, 97, 98, pid_max - 1)]
        assert all(len(b) == 1_023 for b in blocks)
        assert not set.intersection(*blocks[:2]) and not blocks[2] & blocks[3]
        assert max(uid_of_worker(pid_max - 1, n, pid_max) for n in range(70_000)) < 2**32 - 1
