"""The compare page (AppTest) on the labelled demo project (tests/helpers/projects.py):
uploaded runs evaluated with judged@10 beside every figure, a paired comparison equal to
``goldset compare``, "label the holes" and recording into the run history."""

from __future__ import annotations

import hashlib
import json

import pytest
from click.testing import CliRunner
from helpers.projects import label
from streamlit.testing.v1 import AppTest
from test_live import open_page, table_with

from goldset.labeler import live
from goldset.labeler.auth import hash_password
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

COMPARE = "../labeler/views/compare.py"


@pytest.fixture
def demo_and_runs(labelled_demo_app):
    """The labelled demo project, opened by the app, and run files written from its
    candidate lists: ``baseline`` (the lists as they are) and ``candidate`` (q01's answer
    pushed to rank 2, q02's lifted from rank 3 to rank 1)."""
    with Store(labelled_demo_app) as store:
        ranked = {q: [c["doc_id"] for c in store.candidates(q)] for q in ("q01", "q02", "q03")}
    ranked_again = dict(ranked)
    ranked_again["q01"] = [ranked["q01"][1], ranked["q01"][0], *ranked["q01"][2:]]
    ranked_again["q02"] = [ranked["q02"][2], *ranked["q02"][:2], *ranked["q02"][3:]]
    files = {"baseline": trec(ranked, "baseline"), "candidate": trec(ranked_again, "candidate")}
    return labelled_demo_app, files


def trec(rankings: dict[str, list[str]], name: str) -> bytes:
    """A TREC run giving each query's docs in the listed order."""
    lines = [
        f"{query_id} Q0 {doc_id} {rank} {100 - rank} {name}"
        for query_id, docs in rankings.items()
        for rank, doc_id in enumerate(docs, start=1)
    ]
    return ("\n".join(lines) + "\n").encode()


def upload(files: dict[str, bytes], user: str | None = None) -> AppTest:
    """A session on the compare page with these run files uploaded."""
    at = open_page(COMPARE, user)
    at.file_uploader[0].set_value([(f"{n}.trec", data, "text/plain") for n, data in files.items()])
    at.run()
    assert not at.exception, at.exception
    return at


def click(at: AppTest, label: str) -> AppTest:
    next(button for button in at.button if button.label == label).click().run()
    assert not at.exception, at.exception
    return at


def test_runs_are_side_by_side_one_row_per_metric_with_judged_at_10_last(demo_and_runs):
    db, files = demo_and_runs
    at = upload(files)
    table = table_with(at, "Metric").set_index("Metric")
    assert list(table.columns) == ["baseline", "candidate"]
    assert list(table.index) == [
        "MRR@10", "hit@1", "hit@10", "miss rate@10", "recall@10", "precision@10", "nDCG@10",
        "judged@10",
    ]  # fmt: skip
    # q04 is not in the runs: it scores 0, as in trec_eval -c.
    assert table.loc["MRR@10", "baseline"].startswith(f"{(1 + 1 / 3 + 0 + 0) / 4:.3f} [")
    assert table.loc["MRR@10", "candidate"].startswith(f"{(1 / 2 + 1 + 0 + 0) / 4:.3f} [")
    assert table.loc["hit@1", "baseline"].startswith("25.0% [")
    assert table.loc["judged@10"].str.endswith("%").all()

    at.selectbox(key="compare_slice").set_value("tail").run()
    tail = table_with(at, "Metric").set_index("Metric")
    assert tail.loc["MRR@10", "baseline"] != table.loc["MRR@10", "baseline"]


def goldset_compare(db, files, folder) -> dict:
    for name, data in files.items():
        (folder / f"{name}.trec").write_bytes(data)
    args = ["compare", "--db", str(db), "--json"]
    args += ["--baseline", str(folder / "baseline.trec")]
    args += ["--candidate", str(folder / "candidate.trec")]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.output)


def test_paired_comparison_equals_goldset_compare_with_the_gate_verdict(demo_and_runs, tmp_path):
    db, files = demo_and_runs
    expected = goldset_compare(db, files, tmp_path)

    at = upload(files)
    shown = table_with(at, "Change [95% CI]").set_index("Metric")
    for metric, entry in expected["metrics"].items():
        row = shown.loc[live.metric_label(metric)]
        if entry.get("reason"):  # recall, nDCG on first-hit labels: no figures, the reason
            assert row["Change [95% CI]"] == entry["reason"]
            continue
        low, high = entry["ci95"]
        if live.is_rate(metric):  # in percentage points
            change = f"{entry['delta'] * 100:+.1f} pts [{low * 100:+.1f}, {high * 100:+.1f}]"
        else:
            change = f"{entry['delta']:+.3f} [{low:+.3f}, {high:+.3f}]"
        assert row["Change [95% CI]"] == change
        assert row["p-value"] == f"{entry['p_value']:.4f}"
        bound = "≥ " if entry.get("bound") == "lower" else ""
        assert row["baseline"] == bound + live.value_text(entry["baseline"], metric)
    tail = expected["slices"]["tail"]["metrics"]["mrr@10"]
    at.selectbox(key="compare_slice").set_value("tail").run()
    on_tail = table_with(at, "Change [95% CI]").set_index("Metric")
    assert on_tail.loc["MRR@10", "Change [95% CI]"].startswith(f"{tail['delta']:+.3f}")
    assert expected["gate"]["verdict"] == "inconclusive"  # 4 queries: the CIs cannot decide
    assert [w.value for w in at.warning if w.value.startswith("Release gate")] == [
        "Release gate: inconclusive."
    ]
    assert [text.value for text in at.text] == expected["gate"]["reasons"] + [
        f"warning: {warning}" for warning in expected["gate"]["warnings"]
    ]


CHANGED = {
    "worse": [{"query_id": "q01", "slice": "head", "baseline_rank": 1, "candidate_rank": 2}],
    "better": [{"query_id": "q02", "slice": "head", "baseline_rank": 3, "candidate_rank": 1}],
    "new_misses": [
        {"query_id": "q04", "slice": "tail", "baseline_rank": 2, "candidate_rank": None}
    ],
    "new_hits": [],
}


def test_changed_queries_show_new_misses_first_each_opening_the_label_page(
    demo_and_runs, monkeypatch
):
    db, files = demo_and_runs
    real = live.compare_pair
    monkeypatch.setattr(
        live,
        "compare_pair",
        lambda *args, **options: {**real(*args, **options), "changed_queries": CHANGED},
    )
    changed = table_with(upload(files), "change")
    assert changed["query_id"].tolist() == ["q04", "q01", "q02"]
    assert changed["change"].tolist() == ["new miss", "moved down", "moved up"]
    assert changed["link"].tolist() == ["./?query=q04", "./?query=q01", "./?query=q02"]
    assert changed["query"].iloc[1] == "parse ISO-8601 duration"
    assert changed["candidate_rank"].isna().tolist() == [True, False, False]


def test_a_comparison_without_changed_queries_says_so(demo_and_runs, monkeypatch):
    db, files = demo_and_runs
    real = live.compare_pair
    monkeypatch.setattr(
        live,
        "compare_pair",
        lambda *args, **options: {
            k: v for k, v in real(*args, **options).items() if k != "changed_queries"
        },
    )
    at = upload(files)
    assert any("does not list the queries that changed" in c.value for c in at.caption)


def test_label_the_holes_adds_exactly_the_unjudged_top_k_docs(demo_and_runs):
    db, _ = demo_and_runs
    with Store(db) as store:
        judged = {q: store.labels(q) for q in ("q01", "q02")}
        candidates = {q: {c["doc_id"] for c in store.candidates(q)} for q in ("q01", "q02")}
        others = [c["doc_id"] for c in store.candidates("q40") + store.candidates("q41")]
    fresh, unjudged = {}, set()
    for query_id, grades in judged.items():
        newcomers = [doc for doc in others if doc not in candidates[query_id]]
        fresh[query_id] = [*grades, *newcomers][:12]  # its judged docs first, then new ones
        unjudged |= {(query_id, doc) for doc in fresh[query_id][:10] if doc not in grades}

    at = upload({"fresh": trec(fresh, "fresh")})
    at.number_input(key="holes_depth").set_value(10)
    click(at, "Label the holes")

    with Store(db) as store:
        added = {
            (query_id, candidate["doc_id"])
            for query_id in fresh
            for candidate in store.candidates(query_id)
            if candidate["doc_id"] not in candidates[query_id]
        }
        assert added == unjudged and len(added) == 9 + 7  # q01 had 1 judged, q02 3
        assert {q: store.labels(q) for q in fresh} == judged  # judgements are reused
        assert store.query_state("q02")["status"] == "done"  # its pooled run found rank 1
    assert "Added 16 documents over 2 queries" in at.success[0].value


def test_recording_keeps_the_run_in_the_history_which_flags_a_new_golden_version(demo_and_runs):
    db, files = demo_and_runs
    at = upload(files)
    at.text_input(key="record_tags").input("model=bm25, chunking=512")
    click(at, "Record")
    assert at.success[0].value == "Recorded as #1."

    with Store(db) as store:
        label(store, "q08", 1)  # the golden set grows: a new version
    at = upload(files)
    at.text_input(key="record_tags").input("model=bm25, chunking=512")
    click(at, "Record")

    with Store(db) as store:
        history = store.eval_history()
    assert [record["tags"] for record in history] == [{"model": "bm25", "chunking": "512"}] * 2
    assert history[0]["run_sha256"] == hashlib.sha256(files["baseline"]).hexdigest()
    assert history[0]["golden_version"] != history[1]["golden_version"]
    flags = table_with(at, "kind")
    assert flags["kind"].tolist() == ["golden_changed"]
    assert "not compared" in flags["message"].iloc[0]


def test_the_actions_are_for_admins(demo_and_runs):
    db, files = demo_and_runs
    with Store(db) as store:
        store.add_annotator("rita", role="reviewer", password_hash=hash_password("password"))
    at = upload(files, user="rita")
    assert table_with(at, "Change [95% CI]") is not None  # a reviewer compares...
    assert not [button for button in at.button if button.label in ("Label the holes", "Record")]
