"""Dealing queries to annotators with a blind overlap: the share, the slices, nobody gets a
query twice, and an annotator never sees another's labels."""

from collections import Counter

import pytest
from click.testing import CliRunner
from helpers.team import type_keys

from goldset.labeler.cli import cli
from goldset.labeler.judging import LabelSession
from goldset.labeler.store import DEMO_TASKS, Store
from goldset.labeler.team import deal

TEAM = ["ana", "bob", "cy"]


@pytest.fixture
def team_store(make_store) -> Store:
    """The demo project (50 queries, slices head and tail) with three annotators."""
    return make_store(DEMO_TASKS, users=TEAM)


def test_a_share_of_the_queries_goes_to_two_annotators(team_store):
    result = deal(team_store, TEAM, overlap=0.1, seed=3)
    copies = Counter(len(annotators) for annotators in team_store.assignees().values())
    assert result.queries == 50 and len(result.overlapping) == 5
    assert copies == {1: 45, 2: 5}
    assert all(len(team_store.assignees()[q]) == 2 for q in result.overlapping)


def test_the_overlap_is_spread_over_the_slices(team_store):
    result = deal(team_store, TEAM, overlap=0.2, seed=0)
    slices = Counter(team_store.query(query_id)["slice"] for query_id in result.overlapping)
    sizes = Counter(team_store.query(query_id)["slice"] for query_id in team_store.assignees())
    assert sum(slices.values()) == 10
    for name, size in sizes.items():  # each slice gets its share, to within one query
        assert abs(slices[name] - 0.2 * size) < 1


def test_work_is_balanced_and_nobody_gets_a_query_twice(team_store):
    result = deal(team_store, TEAM, overlap=0.3, judges=3, seed=1)
    loads = [len(team_store.assignments(name)) for name in TEAM]
    assert max(loads) - min(loads) <= 1
    for name in TEAM:
        assert len(team_store.assignments(name)) == len(set(team_store.assignments(name)))
    assert sum(loads) == 50 + 2 * len(result.overlapping)


def test_the_sample_is_seeded(team_store, tmp_path):
    first = deal(team_store, TEAM, overlap=0.1, seed=5).overlapping
    with Store(tmp_path / "again.db") as again:
        again.import_tasks(DEMO_TASKS)
        for name in TEAM:
            again.add_annotator(name)
        assert deal(again, TEAM, overlap=0.1, seed=5).overlapping == first


def test_dealing_again_deals_only_what_nobody_has(team_store):
    deal(team_store, TEAM, overlap=0.1, slices=["head"])
    head = len(team_store.assignees())
    second = deal(team_store, TEAM, overlap=0.1)
    assert second.queries == 50 - head
    assert deal(team_store, TEAM, overlap=0.1).queries == 0


def test_a_removed_users_unfinished_queries_can_be_dealt_again(team_store):
    first = deal(team_store, TEAM, overlap=0.0)
    type_keys(team_store, "cy", first.plan["cy"][0], "1")  # cy finishes one query
    team_store.remove_annotator("cy")
    again = deal(team_store, ["ana", "bob"], overlap=0.0)
    assert sorted(sum(again.plan.values(), [])) == sorted(first.plan["cy"][1:])


def test_a_query_never_goes_back_to_who_already_labelled_it(team_store):
    type_keys(team_store, "ana", "q01", "0")  # ana started q01 before any assignment
    result = deal(team_store, ["ana", "bob"], overlap=1.0)
    assert "q01" not in result.plan["ana"] and "q01" in result.plan["bob"]
    assert "q01" not in result.overlapping  # only one eligible annotator was left


def test_done_queries_are_not_dealt(team_store):
    type_keys(team_store, "ana", "q01", "1")
    assert deal(team_store, TEAM).queries == 49
    assert "q01" not in team_store.assignees()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"annotators": []}, "at least one annotator"),
        ({"annotators": ["ana", "zed"]}, "not registered users: zed"),
        ({"annotators": TEAM, "overlap": 1.5}, "overlap must be a share"),
        ({"annotators": ["ana"], "overlap": 0.1}, "needs 2 to 1 judges"),
        ({"annotators": TEAM, "judges": 4}, "needs 2 to 3 judges"),
    ],
)
def test_impossible_deals_are_refused_and_change_nothing(team_store, kwargs, message):
    with pytest.raises(ValueError, match=message):
        deal(team_store, **kwargs)
    assert team_store.assignees() == {}


def test_an_assignment_plan_is_all_or_nothing(team_store):
    with pytest.raises(ValueError, match="unknown query"):
        team_store.assign_plan({"ana": ["q01"], "bob": ["q02", "nope"]})
    assert team_store.assignees() == {}


def what_bob_sees(store, query_id):
    """Everything bob's label page reads about a query."""
    session = LabelSession(store, "bob")
    session.query_id = query_id
    view = session.page().view
    return (
        view.state,
        [(c["doc_id"], c["grade"]) for c in view.candidates],
        view.current["doc_id"],
        view.attached,
        store.labels(query_id, "bob"),
        store.progress("bob"),
        store.next_query("bob"),
    )


def test_overlap_is_blind_an_annotator_never_sees_anothers_labels(team_store):
    team_store.assign("ana", ["q01", "q02"])
    team_store.assign("bob", ["q01", "q02"])
    before = what_bob_sees(team_store, "q01")
    type_keys(team_store, "ana", "q01", "001")
    team_store.attach("q01", "cirrus/auth/v1.py#LegacyAuthClient", 1, "ana")
    team_store.set_note("q01", "ana", "the third one")
    assert team_store.query_state("q01")["status"] == "done"  # the golden set has ana's label...
    assert what_bob_sees(team_store, "q01") == before  # ...bob's view of it is unchanged
    assert team_store.next_query("bob") == "q01"  # and it is still his to do


def test_cli_assign_deals_to_every_annotator_by_default(team_store):
    team_store.add_annotator("rita", role="reviewer")
    db = str(team_store.path)
    result = CliRunner().invoke(cli, ["assign", "--db", db, "--overlap", "0.1", "--seed", "2"])
    assert result.exit_code == 0, result.output
    assert "dealt 50 queries (5 to several annotators, blind)" in result.output
    assert team_store.assignments("rita") == []
    again = CliRunner().invoke(cli, ["assign", "--db", db, "--to", "ana", "--to", "zed"])
    assert again.exit_code == 2 and "not registered users: zed" in again.output
