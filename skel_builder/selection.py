"""Selecting environments to build: dedup by summary, score thresholds, near-duplicate removal
and clustering to a target count (embeddings when configured, else local TF-IDF).
"""

from __future__ import annotations

import logging

import numpy as np

from envscaler_core.artifacts import EnvDescription

log = logging.getLogger(__name__)


def _text(d: EnvDescription) -> str:
    return f"**{d.environment_summary}**: {d.environment_introduction}"


def tfidf_vectors(texts: list[str]) -> np.ndarray:
    from sklearn.feature_extraction.text import TfidfVectorizer

    matrix = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True).fit_transform(texts)
    return matrix.toarray()


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)


def select(
    descriptions: list[EnvDescription],
    *,
    min_usefulness: int,
    min_modelability: int,
    target_count: int,
    near_duplicate: float,
    vectors: np.ndarray | None = None,
) -> list[EnvDescription]:
    """Return every description with ``selected`` and ``selection_reason`` set."""
    out = [d.model_copy() for d in descriptions]
    best: dict[str, EnvDescription] = {}
    for d in out:
        if not d.judge_result:
            d.selection_reason = "judged not stateful"
            continue
        if d.usefulness < min_usefulness or d.modelability < min_modelability:
            d.selection_reason = f"scores U{d.usefulness}/M{d.modelability} below {min_usefulness}/{min_modelability}"
            continue
        key = d.environment_summary.strip().lower()
        rival = best.get(key)
        if rival is None or (d.modelability, d.usefulness) > (rival.modelability, rival.usefulness):
            if rival is not None:
                rival.selection_reason = f"same summary as {d.id}"
            best[key] = d
        else:
            d.selection_reason = f"same summary as {rival.id}"
    pool = list(best.values())
    if pool:
        index = {d.id: i for i, d in enumerate(out)}
        vecs = vectors[[index[d.id] for d in pool]] if vectors is not None else tfidf_vectors([_text(d) for d in pool])
        pool, vecs = _drop_near_duplicates(pool, _unit(np.asarray(vecs, dtype=float)), near_duplicate)
        if target_count and len(pool) > target_count:
            pool = _cluster(pool, vecs, target_count)
    chosen = {d.id for d in pool}
    for d in out:
        if d.id in chosen:
            d.selected, d.selection_reason = True, "selected"
    return out


def _drop_near_duplicates(pool, vecs, threshold):
    keep: list[int] = []
    for i, d in enumerate(pool):
        twin = next((j for j in keep if float(vecs[i] @ vecs[j]) >= threshold), None)
        if twin is None:
            keep.append(i)
        else:
            d.selection_reason = f"near duplicate of {pool[twin].id}"
    return [pool[i] for i in keep], vecs[keep]


def _cluster(pool, vecs, k):
    from sklearn.cluster import KMeans

    kmeans = KMeans(n_clusters=k, random_state=42, n_init="auto")
    labels = kmeans.fit_predict(vecs)
    chosen = []
    for c in range(k):
        members = [i for i, label in enumerate(labels) if label == c]
        if not members:
            continue
        centre = kmeans.cluster_centers_[c]
        chosen.append(min(members, key=lambda i: float(np.linalg.norm(vecs[i] - centre))))
    for i, d in enumerate(pool):
        if i not in chosen:
            d.selection_reason = f"not nearest to a cluster centre (k={k})"
    return [pool[i] for i in sorted(chosen)]


def embed(base_url: str, api_key: str, model: str, texts: list[str]) -> np.ndarray:
    """Embeddings from an OpenAI-compatible endpoint."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key=api_key or "sk-no-key", max_retries=3)
    vectors = []
    for start in range(0, len(texts), 64):
        response = client.embeddings.create(model=model, input=texts[start : start + 64])
        vectors.extend(item.embedding for item in sorted(response.data, key=lambda x: x.index))
    return np.asarray(vectors, dtype=float)
