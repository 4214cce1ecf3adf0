"""Reliability metrics shared by every stage that runs tasks several times.

* ``pass^k`` as defined by tau-bench / tau2-bench: for a task tried ``n`` times with ``c``
  successes, the chance that ``k`` trials drawn without replacement all succeed is
  ``C(c, k) / C(n, k)``; pass^k of a benchmark is the mean of that over tasks.
* Percentile bootstrap confidence intervals over tasks (tasks are the unit of sampling; trials of
  one task are not independent draws from the benchmark).
* A paired comparison of two runs on the same tasks that says whether the difference is within
  noise (the bootstrap interval of the difference contains zero).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass


def pass_hat_k(successes: int, trials: int, k: int) -> float:
    """``C(c, k) / C(n, k)``.

    Args:
        successes: Number of successful trials ``c``.
        trials: Number of valid trials ``n`` (infrastructure errors excluded).
        k: The number of trials that must all succeed.

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n`` (pass^k is undefined for k > n).
    """
    if k < 1 or successes < 0 or successes > trials or k > trials:
        raise ValueError(f"bad pass^k arguments c={successes} n={trials} k={k}")
    return math.comb(successes, k) / math.comb(trials, k)


def per_task_pass_hat_k(counts: Mapping[str, tuple[int, int]], k: int) -> dict[str, float]:
    """pass^k of every task whose trial count allows it (``n >= k``)."""
    return {task_id: pass_hat_k(successes, trials, k) for task_id, (successes, trials) in counts.items() if trials >= k}


def pass_hat_k_table(counts: Mapping[str, tuple[int, int]], k_max: int | None = None) -> dict[int, float]:
    """``{k: mean pass^k over tasks with at least k trials}`` for k = 1..k_max (default max n)."""
    k_max = k_max or max((n for _, n in counts.values()), default=0)
    table = {}
    for k in range(1, k_max + 1):
        values = list(per_task_pass_hat_k(counts, k).values())
        if values:
            table[k] = mean(values)
    return table


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def bootstrap_ci(
    values: Sequence[float],
    *,
    stat: Callable[[Sequence[float]], float] = mean,
    n_resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` over ``values`` (resampled with replacement)."""
    if not values:
        return (float("nan"), float("nan"))
    rng = random.Random(seed)
    size = len(values)
    stats = sorted(stat([values[rng.randrange(size)] for _ in range(size)]) for _ in range(n_resamples))
    tail = (1.0 - confidence) / 2.0
    low = stats[math.floor(tail * (n_resamples - 1))]
    high = stats[math.ceil((1.0 - tail) * (n_resamples - 1))]
    return (low, high)


@dataclass
class PassK:
    """pass^k at one k, with the tasks it was computed on and its bootstrap interval."""

    k: int
    value: float
    ci_low: float
    ci_high: float
    tasks: int

    def as_dict(self) -> dict:
        return {"k": self.k, "value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high, "tasks": self.tasks}


def pass_hat_k_curve(
    counts: Mapping[str, tuple[int, int]], k_max: int | None = None, *, n_resamples: int = 2000, seed: int = 0
) -> list[PassK]:
    """pass^k for k = 1..k_max (default: the largest trial count) with bootstrap intervals.

    Args:
        counts: ``{task_id: (successes, valid_trials)}``; tasks with 0 valid trials are ignored.
        k_max: Largest k; tasks with fewer valid trials than k are left out at that k.
        n_resamples: Bootstrap resamples.
        seed: Seed of the bootstrap (results are reproducible).
    """
    counts = {t: c for t, c in counts.items() if c[1] > 0}
    k_max = k_max or max((n for _, n in counts.values()), default=0)
    curve = []
    for k in range(1, k_max + 1):
        values = list(per_task_pass_hat_k(counts, k).values())
        if not values:
            break
        low, high = bootstrap_ci(values, n_resamples=n_resamples, seed=seed + k)
        curve.append(PassK(k, mean(values), low, high, len(values)))
    return curve


@dataclass
class PairedComparison:
    """Difference ``b - a`` of per-task scores on the tasks both runs have."""

    tasks: int
    mean_a: float
    mean_b: float
    diff: float
    ci_low: float
    ci_high: float
    only_in_a: int
    only_in_b: int

    @property
    def within_noise(self) -> bool:
        """True when the bootstrap interval of the difference contains 0."""
        return self.ci_low <= 0.0 <= self.ci_high

    def as_dict(self) -> dict:
        return {
            "tasks": self.tasks,
            "mean_a": self.mean_a,
            "mean_b": self.mean_b,
            "diff": self.diff,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "within_noise": self.within_noise,
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
        }


def paired_comparison(
    a: Mapping[str, float], b: Mapping[str, float], *, n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0
) -> PairedComparison:
    """Paired bootstrap over the common tasks of two runs (per-task scores in [0, 1])."""
    common = sorted(set(a) & set(b))
    diffs = [b[t] - a[t] for t in common]
    low, high = bootstrap_ci(diffs, n_resamples=n_resamples, confidence=confidence, seed=seed)
    return PairedComparison(
        tasks=len(common),
        mean_a=mean([a[t] for t in common]),
        mean_b=mean([b[t] for t in common]),
        diff=mean(diffs),
        ci_low=low,
        ci_high=high,
        only_in_a=len(set(a) - set(b)),
        only_in_b=len(set(b) - set(a)),
    )
