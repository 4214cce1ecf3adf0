"""Typed configuration of the skel_builder stage (all budgets in one place)."""

from __future__ import annotations

from typing import Literal

from envscaler_core.config import StageConfig


class SkelBuilderConfig(StageConfig):
    """Budgets and switches of mine -> synthesize -> inspect.

    Defaults follow the original EnvScaler (thresholds 7/7, 30 inspection rounds, keep at 0.85);
    the repair/oracle fields are this re-implementation's additions.
    """

    # ---- mining
    judge: bool = True  # False: take every task as stateful (curated files such as the seed tasks)
    languages_ascii_only: bool = True
    drop_multimodal: bool = True
    drop_keywords: list[str] = [  # noqa: RUF012 - pydantic copies a field's default for each instance
        "Role definition:",
        "USD",
        "ETH",
        "Bitcoin",
        "Ethereum",
        "@",
        ".com",
        "http:",
        "https:",
    ]
    min_task_chars: int = 15
    min_usefulness: int = 7
    min_modelability: int = 7
    target_count: int = 0  # 0 = keep every env that passes the thresholds (no clustering)
    near_duplicate_similarity: float = 0.7  # cosine; TF-IDF scale (raise it for embeddings)
    embedding_model: str | None = None  # set (with an endpoint) to cluster on embeddings
    # ---- synthesis
    max_entities: int = 5
    max_operations: int = 12
    crud_scaffold: bool = False  # emit get/list/create/update/delete deterministically
    method_samples: int = 3  # fresh samples per method until one passes the executable gate
    method_temperature: float = 0.2
    sample_temperature: float = 0.7
    plan_temperature: float = 0.3
    rule_predicates: bool = True
    # ---- inspection
    rounds: int = 30
    threshold: float = 0.85
    cap_per_tool: int = 10
    llm_tester: bool = True
    llm_checker: bool = True
    llm_fail_counts: bool = True  # an LLM "Fail" fails a round that passed every oracle
    discount_uncalibrated_checker: bool = True  # ...unless its agreement with the oracles is at chance
    repair_rounds: int = 2  # inspect -> fix failing methods -> re-inspect, this many times
    # After a failed method: "repair" (the exact failure fed back), "sample" (fresh samples) or
    # "both" (one repair, then samples). Samples are the default: a small model shown its own
    # failing method tends to reproduce the same error, while a fresh sample often passes.
    repair_strategy: Literal["repair", "sample", "both"] = "sample"
    # The paper's keep-rule decides: (pass + warning) / total >= threshold over the rounds of every
    # inspected tool, before any pruning. Pruning tools that still fail is an explicit
    # option for small-model presets; when on, an env is kept only if every entity that had a
    # state-changing tool still has one (the report carries both scores).
    prune_failing_tools: bool = False
    min_tools: int = 3
    tester_temperature: float = 0.5
    checker_temperature: float = 0.0
    sandbox_workers: int = 2
    seed: int = 0
