"""Selection: summary dedup, thresholds, near duplicates, clustering, embeddings."""

from __future__ import annotations

from envscaler_core.artifacts import EnvDescription
from skel_builder.selection import embed, select


def _desc(i, summary, intro, u=8, m=8, stateful=True):
    return EnvDescription(
        id=f"d{i}",
        task_id=f"t{i}",
        task="t",
        judge_result=stateful,
        environment_summary=summary,
        environment_introduction=intro,
        usefulness=u,
        modelability=m,
    )


DESCS = [
    _desc(1, "Library loan system", "Books members loans of a public library.", m=9),
    _desc(2, "Library loan system", "Books and loans.", m=7),
    _desc(3, "Clinic appointments", "Patients doctors and appointment slots in a clinic.", u=5),
    _desc(4, "Order refunds", "Customers orders payments and refunds of an online shop."),
    _desc(5, "Order refund desk", "Customers orders payments and refunds of an online shop."),
    _desc(6, "Bank accounts", "Accounts balances and transfers between customers of a bank."),
    _desc(7, "Poems", "", stateful=False),
]


def test_select_dedups_thresholds_and_near_duplicates():
    out = {d.id: d for d in select(DESCS, min_usefulness=7, min_modelability=7, target_count=0, near_duplicate=0.7)}
    assert out["d1"].selected and not out["d2"].selected and "same summary" in out["d2"].selection_reason
    assert "below" in out["d3"].selection_reason
    assert out["d4"].selected != out["d5"].selected
    assert "near duplicate" in (out["d5"].selection_reason + out["d4"].selection_reason)
    assert out["d7"].selection_reason == "judged not stateful"


def test_clustering_to_target_count():
    out = select(DESCS, min_usefulness=7, min_modelability=7, target_count=2, near_duplicate=0.99)
    assert sum(d.selected for d in out) == 2
    assert any("cluster" in d.selection_reason for d in out)


def test_embeddings_from_an_endpoint(scripted):
    vectors = embed(scripted.base_url, "sk", "emb", ["a", "b", "c"])
    assert vectors.shape == (3, 16)
    out = select(
        DESCS,
        min_usefulness=7,
        min_modelability=7,
        target_count=2,
        near_duplicate=0.999,
        vectors=embed(scripted.base_url, "sk", "emb", [d.id for d in DESCS]),
    )
    assert sum(d.selected for d in out) == 2
