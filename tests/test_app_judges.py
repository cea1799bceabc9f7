"""The machine judges page (AppTest): an admin runs a judge from the form against a fake
OpenAI-compatible server, sees its figures, and its calibration against the human labels."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from helpers.fake_judge import FakeJudge, Reply
from helpers.projects import opened_by_the_app
from test_live import open_page, table_with

from goldset.labeler.cli import cli
from goldset.labeler.store import Store

PAGE = "../labeler/views/judges.py"


@pytest.fixture
def human_labelled(make_project, open_in_app):
    """Six queries of two candidates, every pair labelled by a human in full mode: the
    first candidate relevant, the second not, 3 s each. No users: the local admin. Opened
    by the app."""
    tasks = [
        {
            "query_id": f"q{q}",
            "query": f"question {q}",
            "slice": "<b>head</b>" if q < 3 else "tail",
            "candidates": [{"doc_id": f"d{q}-{d}", "text": f"text {d}"} for d in range(2)],
        }
        for q in range(6)
    ]
    path = make_project(tasks, protocol={"mode": "full", "max_grade": 1})
    with Store(path) as store:
        for q in range(6):
            for d in range(2):
                store.judge(f"q{q}", f"d{q}-{d}", int(d == 0), "ana", seconds=3.0, mode="full")
    return open_in_app(path)


def agreeing(body: dict, count: int) -> Reply:
    """A judge that calls "text 0" relevant, as the human did."""
    relevant = '"text": "text 0"' in body["messages"][1]["content"]
    return Reply(f'{{"grade": {int(relevant)}, "reason": "compared"}}')


def run_judge_from_the_form(base_url: str, pairs: int, retries: int = 4):
    at = open_page(PAGE)
    at.text_input[0].input(base_url)
    at.text_input[1].input("fake-model")
    at.text_input[2].input("fake")
    at.number_input[0].set_value(pairs)
    at.number_input[1].set_value(retries)
    at.button[0].click()  # the form's submit button
    return at.run()


def test_an_admin_runs_a_judge_and_sees_its_figures_and_its_agreement_with_the_humans(
    human_labelled,
):
    with FakeJudge(agreeing) as fake:
        at = run_judge_from_the_form(fake.base_url, 12)
    assert not at.exception
    assert len(fake.requests) == 12
    judges_table = table_with(at, "judge")
    assert judges_table["judge"].tolist() == ["machine:fake"]
    assert judges_table["labels"].tolist() == [12] and judges_table["prompt_tokens"].tolist() == [
        600
    ]
    agreement = table_with(at, "kappa").set_index("slice")
    assert agreement.loc["(all)", "pairs"] == 12 and agreement.loc["(all)", "kappa"] == 1.0
    assert set(agreement.index) == {"(all)", "<b>head</b>", "tail"}  # slice names as data
    texts = [element.value for element in at.text]
    assert "too few pairs to tell on slice <b>head</b> (6 < 30)" in texts


def test_a_limit_keeps_the_run_bounded_and_a_second_run_resumes(human_labelled):
    with FakeJudge(agreeing) as fake:
        run_judge_from_the_form(fake.base_url, 5)
        at = run_judge_from_the_form(fake.base_url, 20)
    assert len(fake.requests) == 12  # 5, then the 7 left
    assert table_with(at, "judge")["labels"].tolist() == [12]


def test_an_unreachable_server_is_reported_not_raised(human_labelled):
    fake = FakeJudge()
    fake.stop()
    at = run_judge_from_the_form(fake.base_url, 3, retries=0)
    assert not at.exception
    outcome = " ".join(html.proto.body for html in at.get("html"))
    assert "0 of 3 pairs labelled" in outcome and "run again to resume" in outcome


def test_the_planner_prices_filling_holes_beside_the_human_hours_saved(human_labelled):
    with FakeJudge(agreeing) as fake:
        run_judge_from_the_form(fake.base_url, 12)
    at = open_page("../labeler/views/planner.py")
    prices = [n for n in at.number_input if "million" in n.label]
    prices[0].set_value(1.0)
    prices[1].set_value(4.0)
    holes = next(n for n in at.number_input if n.label == "Holes to fill")
    holes.set_value(1200)
    at.run()
    row = table_with(at, "machine dollars").iloc[0]
    # 12 labels took 600 prompt and 108 completion tokens (the fake's usage): 100 times that.
    assert row["machine dollars"] == pytest.approx((60_000 * 1.0 + 10_800 * 4.0) / 1e6)
    # Every human judgement took 3 s: 1,200 of them are an hour.
    assert row["human hours saved"] == pytest.approx(1.0) and row["labels so far"] == 12


def test_the_prompt_edited_on_the_form_is_the_one_the_judge_is_sent(human_labelled):
    with FakeJudge(agreeing) as fake:
        at = open_page(PAGE)
        at.text_input[0].input(fake.base_url)
        at.text_input[1].input("fake-model")
        at.number_input[0].set_value(1)
        at.text_area[0].input("Grade on $scale, at most $max_grade. Answer in JSON.")
        at.button[0].click()
        at.run()
    assert not at.exception
    system = fake.requests[0]["messages"][0]["content"]
    assert system.startswith("Grade on ") and system.endswith("at most 1. Answer in JSON.")


def test_a_prompt_with_a_bad_placeholder_is_refused_on_the_page(human_labelled):
    with FakeJudge(agreeing) as fake:
        at = open_page(PAGE)
        at.text_input[0].input(fake.base_url)
        at.text_input[1].input("fake-model")
        at.text_area[0].input("Grade on $scales")
        at.button[0].click()
        at.run()
    assert not at.exception and fake.requests == []
    outcome = " ".join(html.proto.body for html in at.get("html"))
    assert "bad placeholder" in outcome


def test_the_calibration_shows_each_slices_confusion_matrix(human_labelled):
    with FakeJudge(agreeing) as fake:
        at = run_judge_from_the_form(fake.base_url, 12)
    agreement = table_with(at, "kappa").set_index("slice")
    # Six relevant pairs and six not, all agreed on.
    assert agreement.loc["(all)", "confusion [[TN FP] [FN TP]]"] == "[[6, 0], [0, 6]]"


def disagreeing(body: dict, count: int) -> Reply:
    """A judge that calls every pair relevant: it disagrees with the human on "text 1"."""
    return Reply('{"grade": 1, "reason": "everything is"}')


def test_an_admin_trusts_a_judge_and_sees_the_queries_waiting_for_a_second_annotator(
    human_labelled,
):
    with FakeJudge(disagreeing) as fake:
        at = run_judge_from_the_form(fake.base_url, 4)  # the pairs of q0 and q1
    assert not at.exception
    trusted = next(box for box in at.selectbox if box.label.startswith("Trusted judge"))
    assert trusted.value is None
    trusted.set_value("machine:fake")
    at.run()
    waiting = table_with(at, "first_annotator")
    assert waiting.to_dict("records") == [
        {"query_id": "q0", "first_annotator": "ana", "pairs": 1},
        {"query_id": "q1", "first_annotator": "ana", "pairs": 1},
    ]
    # ana finished every query: bob gets one as a second opinion
    with Store(human_labelled) as store:
        assert store.trusted_judge() == "machine:fake" and store.next_query("bob") == "q0"


def test_only_the_holes_are_judged_when_asked(human_labelled):
    with Store(human_labelled) as store:
        store.import_records(
            [{"query_id": "q6", "query": "new", "candidates": [{"doc_id": "n1"}, {"doc_id": "n2"}]}]
        )
    with FakeJudge(agreeing) as fake:
        at = open_page(PAGE)
        at.text_input[0].input(fake.base_url)
        at.text_input[1].input("fake-model")
        at.checkbox[0].check()
        at.button[0].click()
        at.run()
    assert not at.exception
    with Store(human_labelled) as store:
        labelled = store.machine_judgments_frame("machine:fake-model")
    assert sorted(labelled["doc_id"]) == ["n1", "n2"]  # every other pair has a human label


def test_a_pooled_runs_top_k_is_judged_from_the_page(tmp_path, monkeypatch):
    corpus, queries, run = (tmp_path / name for name in ("corpus.jsonl", "q.jsonl", "r1.trec"))
    corpus.write_text("".join(f'{{"_id": "d{d}", "text": "doc {d}"}}\n' for d in range(3)))
    queries.write_text('{"_id": "1", "text": "one"}\n{"_id": "2", "text": "two"}\n')
    run.write_text("".join(f"{q} Q0 d{d} {d} {9 - d} r1\n" for q in (1, 2) for d in range(3)))
    with Store(tmp_path / "pooled.db") as store:
        store.pool(corpus, queries, [run], depth=3)
    with opened_by_the_app(tmp_path / "pooled.db", monkeypatch), FakeJudge(agreeing) as fake:
        at = open_page(PAGE)
        at.text_input[0].input(fake.base_url)
        at.text_input[1].input("fake-model")
        at.selectbox[1].set_value("r1")
        at.number_input[2].set_value(1)  # depth: each query's top 1
        at.button[0].click()
        at.run()
        assert not at.exception
    with Store(tmp_path / "pooled.db") as store:
        labelled = store.machine_judgments_frame("machine:fake-model")
    pairs = sorted(zip(labelled["query_id"], labelled["doc_id"], strict=True))
    assert pairs == [("1", "d0"), ("2", "d0")]


def test_a_server_variable_cannot_be_named_as_the_key_on_the_page(human_labelled, monkeypatch):
    monkeypatch.setenv("SERVER_ONLY_SECRET", "hunter2")
    with FakeJudge(agreeing) as fake:
        at = open_page(PAGE)
        at.text_input[0].input(fake.base_url)
        at.text_input[1].input("fake-model")
        at.text_input[3].input("SERVER_ONLY_SECRET")
        at.button[0].click()
        at.run()
    assert not at.exception and fake.requests == []  # nothing sent, the secret least of all
    outcome = " ".join(html.proto.body for html in at.get("html"))
    assert "Not done: the API key may come only from GOLDSET_JUDGE_*" in outcome
    assert "hunter2" not in outcome


def test_a_variable_allowed_from_the_cli_holds_the_key_the_page_sends(human_labelled, monkeypatch):
    monkeypatch.setenv("TEAM_LLM_KEY", "sk-team")
    allowed = CliRunner().invoke(
        cli, ["judge-key-env", "--db", str(human_labelled), "TEAM_LLM_KEY"]
    )
    assert allowed.exit_code == 0
    with FakeJudge(agreeing) as fake:
        at = open_page(PAGE)
        at.text_input[0].input(fake.base_url)
        at.text_input[1].input("fake-model")
        at.text_input[3].input("TEAM_LLM_KEY")
        at.number_input[0].set_value(1)
        at.button[0].click()
        at.run()
    assert not at.exception
    assert [headers["Authorization"] for headers in fake.headers] == ["Bearer sk-team"]


def test_a_redirecting_endpoint_is_reported_on_the_page_with_the_pair(human_labelled, monkeypatch):
    monkeypatch.setenv("GOLDSET_JUDGE_API_KEY", "sk-secret")
    with FakeJudge(agreeing) as elsewhere:
        location = {"Location": f"{elsewhere.base_url}/chat/completions"}
        redirect = Reply(status=302, raw=b"", headers=location)
        with FakeJudge(lambda body, n: redirect) as fake:
            at = run_judge_from_the_form(fake.base_url, 3, retries=0)
    assert not at.exception and elsewhere.requests == []
    outcome = " ".join(html.proto.body for html in at.get("html"))
    assert "0 of 3 pairs labelled; failed: unreachable" in outcome
    assert f"q0 d0-0: unreachable: HTTP 302: redirected to {elsewhere.base_url}" in outcome
