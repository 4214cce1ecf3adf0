import os
import signal
import subprocess
import sys
import textwrap

import pytest

from envscaler_core.artifacts import EnvSpec, Scenario, SourceTask, Trajectory
from envscaler_core.store import ArtifactError, JsonlStore, read_json, write_json_atomic

pytestmark = pytest.mark.unit


def test_round_trip_every_artifact(tmp_path):
    records = {
        SourceTask: SourceTask(id="t1", task="Cancel order 7", source="seed"),
        EnvSpec: EnvSpec(id="env_1", env_class_name="X", env_class_code="class X: pass"),
        Scenario: Scenario(id="s1", env_id="env_1", init_config={"a": {"b": 1}}, task="do"),
        Trajectory: Trajectory(
            id="s1#0", scenario_id="s1", env_id="env_1", messages=[{"role": "user", "content": "hi"}]
        ),
    }
    for model, record in records.items():
        store = JsonlStore(tmp_path / f"{model.__name__}.jsonl", model)
        store.append(record)
        assert store.read_all() == [record]
    assert records[EnvSpec].env_id == "env_1" and records[Scenario].task_id == "s1"


def test_bad_line_names_file_line_and_error(tmp_path):
    path = tmp_path / "tasks.jsonl"
    good = SourceTask(id="a", task="x").model_dump_json()
    path.write_text(good + "\n" + '{"id": "b"}\n' + good + "\n")
    with pytest.raises(ArtifactError) as err:
        JsonlStore(path, SourceTask).read_all()
    assert f"{path}:2:" in str(err.value) and "task" in str(err.value)
    path.write_text(good + "\n{not json\n" + good + "\n")
    with pytest.raises(ArtifactError, match=":2: not valid JSON"):
        JsonlStore(path, SourceTask).read_all()


def test_scan_reports_each_bad_line_and_reads_on(tmp_path):
    path = tmp_path / "tasks.jsonl"
    good = SourceTask(id="a", task="x").model_dump_json()
    path.write_text(good + "\n{not json\n\n" + '{"id": "b"}\n' + good + "\n" + '{"id": "c", "ta')
    scanned = list(JsonlStore(path, SourceTask).scan())
    assert [n for n, _, _ in scanned] == [1, 2, 4, 5, 6]
    assert scanned[0][1] == good.encode() and scanned[0][2] == SourceTask(id="a", task="x")
    errors = {n: str(item) for n, _, item in scanned if isinstance(item, ArtifactError)}
    assert errors.keys() == {2, 4, 6}
    assert errors[2].startswith(f"{path}:2: not valid JSON") and "task" in errors[4] and "torn" in errors[6]


def test_torn_tail_from_a_crash_is_skipped_and_repaired(tmp_path):
    path = tmp_path / "tasks.jsonl"
    store = JsonlStore(path, SourceTask)
    store.append(SourceTask(id="a", task="x"))
    with path.open("a") as fh:  # what a process killed mid-write leaves behind
        fh.write('{"id": "b", "task": "hal')
    assert [r.id for r in store.read()] == ["a"]
    store.append(SourceTask(id="c", task="z"))
    assert [r.id for r in store.read()] == ["a", "c"]
    assert path.read_text().count("\n") == 2


def test_writer_killed_during_a_write_never_breaks_the_reader(tmp_path):
    """The kernel kills the writer in the middle of a line (SIGXFSZ once RLIMIT_FSIZE is reached)."""
    path = tmp_path / "tasks.jsonl"
    script = textwrap.dedent(f"""
        import os, resource, signal
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it by default
        from envscaler_core.artifacts import SourceTask
        from envscaler_core.store import JsonlStore
        store = JsonlStore({str(path)!r}, SourceTask)
        for i in range(51):
            store.append(SourceTask(id=str(i), task="x" * 2000))
        size = os.path.getsize({str(path)!r})
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 1000, size + 1000))
        store.append(SourceTask(id="torn", task="y" * 5000))  # 1000 bytes land, then the kernel kills it
        raise SystemExit("not killed")
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=os.getcwd())
    assert proc.returncode == -signal.SIGXFSZ
    data = path.read_bytes()
    assert not data.endswith(b"\n") and data.rsplit(b"\n", 1)[1].startswith(b'{"id":"torn"')  # a real torn line
    store = JsonlStore(path, SourceTask)
    assert [r.id for r in store.read_all()] == [str(i) for i in range(51)]
    store.append(SourceTask(id="after", task="z"))
    assert [r.id for r in store.read_all()][-2:] == ["50", "after"]


def test_resume_helpers_by_id(tmp_path):
    store = JsonlStore(tmp_path / "x.jsonl", SourceTask)
    for i in range(3):
        store.append(SourceTask(id=f"t{i}", task="x"))
    store.append(SourceTask(id="t1", task="newer"))
    assert store.ids() == {"t0", "t1", "t2"}
    assert store.by_id()["t1"].task == "newer"


def test_atomic_json_write(tmp_path):
    path = tmp_path / "m" / "manifest.json"
    write_json_atomic(path, {"a": 1})
    assert read_json(path) == {"a": 1}
    assert [p.name for p in path.parent.iterdir()] == ["manifest.json"]
    path.write_text("{broken")
    with pytest.raises(ArtifactError, match=r"manifest\.json:1"):
        read_json(path)
