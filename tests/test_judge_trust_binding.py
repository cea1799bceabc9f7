"""A judge's trust belongs to the judge it was measured on (issue 28): its model, its prompt,
the grade scale and the golden set's version. A change of any of them makes it untrusted —
the queue stops sending its disagreements to a second annotator — until it is trusted again,
and the store, ``goldset calibrate`` and the Machine judges page say which one changed.

Four queries q0..q3 with three candidates each, in first-hit mode; "ana" judges q1's first
candidate relevant and the judge calls it irrelevant: q1 waits for a second opinion.
"""

import pytest
from click.testing import CliRunner
from helpers.projects import opened_by_the_app
from test_live import open_page
from test_second_opinions import JUDGE, TASKS, machine_label

from goldset.labeler.cli import cli
from goldset.labeler.store import Store

PAGE = "../labeler/views/judges.py"


@pytest.fixture
def disputed_store(make_store):
    """The four queries; ana and the judge, trusted on golden version v1, disagree on q1."""
    store = make_store(TASKS)
    store.judge("q1", "q1-d1", 1, "ana")
    machine_label(store, "q1", "q1-d1", 0)
    store.trust_judge(JUDGE, golden_version="v1")
    assert store.next_query("bob") == "q1"  # the second opinion first
    return store


def test_a_judge_trusted_as_it_is_stays_trusted(disputed_store):
    status = disputed_store.trust_status("v1")
    assert status["trusted"] and status["changed"] == []
    assert status["bound"] == {
        "model": "rule",
        "prompt_sha256": "0" * 64,
        "grade_scale": 3,
        "golden_version": "v1",
    }
    machine_label(disputed_store, "q2", "q2-d1", 1)  # more labels, same model and prompt
    assert disputed_store.trusted_judge() == JUDGE


@pytest.mark.parametrize(
    ("change", "changed"),
    [
        ({"prompt": "f" * 64}, "prompt"),
        ({"model": "rule-2"}, "model"),
    ],
)
def test_a_new_model_or_prompt_unbinds_the_trust_and_the_queue_forgets_it(
    disputed_store, change, changed
):
    machine_label(disputed_store, "q2", "q2-d1", 1, **change)
    status = disputed_store.trust_status()
    assert not status["trusted"] and status["changed"] == [changed]
    assert status["now"]["model"] == change.get("model", "rule")  # what it is now, beside bound
    assert disputed_store.trusted_judge() is None
    assert disputed_store.second_opinions() == []
    assert disputed_store.next_query("bob") == "q0"  # the ordinary queue


def test_a_new_grade_scale_unbinds_the_trust(disputed_store):
    disputed_store.configure(max_grade=4)
    assert disputed_store.trust_status()["changed"] == ["grade scale"]
    assert disputed_store.second_opinions() == [] and disputed_store.next_query("bob") == "q0"


def test_a_new_golden_set_version_unbinds_the_trust(disputed_store):
    assert disputed_store.trust_status("v2")["changed"] == ["golden-set version"]
    assert not disputed_store.trust_status("v2")["trusted"]


def test_trusting_it_again_binds_it_to_what_it_is_now(disputed_store):
    machine_label(disputed_store, "q2", "q2-d1", 1, prompt="f" * 64)
    disputed_store.trust_judge(JUDGE, golden_version="v2")
    assert disputed_store.trust_status("v2")["trusted"] and disputed_store.trusted_judge() == JUDGE
    assert disputed_store.next_query("bob") == "q1"


def test_calibrate_says_which_part_changed_and_trust_binds_the_golden_set(tmp_path, disputed_store):
    db = str(disputed_store.path)
    runner = CliRunner()
    trusted = runner.invoke(cli, ["calibrate", "--db", db, "--judge", "rule", "--trust"])
    assert trusted.exit_code == 0, trusted.output
    assert "trusted judge: machine:rule" in trusted.output
    disputed_store.judge("q0", "q0-d1", 1, "ana")  # the golden set moves on
    again = runner.invoke(cli, ["calibrate", "--db", db, "--judge", "rule", "--json"])
    assert '"changed": [\n      "golden-set version"\n    ]' in again.output
    text = runner.invoke(cli, ["calibrate", "--db", db, "--judge", "rule"]).output
    assert "machine:rule is no longer trusted: its golden-set version changed" in text


def test_the_judges_page_says_the_trust_no_longer_holds_and_trusts_again(tmp_path, monkeypatch):
    with Store(tmp_path / "project.db") as store:
        store.import_records(
            [{"query_id": "q0", "query": "question", "candidates": [{"doc_id": "d", "text": "t"}]}]
        )
        store.judge("q0", "d", 1, "ana")
        machine_label(store, "q0", "d", 0)
        store.trust_judge(JUDGE)  # no golden version: only model, prompt, scale compared
        machine_label(store, "q0", "d", 1, model="rule-2")  # a relabel under a new model
    with opened_by_the_app(tmp_path / "project.db", monkeypatch) as path:
        at = open_page(PAGE)
        assert not at.exception
        warning = " ".join(w.value for w in at.warning)
        assert "no longer trusted: its model changed" in warning
        next(b for b in at.button if b.label.startswith("Trust it again")).click()
        at.run()
        assert not at.exception
        with Store(path) as store:
            assert store.trust_status()["trusted"] and store.trusted_judge() == JUDGE
