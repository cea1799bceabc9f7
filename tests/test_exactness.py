"""exact@k: whether a run's MRR@k and hit@k on a query are exact on partial (first-hit)
labels — against a hand computation and a brute-force per-query reference on random runs."""

import numpy as np
from test_metrics import golden, ranked, run

from goldset.eval.exactness import exact_queries, exactness_report, unjudged_above_first_hit
from goldset.eval.metrics import per_query_values, rank_run

METRICS = ("mrr@3", "hit@3")


def first_hit(*queries: dict):
    """A golden set labelled first-hit (done and answerable)."""
    return golden(*({"mode": "first_hit", **query} for query in queries))


def test_exact_when_everything_above_the_first_hit_is_judged():
    gold = first_hit(
        {"query_id": "a", "judgments": {"x": 0, "y": 1}},  # x judged, then the hit y
        {"query_id": "b", "judgments": {"y": 1}},  # x unjudged above the hit: a lower bound
        {"query_id": "c", "judgments": {"x": 0, "y": 0, "z": 0}},  # whole top 3 judged, no hit
        {"query_id": "d", "judgments": {"x": 0, "q": 1}},  # y unjudged in a top 3 without hit
        {"query_id": "e", "judgments": {"x": 1}},  # hit at 1: nothing above it
    )
    results = run({q: ranked("x", "y", "z", "w") for q in "abcde"})
    ranking = rank_run(gold, results, METRICS)
    assert unjudged_above_first_hit(ranking, 3).tolist() == [0, 1, 0, 2, 0]
    assert exact_queries(ranking, 3).tolist() == [True, False, True, False, True]


def test_the_report_gives_the_share_the_figures_over_exact_queries_and_the_lower_bound():
    gold = first_hit(
        {"query_id": "a", "slice": "s1", "judgments": {"x": 0, "y": 1}},  # RR 1/2, exact
        {"query_id": "b", "slice": "s1", "judgments": {"y": 1}},  # RR 1/2, not exact
        {"query_id": "e", "slice": "s2", "judgments": {"x": 1}},  # RR 1, exact
    )
    results = run({q: ranked("x", "y", "z") for q in "abe"})
    ranking = rank_run(gold, results, METRICS)
    per_query = per_query_values(ranking, METRICS)
    report = exactness_report(ranking, per_query, 3, {"s1": np.array([0, 1]), "s2": np.array([2])})
    whole = report["all"]
    assert (whole["queries"], whole["exact"], whole["share"]) == (3, 2, 2 / 3)
    assert whole["figures"]["mrr@3"] == {"exact": 0.75, "lower_bound": (0.5 + 0.5 + 1) / 3}
    assert whole["figures"]["hit@3"] == {"exact": 1.0, "lower_bound": 1.0}
    assert report["slices"]["s1"]["share"] == 0.5
    assert report["slices"]["s1"]["figures"]["mrr@3"] == {"exact": 0.5, "lower_bound": 0.5}
    assert report["slices"]["s2"]["figures"]["mrr@3"]["exact"] == 1.0


def test_no_exact_query_gives_no_exact_figure():
    gold = first_hit({"query_id": "b", "judgments": {"y": 1}})
    ranking = rank_run(gold, run({"b": ranked("x", "y")}), METRICS)
    report = exactness_report(ranking, per_query_values(ranking, METRICS), 3, {})
    assert report["all"]["share"] == 0.0
    assert report["all"]["figures"]["mrr@3"] == {"exact": None, "lower_bound": 0.5}


def brute_force_exact(ordered_docs: list[str], grades: dict[str, int], k: int) -> bool:
    """The definition, one query at a time: walk the top k down to the first relevant doc."""
    for doc in ordered_docs[:k]:
        if doc not in grades:
            return False
        if grades[doc] >= 1:
            return True
    return True


def test_exact_at_k_equals_a_brute_force_reference_on_random_runs():
    generator = np.random.default_rng(7)
    docs = [f"d{i}" for i in range(12)]
    records, rows, reference = [], {}, []
    for number in range(300):
        query_id = f"q{number:03d}"
        judged = generator.choice(docs, size=int(generator.integers(1, 8)), replace=False)
        grades = {str(doc): int(generator.integers(0, 3)) for doc in judged}
        records.append({"query_id": query_id, "judgments": grades})
        returned = generator.choice(docs, size=int(generator.integers(0, 12)), replace=False)
        # integer scores with ties: the ranking breaks them by doc id, descending
        scored = [(str(doc), float(generator.integers(0, 4))) for doc in returned]
        rows[query_id] = scored
        by_score = sorted(scored, key=lambda item: (item[1], item[0].encode()), reverse=True)
        order = [doc for doc, _ in by_score]
        reference.append(brute_force_exact(order, grades, 5))
    ranking = rank_run(first_hit(*records), run(rows), ("mrr@5", "hit@5"))
    assert exact_queries(ranking, 5).tolist() == reference
    assert 0 < sum(reference) < len(reference)  # both kinds occur


def test_labels_of_another_kind_get_no_exactness():
    gold = golden({"query_id": "b", "judgments": {"y": 1}})  # a qrels line: relevant only
    ranking = rank_run(gold, run({"b": ranked("x", "y")}), METRICS)
    assert exactness_report(ranking, per_query_values(ranking, METRICS), 3, {}) is None


def test_a_comparison_warns_where_a_runs_figures_are_lower_bounds():
    from goldset.eval.compare import compare_runs

    gold = first_hit(
        {"query_id": "a", "judgments": {"x": 0, "y": 1}},
        {"query_id": "b", "judgments": {"x": 1}},
    )
    baseline = run({q: ranked("x", "y", "z") for q in "ab"})
    candidate = run({q: ranked("z", "y", "x") for q in "ab"})  # z unjudged above every hit
    result = compare_runs(gold, baseline, candidate, ["mrr@10", "hit@10"], bootstrap=0)
    assert result["exactness"]["baseline"]["all"]["share"] == 1.0
    assert result["exactness"]["candidate"]["all"]["share"] == 0.0
    warnings = [w for w in result["gate"]["warnings"] if "exact@10" in w]
    assert warnings == [
        "test: exact@10 0.0% (0 of 2 queries have every doc above their first hit judged); "
        "MRR@10 ≥ 0.417 over all: label its holes for exact figures"
    ]
