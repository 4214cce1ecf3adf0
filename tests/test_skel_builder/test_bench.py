"""bench/yield_skel.py against the scripted server: the report's numbers add up."""

from __future__ import annotations

import pytest

from tests.bench_scripts import bench_module

from .library_world import LibraryPolicy

pytestmark = pytest.mark.perf


def _bench():
    return bench_module("yield_skel")


def test_yield_report_with_and_without_scaffold(scripted_env, tmp_path):
    scripted_env.policy = LibraryPolicy()
    bench = _bench()
    plain = bench.run_variant("plain", tmp_path, 2, ["rounds=8", "crud_scaffold=false"], None)
    scaffold = bench.run_variant("scaffold", tmp_path, 2, ["rounds=8", "crud_scaffold=true"], None)
    assert plain["envs_kept"] == 2 and plain["methods_asked"] == 8 and plain["first_try_ok"] == 8
    assert plain["calls_per_kept_env"] == round(plain["llm_calls"] / 2, 1)
    # get_book is a routine method now: the model writes 3 domain methods per env, 15 are emitted
    assert scaffold["envs_kept"] == 2 and scaffold["methods_asked"] == 6
    assert scaffold["kept_envs"] == ["LibraryLoanSystem (18 tools)"] * 2
