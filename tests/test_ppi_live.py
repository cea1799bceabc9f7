"""--labels ppi (issue 28): labeler.live.ppi reads the humans' labels on the project's random
sample, the judge's on every query and the run, and gives eval.ppi the per-query values; the
CLI prints them beside the humans' own, and refuses without a sample."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from goldset.eval.ppi import ppi_mean
from goldset.labeler import judges
from goldset.labeler.cli import cli
from goldset.labeler.live.ppi import NO_SAMPLE, NoSample, ppi_comparison, ppi_report
from goldset.labeler.store import Store

QUERIES, DOCS, LABELLED = 40, 5, 16
JUDGE = "machine:rule"


def relevant_doc(q: int) -> int:
    return q % DOCS


def judge_relevant(q: int, d: int) -> bool:
    """The judge: right, except that on every 4th query it calls doc 0 relevant as well."""
    return d == relevant_doc(q) or (q % 4 == 0 and d == 0)


def slice_of(q: int) -> str:
    return "head" if q < QUERIES // 2 else "tail"


@pytest.fixture
def judged_store(make_store) -> Store:
    """40 queries in two slices, binary full mode; the judge labelled every pair (the humans'
    sample is drawn and labelled by :func:`draw_and_label`)."""
    store = make_store(
        (
            {
                "query_id": f"q{q}",
                "query": f"question {q}",
                "slice": slice_of(q),
                "candidates": [{"doc_id": f"d{q}-{d}", "text": "t"} for d in range(DOCS)],
            }
            for q in range(QUERIES)
        ),
        protocol={"mode": "full", "max_grade": 1},
    )
    context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
    for q in range(QUERIES):
        for d in range(DOCS):
            pair = judges.Pair(f"q{q}", f"d{q}-{d}", "", "", "")
            call = judges.Call("ok", 0.1, 4, 1, grade=int(judge_relevant(q, d)), reason="r")
            store.record_judge_calls(judges.call_rows(pair, [call], context))
    return store


def draw_and_label(store: Store, budget: int | None = 30) -> list[str]:
    store.draw_sample("random", seed=5, budget=budget)
    order = list(store.human_sample()["query_id"])[:LABELLED]
    for query_id in order:
        q = int(query_id[1:])
        for d in range(DOCS):
            grade = int(d == relevant_doc(q))
            store.judge(query_id, f"d{q}-{d}", grade, "ana", seconds=3.0, mode="full")
    return order


def write_run(path, rank_of) -> str:
    """A run ranking each query's docs 0..4 in the order ``rank_of(q)``."""
    lines = [
        f"q{q} Q0 d{q}-{d} {rank} {10 - rank} r\n"
        for q in range(QUERIES)
        for rank, d in enumerate(rank_of(q), start=1)
    ]
    path.write_text("".join(lines))
    return str(path)


def plain(q: int) -> list[int]:
    return list(range(DOCS))


def good(q: int) -> list[int]:
    return [relevant_doc(q), *(d for d in range(DOCS) if d != relevant_doc(q))]


def reciprocal_rank(order: list[int], relevant) -> float:
    return next((1 / rank for rank, d in enumerate(order, start=1) if relevant(d)), 0.0)


def expected(store: Store, rank_of, members: list[int]) -> dict:
    """PPI on RR@10 computed here from the rules: humans on the labelled sample, the judge on
    ``members``, weights 1 / inclusion probability."""
    sample = store.human_sample()
    sample = sample[sample["labelled"]]
    sample = sample[sample["query_id"].isin([f"q{q}" for q in members])]
    sampled = [int(query_id[1:]) for query_id in sample["query_id"]]
    human = [reciprocal_rank(rank_of(q), lambda d, q=q: d == relevant_doc(q)) for q in sampled]
    judged = {q: reciprocal_rank(rank_of(q), lambda d, q=q: judge_relevant(q, d)) for q in members}
    return ppi_mean(
        human,
        [judged[q] for q in sampled],
        [judged[q] for q in members],
        weights=1 / sample["probability"].to_numpy(),
        limits=(0, 1),  # RR@10 lies in [0, 1]: no CI reaches past it
    ).as_dict()


def test_the_report_is_eval_ppi_on_the_sample_and_every_query(judged_store, tmp_path):
    draw_and_label(judged_store)
    from goldset.eval.readers import read_run

    run = read_run(write_run(tmp_path / "plain.trec", plain))
    judge = judged_store.machine_judgments_frame(JUDGE)
    figures = ppi_report(judged_store, run, judge, ["mrr@10"])
    assert list(figures) == ["all", "head", "tail"]
    everyone = list(range(QUERIES))
    assert figures["all"]["mrr@10"] == pytest.approx(expected(judged_store, plain, everyone))
    heads = [q for q in everyone if slice_of(q) == "head"]
    assert figures["head"]["mrr@10"] == pytest.approx(expected(judged_store, plain, heads))
    assert figures["all"]["mrr@10"]["n_human"] == LABELLED
    assert figures["all"]["mrr@10"]["n_all"] == QUERIES


def test_weights_are_the_inverse_inclusion_probabilities(judged_store, tmp_path):
    """A stratified draw of 30 of 40: each slice's probability is its share drawn; over all
    queries the sample is weighted (Hájek), not a plain mean when the shares differ."""
    draw_and_label(judged_store, budget=7)  # 7 of 40: 4 of one slice, 3 of the other
    probabilities = set(judged_store.human_sample()["probability"].round(6))
    assert len(probabilities) == 2
    from goldset.eval.readers import read_run

    run = read_run(write_run(tmp_path / "plain.trec", plain))
    figures = ppi_report(judged_store, run, judged_store.machine_judgments_frame(JUDGE), ["mrr@10"])
    assert figures["all"]["mrr@10"] == pytest.approx(expected(judged_store, plain, list(range(40))))
    assert figures["all"]["mrr@10"]["n_human"] == 7


def test_no_sample_no_figure(judged_store, tmp_path):
    from goldset.eval.readers import read_run

    run = read_run(write_run(tmp_path / "plain.trec", plain))
    with pytest.raises(NoSample):
        ppi_report(judged_store, run, judged_store.machine_judgments_frame(JUDGE))
    judged_store.draw_sample("random", seed=1)  # drawn, but nothing labelled yet
    with pytest.raises(NoSample):
        ppi_report(judged_store, run, judged_store.machine_judgments_frame(JUDGE))


def test_eval_labels_ppi_prints_the_figures_beside_the_humans(judged_store, tmp_path):
    draw_and_label(judged_store)
    run = write_run(tmp_path / "plain.trec", plain)
    args = ["eval", "--db", str(judged_store.path), "--run", run, "--labels", "ppi", "-m", "mrr@10"]
    result = CliRunner().invoke(cli, [*args, "--judge", JUDGE, "--json"])
    assert result.exit_code == 0, result.output
    ppi = json.loads(result.output)["ppi"]
    assert ppi["judge"] == JUDGE and ppi["sample"] == {"mode": "random", "labelled": LABELLED}
    assert ppi["figures"]["all"]["mrr@10"] == pytest.approx(
        expected(judged_store, plain, list(range(QUERIES)))
    )
    text = CliRunner().invoke(cli, [*args, "--judge", JUDGE])
    assert text.exit_code == 0, text.output
    assert f"PPI with judge {JUDGE} on the random sample ({LABELLED} queries" in text.output
    assert "tail mrr@10" in text.output and "humans' 95% CI" in text.output


def test_eval_labels_ppi_without_a_sample_is_refused_in_one_line(judged_store, tmp_path):
    run = write_run(tmp_path / "plain.trec", plain)
    args = ["eval", "--db", str(judged_store.path), "--run", run, "--labels", "ppi"]
    result = CliRunner().invoke(cli, [*args, "--judge", JUDGE])
    assert result.exit_code == 2
    assert result.output.strip() == f"Error: {NO_SAMPLE}"
    assert "Traceback" not in result.output


def test_eval_labels_ppi_needs_a_project(tmp_path):
    golden = tmp_path / "golden.jsonl"
    golden.write_text(json.dumps({"query_id": "q0", "judgments": {"d0-0": 1}}) + "\n")
    run = write_run(tmp_path / "plain.trec", plain)
    result = CliRunner().invoke(
        cli, ["eval", "--golden", str(golden), "--run", run, "--labels", "ppi"]
    )
    assert result.exit_code == 2 and "give --db" in result.output


def test_compare_labels_ppi_gives_the_paired_deltas(judged_store, tmp_path):
    draw_and_label(judged_store)
    baseline, candidate = (
        write_run(tmp_path / f"{n}.trec", o) for n, o in (("p", plain), ("g", good))
    )
    result = CliRunner().invoke(
        cli,
        [
            "compare",
            "--db",
            str(judged_store.path),
            "--baseline",
            baseline,
            "--candidate",
            candidate,
        ]
        + ["--labels", "ppi", "--judge", JUDGE, "--json", "--bootstrap", "0"],
    )
    assert result.exit_code == 0, result.output
    delta = json.loads(result.output)["ppi"]["figures"]["all"]["mrr@10"]
    plain_figure = expected(judged_store, plain, list(range(QUERIES)))
    # The humans' own delta on the sample: the good run finds every relevant doc at rank 1.
    sample = judged_store.human_sample()
    labelled = [int(q[1:]) for q in sample.loc[sample["labelled"], "query_id"]]
    human_plain = np.mean([1 / (relevant_doc(q) + 1) for q in labelled])
    assert delta["human_mean"] == pytest.approx(1 - human_plain)
    assert delta["mean"] > 0 and plain_figure["mean"] < 1
    from goldset.eval.readers import read_run

    deltas = ppi_comparison(
        judged_store,
        read_run(baseline),
        read_run(candidate),
        judged_store.machine_judgments_frame(JUDGE),
    ).deltas
    assert deltas["all"]["mrr@10"] == pytest.approx(delta)
    assert set(deltas["all"]) == {"mrr@10", "miss@10"}


def gate(project, tmp_path, baseline_order, candidate_order) -> tuple[int, dict]:
    baseline = write_run(tmp_path / "b.trec", baseline_order)
    candidate = write_run(tmp_path / "c.trec", candidate_order)
    result = CliRunner().invoke(
        cli,
        ["compare", "--db", str(project.path), "--baseline", baseline, "--candidate", candidate]
        + ["--labels", "ppi", "--judge", JUDGE, "--gate", "--json"],
    )
    return result.exit_code, json.loads(result.output)


def test_the_gate_with_labels_ppi_judges_the_ppi_deltas(judged_store, tmp_path):
    draw_and_label(judged_store)
    code, better = gate(judged_store, tmp_path, plain, good)
    assert code == 0 and better["gate"]["verdict"] == "pass"
    code, worse = gate(judged_store, tmp_path, good, plain)
    assert code == 1 and worse["gate"]["verdict"] == "fail"
    mrr = next(rule for rule in worse["gate"]["rules"] if rule["name"] == "mrr@10")
    ppi = worse["ppi"]["figures"]["all"]["mrr@10"]
    assert mrr["delta"] == pytest.approx(ppi["mean"])  # the PPI delta, not the humans' own
    assert mrr["delta"] != pytest.approx(ppi["human_mean"])
    assert mrr["queries"] == LABELLED
    assert {rule["name"] for rule in worse["gate"]["rules"]} == {
        "miss@10",
        "mrr@10",
        "slice head: mrr@10",
        "slice tail: mrr@10",
    }


def test_a_ppi_compare_reads_the_sample_once_for_its_figures(judged_store, tmp_path, monkeypatch):
    draw_and_label(judged_store)
    reads = {"human_sample": 0, "golden_records": 0, "golden_frames": 0}
    for name in reads:
        original = getattr(Store, name)

        def counted(self, *args, _name=name, _original=original, **kwargs):
            reads[_name] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Store, name, counted)
    code, _ = gate(judged_store, tmp_path, plain, good)
    assert code == 0
    # The sample: once for both runs' figures and the gate (the header's count is counted in
    # SQL, see Store.sampling); the humans' golden set: for the PPI figures and the plain
    # comparison (by its records or in bulk).
    assert reads["human_sample"] == 1
    assert reads["golden_records"] + reads["golden_frames"] == 2


def test_no_ci_reaches_past_what_a_metric_or_a_delta_can_be(judged_store, tmp_path):
    draw_and_label(judged_store, budget=3)  # three queries: the intervals are wide
    from goldset.eval.readers import read_run

    run = read_run(write_run(tmp_path / "plain.trec", plain))
    figures = ppi_report(judged_store, run, judged_store.machine_judgments_frame(JUDGE))
    bounds = [
        bound for metrics in figures.values() for figure in metrics.values()
        for bound in (figure["low"], figure["high"], figure["human_low"], figure["human_high"])
        if bound is not None  # a slice with one sampled query has no interval
    ]  # fmt: skip
    assert min(bounds) == 0.0 or max(bounds) == 1.0  # wide enough to have been cut
    assert all(0.0 <= bound <= 1.0 for bound in bounds)
    other = read_run(write_run(tmp_path / "good.trec", good))
    compared = ppi_comparison(judged_store, run, other, judged_store.machine_judgments_frame(JUDGE))
    deltas = [f for metrics in compared.deltas.values() for f in metrics.values()]
    assert all(-1.0 <= f["low"] <= f["high"] <= 1.0 for f in deltas if f["low"] is not None)


def test_export_does_not_offer_ppi_labels(judged_store, tmp_path):
    """PPI gives figures, not labels: export keeps its three label sets."""
    out = tmp_path / "golden.jsonl"
    args = ["export", "--db", str(judged_store.path), "--labels", "ppi", "--out", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and "'ppi' is not one of" in result.output
    assert not out.exists()


def test_a_sample_labelled_only_unanswerable_gives_no_figure(judged_store, tmp_path):
    judged_store.draw_sample("random", seed=5)
    for query_id in list(judged_store.human_sample()["query_id"])[:3]:
        judged_store.mark(query_id, "unanswerable", "ana")
    assert judged_store.sampling()["labelled"] == 3
    run = write_run(tmp_path / "plain.trec", plain)
    args = [
        "eval",
        "--db",
        str(judged_store.path),
        "--run",
        run,
        "--labels",
        "ppi",
        "--judge",
        JUDGE,
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2 and result.output.strip() == f"Error: {NO_SAMPLE}"
