"""Calibrating a machine judge against the humans, and keeping its labels apart.

A small project labelled in full mode by a human ("ana"); machine labels are stored as a
judge would store them (one call per pair), from a rule the test chooses: agree everywhere,
call everything relevant, or agree on the head slice and invert on the tail.
"""

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from goldset.eval import calibration
from goldset.eval.agreement import cohen_kappa
from goldset.eval.readers import Golden, golden_from_records, run_from_frame
from goldset.labeler import judges
from goldset.labeler.cli import cli
from goldset.labeler.store import Store

QUERIES, DOCS = 40, 5
JUDGE = "machine:rule"


def human_grade(query: int, doc: int) -> int:
    """The human's grade: a different relevant doc per query, sometimes two."""
    return int(doc == query % DOCS or (query % 3 == 0 and doc == (query + 2) % DOCS))


def slice_of(query: int) -> str:
    return "head" if query < QUERIES // 2 else "tail"


def add_machine_labels(store: Store, rule, queries=range(QUERIES)) -> None:
    context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
    for q in queries:
        for d in range(DOCS):
            pair = judges.Pair(f"q{q}", f"d{q}-{d}", "", "", "")
            call = judges.Call("ok", 0.5, 40, 8, grade=rule(q, d), reason="rule")
            store.record_judge_calls(judges.call_rows(pair, [call], context))


def run_frame(order) -> pd.DataFrame:
    """A run that ranks each query's docs in ``order(q)`` (a list of doc numbers)."""
    rows = [
        (f"q{q}", f"d{q}-{d}", float(DOCS - rank))
        for q in range(QUERIES)
        for rank, d in enumerate(order(q))
    ]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def good_order(q):
    return [q % DOCS, *(d for d in range(DOCS) if d != q % DOCS)]


def plain_order(q):
    return list(range(DOCS))


@pytest.fixture
def labelled_store(make_store) -> Store:
    """``QUERIES`` queries of ``DOCS`` candidates in two slices, every pair labelled by ana
    in full mode (:func:`human_grade`)."""
    store = make_store(
        (
            {
                "query_id": f"q{q}",
                "query": f"question {q}",
                "slice": slice_of(q),
                "candidates": [{"doc_id": f"d{q}-{d}", "text": f"text {d}"} for d in range(DOCS)],
            }
            for q in range(QUERIES)
        ),
        protocol={"mode": "full", "max_grade": 1},
    )
    for q in range(QUERIES):
        for d in range(DOCS):
            store.judge(f"q{q}", f"d{q}-{d}", human_grade(q, d), "ana", seconds=3.0, mode="full")
    return store


def golden_of(store: Store) -> Golden:
    return golden_from_records(store.golden_records())


def report_for(store, runs=("good", "plain"), **options):
    orders = {"good": good_order, "plain": plain_order}
    loaded = [run_from_frame(run_frame(orders[name]), name=name) for name in runs]
    return calibration.calibration_report(
        golden_of(store),
        store.machine_judgments_frame(JUDGE),
        loaded,
        judge=JUDGE,
        gate_runs=(loaded[1], loaded[0]) if len(loaded) == 2 else None,
        n_resamples=200,
        **options,
    )


def test_a_judge_that_agrees_everywhere_is_usable_on_every_slice(labelled_store):
    add_machine_labels(labelled_store, human_grade)
    report = report_for(labelled_store)
    overall = report["agreement"]["(all)"]
    assert overall["pairs"] == QUERIES * DOCS and overall["kappa"]["value"] == 1.0
    assert overall["tpr"]["value"] == 1.0 and overall["tnr"]["value"] == 1.0
    for figures in report["impact"]["good"].values():
        assert all(entry["delta"] == 0.0 for entry in figures["metrics"].values())
    assert report["gate"]["same_decision"]
    assert all(text.startswith("usable") for text in report["verdicts"].values())


def test_kappa_tpr_and_tnr_are_those_of_the_relevance_table(labelled_store):
    def noisy(q, d):  # wrong on every 7th pair
        return 1 - human_grade(q, d) if (q * DOCS + d) % 7 == 0 else human_grade(q, d)

    add_machine_labels(labelled_store, noisy)
    overall = report_for(labelled_store)["agreement"]["(all)"]
    human = np.array([human_grade(q, d) for q in range(QUERIES) for d in range(DOCS)])
    machine = np.array([noisy(q, d) for q in range(QUERIES) for d in range(DOCS)])
    assert overall["kappa"]["value"] == pytest.approx(cohen_kappa(human, machine))
    (tn, fp), (fn, tp) = overall["confusion"]["relevance"]
    assert (tp, fn) == (int((human & machine).sum()), int((human & (1 - machine)).sum()))
    assert overall["tpr"]["value"] == pytest.approx(tp / (tp + fn))
    assert overall["tnr"]["value"] == pytest.approx(tn / (tn + fp))
    low, high = overall["tpr"]["ci95"]
    assert low < overall["tpr"]["value"] < high
    assert overall["kappa"]["ci95"][0] <= overall["kappa"]["value"] <= overall["kappa"]["ci95"][1]


def test_a_judge_that_calls_everything_relevant_has_no_true_negatives_and_is_not_usable(
    labelled_store,
):
    add_machine_labels(labelled_store, lambda q, d: 1)
    report = report_for(labelled_store)
    overall = report["agreement"]["(all)"]
    assert overall["tpr"]["value"] == 1.0 and overall["tnr"]["value"] == 0.0
    assert overall["kappa"]["value"] == pytest.approx(0.0)
    # Every query is a hit at rank 1 under the machine: MRR@10 rises for the plain run.
    plain = report["impact"]["plain"]["(all)"]["metrics"]["mrr@10"]
    assert plain["machine"] == 1.0 and plain["delta"] > 0.05
    assert report["verdicts"]["(all)"].startswith("not usable for hole-filling overall: kappa")


def test_the_verdict_is_given_per_slice(labelled_store):
    def head_only(q, d):
        return human_grade(q, d) if slice_of(q) == "head" else 1 - human_grade(q, d)

    add_machine_labels(labelled_store, head_only)
    verdicts = report_for(labelled_store)["verdicts"]
    assert verdicts["head"] == "usable for hole-filling on slice head"
    assert verdicts["tail"].startswith("not usable for hole-filling on slice tail")


def test_too_few_pairs_give_no_verdict(labelled_store):
    add_machine_labels(labelled_store, human_grade, queries=range(2))
    report = report_for(labelled_store)
    assert report["queries"] == 2 and report["agreement"]["(all)"]["pairs"] == 2 * DOCS
    assert report["verdicts"]["(all)"].startswith("too few pairs to tell")


def test_the_gate_can_decide_differently_under_machine_labels(labelled_store):
    # The machine calls only doc 0 relevant: under its labels the plain run (doc 0 first)
    # beats the good one, and the gate from plain to good fails.
    add_machine_labels(labelled_store, lambda q, d: int(d == 0))
    gate = report_for(labelled_store)["gate"]
    assert gate["human"]["passed"] and not gate["machine"]["passed"]
    assert not gate["same_decision"]


def test_wilson_interval_matches_the_textbook_values():
    # Newcombe (1998), Statistics in Medicine 17:857, table I: 81/263 -> 0.2553 to 0.3662.
    low, high = calibration.wilson_interval(81, 263)
    assert (round(low, 4), round(high, 4)) == (0.2553, 0.3662)
    # Same table: 0/10 -> 0 to 0.2775, and by symmetry 10/10 -> 0.7225 to 1.
    assert [round(bound, 4) for bound in calibration.wilson_interval(0, 10)] == [0.0, 0.2775]
    assert [round(bound, 4) for bound in calibration.wilson_interval(10, 10)] == [0.7225, 1.0]


def test_both_labels_keep_the_humans_and_fill_only_the_holes():
    queries = pd.DataFrame(
        {
            "query_id": ["a"],
            "query": [""],
            "slice": [""],
            "status": ["done"],
            "answerable": [True],
            "mode": ["first_hit"],
        }
    )
    human = Golden(queries, pd.DataFrame({"query_id": ["a"], "doc_id": ["x"], "grade": [1]}))
    machine = pd.DataFrame(
        {"query_id": ["a", "a", "zz"], "doc_id": ["x", "y", "y"], "grade": [0, 2, 1]}
    )
    both = calibration.with_labels(human, machine, "both").judgments
    assert sorted(map(tuple, both[["doc_id", "grade"]].to_numpy().tolist())) == [("x", 1), ("y", 2)]
    only = calibration.with_labels(human, machine, "machine").judgments
    assert sorted(only["doc_id"]) == ["x", "y"] and set(only["query_id"]) == {"a"}


def test_disagreements_go_to_a_second_annotator_most_disagreeing_first(labelled_store):
    def wrong_on_some(q, d):  # q3: two wrong pairs, q5: one; the rest agree
        wrong = {(3, 0), (3, 1), (5, 4)}
        return 1 - human_grade(q, d) if (q, d) in wrong else human_grade(q, d)

    add_machine_labels(labelled_store, wrong_on_some)
    result = CliRunner().invoke(
        cli,
        [
            "calibrate",
            "--db",
            str(labelled_store.path),
            "--trust",
            "--send-disagreements-to",
            "rita",
            "--json",
            "--bootstrap",
            "0",
        ],
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["sent_to_second_annotator"] == {
        "annotator": "rita",
        "queries": 2,
    }
    assert labelled_store.assignments("rita") == ["q3", "q5"]
    assert labelled_store.next_query("rita") == "q3"


def test_disagreements_are_sent_only_after_the_judge_is_trusted(labelled_store):
    add_machine_labels(labelled_store, lambda q, d: 1 - human_grade(q, d))
    args = ["calibrate", "--db", str(labelled_store.path), "--send-disagreements-to", "rita"]
    result = CliRunner().invoke(cli, [*args, "--bootstrap", "0"])
    assert result.exit_code == 2 and "add --trust" in result.output
    assert labelled_store.assignments("rita") == [] and labelled_store.trusted_judge() is None


def test_machine_labels_leave_the_human_golden_set_and_its_figures_byte_identical(
    labelled_store, tmp_path
):
    run_path = tmp_path / "good.trec"
    frame = run_frame(good_order)
    run_path.write_text(
        "".join(f"{q} Q0 {d} 0 {s} good\n" for q, d, s in frame.itertuples(index=False))
    )

    def outputs(tag: str) -> dict[str, bytes]:
        runner = CliRunner()
        paths = {name: tmp_path / f"{tag}.{name}" for name in ("jsonl", "qrels")}
        for name, path in paths.items():
            args = [
                "export",
                "--db",
                str(labelled_store.path),
                "--format",
                name,
                "--out",
                str(path),
            ]
            assert runner.invoke(cli, args).exit_code == 0
        evaluated = runner.invoke(
            cli, ["eval", "--db", str(labelled_store.path), "--run", str(run_path), "--json"]
        )
        agreed = runner.invoke(cli, ["agreement", "--db", str(labelled_store.path), "--json"])
        return {
            **{name: path.read_bytes() for name, path in paths.items()},
            "eval": evaluated.output.encode(),
            "agreement": agreed.output.encode(),
            "frames": repr(labelled_store.golden_frames()).encode(),
            "status": json.dumps(
                {k: v for k, v in labelled_store.status().items() if k != "path"}
            ).encode(),
        }

    before = outputs("before")
    add_machine_labels(labelled_store, lambda q, d: 1)
    assert len(labelled_store.machine_judgments_frame(JUDGE)) == QUERIES * DOCS
    assert outputs("after") == before


@pytest.fixture
def half_labelled(tmp_path) -> Store:
    """Two queries of four candidates: the human judged d0 and d1 (first-hit, relevant at
    rank 2), the machine d2 and d3 (relevant)."""
    with Store(tmp_path / "half.db") as store:
        store.import_records(
            {
                "query_id": f"q{q}",
                "query": "x",
                "candidates": [{"doc_id": f"d{d}"} for d in range(4)],
            }
            for q in range(2)
        )
        # First-hit: the human stops at the first relevant doc (rank 2 of the 4 returned).
        for q in range(2):
            store.judge(f"q{q}", "d0", 0, "ana")
            store.judge(f"q{q}", "d1", 1, "ana")
        context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
        for q in range(2):
            for d in (2, 3):
                pair = judges.Pair(f"q{q}", f"d{d}", "", "", "")
                store.record_judge_calls(
                    judges.call_rows(pair, [judges.Call("ok", 0.1, grade=1, reason="r")], context)
                )
        yield store


def write_run(path, docs: int):
    """A run that returns d0, d1, ... (``docs`` of them, in that order) for both queries."""
    path.write_text(
        "".join(f"q{q} Q0 d{d} {d} {10 - d} r\n" for q in range(2) for d in range(docs))
    )
    return path


def test_eval_with_both_labels_reports_judged_at_10_by_humans_and_by_the_machine(
    half_labelled, tmp_path
):
    store = half_labelled
    run = write_run(tmp_path / "run.trec", 4)
    result = CliRunner().invoke(
        cli, ["eval", "--db", str(store.path), "--run", str(run), "--labels", "both", "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["judged@10"] == {"human": 0.5, "machine": 0.5}
    out = tmp_path / "both.jsonl"
    args = ["export", "--db", str(store.path), "--labels", "both", "--out", str(out)]
    assert CliRunner().invoke(cli, args).exit_code == 0
    first = json.loads(out.read_text().splitlines()[0])
    assert first["judgments"] == {"d0": 0, "d1": 1}
    assert first["machine_judgments"] == {"d2": 1, "d3": 1} and first["machine_judge"] == JUDGE


def write_golden(path, records) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


def compare_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["compare", *args, "--bootstrap", "200", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_compare_with_machine_labels_equals_compare_on_a_golden_set_of_those_labels(
    labelled_store, tmp_path
):
    # The machine calls only doc 0 relevant: under its labels the plain run (doc 0 first)
    # beats the good one, while the humans' labels say the opposite.
    add_machine_labels(labelled_store, lambda q, d: int(d == 0))
    runs = {}
    for name, order in (("plain", plain_order), ("good", good_order)):
        rows = run_frame(order).itertuples(index=False)
        runs[name] = tmp_path / f"{name}.trec"
        runs[name].write_text("".join(f"{q} Q0 {d} 0 {s} {name}\n" for q, d, s in rows))
    machine_golden = tmp_path / "machine.jsonl"
    write_golden(
        machine_golden,
        (
            {**record, "judgments": {doc: int(doc.endswith("-0")) for doc in record["judgments"]}}
            for record in labelled_store.golden_records()
        ),
    )
    pair = ["--baseline", str(runs["plain"]), "--candidate", str(runs["good"])]
    db = ["--db", str(labelled_store.path)]
    by_machine = compare_json(*db, *pair, "--labels", "machine", "--judge", "rule")
    by_file = compare_json("--golden", str(machine_golden), *pair)
    for key in ("metrics", "slices", "changed_queries", "gate"):
        assert by_machine[key] == by_file[key], key
    assert (
        by_machine["metrics"]["mrr@10"]["delta"]
        < 0
        < compare_json(*db, *pair)["metrics"]["mrr@10"]["delta"]
    )
    gated = [*db, *pair, "--gate", "--bootstrap", "0"]
    assert CliRunner().invoke(cli, ["compare", *gated]).exit_code == 0
    assert CliRunner().invoke(cli, ["compare", *gated, "--labels", "machine"]).exit_code == 1


def test_compare_with_both_labels_reports_each_runs_judged_at_10_by_humans_and_by_the_machine(
    half_labelled, tmp_path
):
    # The baseline returns d0..d2 (humans judged two, the machine one), the candidate d0..d3.
    baseline, candidate = write_run(tmp_path / "b.trec", 3), write_run(tmp_path / "c.trec", 4)
    args = ["--db", str(half_labelled.path), "--baseline", str(baseline)]
    args += ["--candidate", str(candidate), "--labels", "both"]
    judged = compare_json(*args)["judged@10"]
    assert judged["baseline"] == pytest.approx({"human": 2 / 3, "machine": 1 / 3})
    assert judged["candidate"] == {"human": 0.5, "machine": 0.5}
    text = CliRunner().invoke(cli, ["compare", *args]).output
    assert "judged@10 of the candidate: 0.5000 by humans, 0.5000 by the machine" in text


def test_compare_with_machine_labels_needs_the_project_that_holds_them(tmp_path):
    golden = tmp_path / "golden.jsonl"
    write_golden(
        golden, [{"query_id": "q0", "status": "done", "answerable": True, "judgments": {"d0": 1}}]
    )
    run = write_run(tmp_path / "run.trec", 1)
    args = ["compare", "--golden", str(golden), "--baseline", str(run), "--candidate", str(run)]
    result = CliRunner().invoke(cli, [*args, "--labels", "machine"])
    assert result.exit_code == 2
    assert "--labels machine|both reads a machine judge's labels: give --db" in result.output


def test_calibrate_says_the_human_time_saved_is_unknown_before_any_human_judgement(tmp_path):
    # The same median human speed as the planner's, with the same empty case: unknown, not 0.
    with Store(tmp_path / "machine-only.db") as store:
        store.import_records([{"query_id": "q0", "query": "x", "candidates": [{"doc_id": "d0"}]}])
        context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
        call = judges.Call("ok", 0.1, grade=1, reason="r")
        store.record_judge_calls(
            judges.call_rows(judges.Pair("q0", "d0", "", "", ""), [call], context)
        )
    args = [
        "calibrate",
        "--db",
        str(tmp_path / "machine-only.db"),
        "--judge",
        JUDGE,
        "--rate",
        "60",
    ]
    text = CliRunner().invoke(cli, args)
    as_json = CliRunner().invoke(cli, [*args, "--json"])
    assert text.exit_code == 0 and as_json.exit_code == 0, text.output + as_json.output
    assert "1 holes filled = human time saved not known yet" in text.output
    assert json.loads(as_json.output)["cost"]["human_saved"]["hours"] is None
