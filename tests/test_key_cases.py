"""One table of cases (tests/key_cases.json) for the two places that say what a key press
does: the server (``judging`` over the store, the state ``golden.derive_state`` derives from
the events the presses wrote) and the browser's prediction (``keys.js``, run in Node on the
``keys.panel_model`` the server would send before each key). docs/labelling.md is the
contract both follow.

Each case is a protocol, the candidates of its query q1 (an imported list, or several pooled
runs), and keys pressed on it, each with what follows: the query open, its current card, q1's
cards (a digit per grade, ``v`` a 0 a verdict gave, ``.`` unjudged), status, complete,
answerable, first relevant position, judged depth, whether a verdict is due, holes. Another
query, q2 (cards e1, e2), is next in the queue. ``keys.js`` shows the open query, its current
card and, on q1, the cards; ``"foreseen": false`` marks the keys it leaves to the server
(its panel then waits for the server's answer).

keys.js runs in the Node that Playwright runs its driver on (the one its wheel ships, or
``PLAYWRIGHT_NODEJS_PATH``): wherever the browser tests can run, this one can, with no browser
and no Node of the machine's own (.ci/run installs none).
"""

from __future__ import annotations

import json
import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from playwright._impl._driver import compute_driver_executable

from goldset.labeler import keys, pooling
from goldset.labeler.golden import Event, QueryContext, derive_state
from goldset.labeler.judging import IMPLIED_NAME, LabelSession, QueryView, grade_name
from goldset.labeler.store import Store

TESTS = Path(__file__).resolve().parent
CASES = json.loads((TESTS / "key_cases.json").read_text(encoding="utf-8"))["cases"]
KEYS_JS = TESTS.parent / "labeler" / "keys.js"
PREDICT = TESTS / "helpers" / "keys_predict.mjs"
ANNOTATOR = "ana"
NEXT_QUERY = ("e1", "e2")  # q2's candidates
SEEN_BY_BOTH = ("open", "current", "grades")  # what keys.js shows of a step
STATE = ("status", "complete", "answerable", "first", "judged", "due", "holes")
TEXT = "where is the answer"  # every query and document: the corpus search finds them


@dataclass
class ServerRun:
    """A case played on the server: the panel sent before each key, and what followed it."""

    panels: list[dict | None]
    seen: list[dict]


def tasks(case: dict) -> list[dict]:
    """The case's queries as a tasks file holds them: q1 with its candidates, then q2."""
    return [
        {
            "query_id": query_id,
            "query": TEXT,
            "candidates": [{"doc_id": doc_id, "text": TEXT} for doc_id in docs],
        }
        for query_id, docs in (("q1", case.get("candidates", ())), ("q2", NEXT_QUERY))
    ]


def pool_files(case: dict, folder: Path) -> tuple[Path, Path, list[Path]]:
    """The case's runs as pooling reads them: a corpus, the queries and a TREC file per run
    (each ranks q1 as the case says, and q2's candidates in order)."""
    corpus, queries = folder / "corpus.jsonl", folder / "queries.jsonl"
    docs = {doc_id for ranking in case["runs"].values() for doc_id in ranking} | set(NEXT_QUERY)
    corpus.write_text("".join(json.dumps({"_id": d, "text": TEXT}) + "\n" for d in sorted(docs)))
    queries.write_text("".join(json.dumps({"_id": q, "text": TEXT}) + "\n" for q in ("q1", "q2")))
    runs = []
    for name, ranking in case["runs"].items():
        lines = [
            f"{query_id} Q0 {doc_id} {rank} {100 - rank} {name}\n"
            for query_id, docs in (("q1", ranking), ("q2", NEXT_QUERY))
            for rank, doc_id in enumerate(docs, start=1)
        ]
        runs.append(folder / f"{name}.trec")
        runs[-1].write_text("".join(lines))
    return corpus, queries, runs


def open_project(case: dict, folder: Path) -> Store:
    """A project holding the case's queries under its protocol, with one annotator."""
    store = Store(folder / "project.db")
    if "runs" in case:
        corpus, queries, runs = pool_files(case, folder)
        store.pool(corpus, queries, runs, depth=10)
    else:
        store.import_records(tasks(case))
    protocol = case["protocol"]
    store.configure(
        mode=protocol["mode"],
        max_grade=protocol["max_grade"],
        rel_threshold=protocol["threshold"],
        depth=protocol["depth"],
        by="test",
    )
    store.add_annotator(ANNOTATOR)
    return store


def panel(session: LabelSession) -> dict | None:
    """The panel the label page sends the browser now (as views/label.py builds it)."""
    page = session.page()
    return keys.panel_model(
        session,
        page.view,
        page.ahead,
        page.last_action,
        grade_name=grade_name,
        implied=IMPLIED_NAME,
    )


def q1_state(store: Store):
    """q1's state for the annotator, derived from their events by ``golden.derive_state``,
    with q1's context as the page shows it: the cards within the depth, and each run's
    ranking of them (from their provenance)."""
    settings = store.settings()
    cards = store.candidates("q1")
    if settings["depth"]:
        cards = cards[: settings["depth"]]
    rankings: dict[str, list[tuple[int, str]]] = {}
    for card in cards:
        for run, rank in card["provenance"].items():
            rankings.setdefault(run, []).append((rank, card["doc_id"]))
    context = QueryContext(
        rankings={run: [doc for _, doc in sorted(docs)] for run, docs in rankings.items()},
        positions={card["doc_id"]: card["position"] for card in cards},
        threshold=settings["rel_threshold"],
        default_mode=settings["mode"],
    )
    log = store.events_frame("q1")
    events = [
        Event(
            id=int(row.id),
            query_id=row.query_id,
            annotator=row.annotator,
            action=row.action,
            doc_id=row.doc_id,
            grade=None if pd.isna(row.grade) else int(row.grade),
            mode=row.mode,
            undoes=None if pd.isna(row.undoes) else int(row.undoes),
        )
        for row in log[log.annotator == ANNOTATOR].itertuples()
    ]
    return derive_state(events, context), [card["doc_id"] for card in cards]


def card_marks(grades: dict[str, int], asserted: frozenset[str], cards: list[str]) -> str:
    """q1's cards as the table writes them: a digit per grade, ``v`` for a 0 a verdict gave,
    ``.`` unjudged."""
    return "".join(
        "v" if doc in asserted else str(grades[doc]) if doc in grades else "." for doc in cards
    )


def served_state(store: Store) -> dict:
    """What the server reads of q1 for the annotator (``Store.query_state``), in the
    table's words."""
    state = store.query_state("q1", ANNOTATOR)
    return {
        "status": state["status"],
        "complete": state["complete"],
        "answerable": state["answerable"],
        "first": state["first_relevant_rank"],
        "judged": state["judged_depth"],
        "due": state["needs_verdict"],
        "holes": state["holes"],
    }


def play_on_the_server(case: dict, folder: Path) -> ServerRun:
    """Press the case's keys in a label session: the panel before each key, and after it the
    open query, its current card, and q1's state as derive_state gives it (checked against
    what the store serves)."""
    store = open_project(case, folder)
    session = LabelSession(store, ANNOTATOR)
    panels, seen = [], []
    try:
        for step in case["steps"]:
            panels.append(panel(session))
            session.press(step["key"], seconds=1.0)
            view = session.page().view
            state, cards = q1_state(store)
            derived = {
                "open": session.query_id,
                "current": view.current["doc_id"] if view and view.current else None,
                "grades": card_marks(state.grades, state.asserted, cards),
                "status": state.status,
                "complete": state.complete,
                "answerable": state.answerable,
                "first": state.first_relevant_position,
                "judged": state.judged_depth,
                "due": state.needs_verdict,
                "holes": state.holes,
            }
            derived["served"] = served_state(store)
            seen.append(derived)
    finally:
        store.close()
    return ServerRun(panels, seen)


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> dict[str, ServerRun]:
    """Every case played on the server, each in a project of its own."""
    return {
        case["name"]: play_on_the_server(case, tmp_path_factory.mktemp(case["name"]))
        for case in CASES
    }


def run_keys_js(cases: dict[str, list], schedules: list | None = None) -> dict[str, dict]:
    """keys.js's predictions (tests/helpers/keys_predict.mjs) for ``cases``: name -> the
    [panel, key] of each step; and its first-hit schedule of each of ``schedules``
    ([rankings, grades, threshold], under the key "schedules")."""
    node, _ = compute_driver_executable()
    request = {"keys_js": str(KEYS_JS), "table": keys.browser_table(), "cases": cases}
    if schedules is not None:
        request["schedules"] = schedules
    done = subprocess.run(
        [str(node), str(PREDICT)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def predicted(server: dict[str, ServerRun]) -> dict[str, dict]:
    """keys.js's predictions for every case, each key on the panel the server sent before it."""
    return run_keys_js(
        {
            case["name"]: [
                [sent, step["key"]]
                for sent, step in zip(server[case["name"]].panels, case["steps"], strict=True)
            ]
            for case in CASES
        }
    )


def shown(prediction: dict | None) -> dict | None:
    """What keys.js shows of a step, in the table's words: the open query, its current card,
    and q1's cards while q1 is open (None: it waits for the server)."""
    if prediction is None:
        return None
    marks = {"open": prediction["query"], "current": prediction["current"]}
    if prediction["query"] == "q1":
        grades = {doc: grade for doc, grade, _ in prediction["cards"] if grade is not None}
        implied = frozenset(doc for doc, _, by_verdict in prediction["cards"] if by_verdict)
        marks["grades"] = card_marks(grades, implied, [doc for doc, _, _ in prediction["cards"]])
    return marks


def outcome(step: dict) -> dict:
    """What the page shows after ``step`` in the table, in the words of :func:`shown`."""
    marks = {name: step[name] for name in SEEN_BY_BOTH}
    if step["open"] != "q1":
        del marks["grades"]
    return marks


def expected_shown(step: dict) -> dict | None:
    """What the table expects keys.js to show after ``step`` (None where it is not foreseen)."""
    return outcome(step) if step.get("foreseen", True) else None


def ids(case: dict) -> str:
    return case["name"]


def test_the_table_is_well_formed():
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names)) >= 30
    for case in CASES:
        assert set(case["protocol"]) == {"mode", "max_grade", "threshold", "depth"}
        for step in case["steps"]:
            assert set(step) - {"key", "foreseen"} == set(SEEN_BY_BOTH + STATE), case["name"]


def test_every_grade_on_a_pooled_first_hit_query_is_foreseen():
    # keys.js applies the server's first-hit schedule over several runs: no grade waits.
    pooled = [case for case in CASES if "runs" in case and case["protocol"]["mode"] == "first_hit"]
    grades = [
        step
        for case in pooled
        for step in case["steps"]
        if step["key"].isdigit() and int(step["key"]) <= case["protocol"]["max_grade"]
    ]
    assert len(pooled) >= 7 and len(grades) >= 25
    assert all(step.get("foreseen", True) for step in grades)


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_the_server_does_what_the_table_says(case, server):
    run = server[case["name"]]
    for number, (step, seen) in enumerate(zip(case["steps"], run.seen, strict=True), start=1):
        expected = {name: step[name] for name in SEEN_BY_BOTH + STATE}
        derived = {name: seen[name] for name in SEEN_BY_BOTH + STATE}
        assert derived == expected, f"key {number} ({step['key']!r})"
        # The state the store serves (its projection) is the one derived from the log.
        assert seen["served"] == {name: seen[name] for name in STATE}, f"key {number}"


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_keys_js_shows_what_the_table_says(case, predicted):
    predictions = predicted[case["name"]]["answered"]
    for number, (step, prediction) in enumerate(zip(case["steps"], predictions, strict=True), 1):
        assert shown(prediction) == expected_shown(step), f"key {number} ({step['key']!r})"


@pytest.mark.parametrize("case", CASES, ids=ids)
def test_keys_typed_before_the_server_answers_show_nothing_the_table_contradicts(case, predicted):
    # From each step on, the keys predicted on that step's panel alone: each one keys.js
    # foresees shows what the table says, up to the first it leaves to the server.
    steps = case["steps"]
    for start, predictions in enumerate(predicted[case["name"]]["typed"]):
        for number, (step, prediction) in enumerate(
            zip(steps[start:], predictions, strict=True), start=start + 1
        ):
            if prediction is not None:
                assert shown(prediction) == outcome(step), f"from key {start + 1}, key {number}"


# --- the first-hit schedule: keys.js's and pooling.py's ------------------------------------------


def random_schedules(count: int, seed: int) -> list:
    """``count`` random [rankings, grades, threshold] over up to 6 cards and 4 runs (card
    indices; a grade or None per card), with ties in frontier rank and shared frontiers
    frequent at this size."""
    rng = random.Random(seed)
    schedules = []
    for _ in range(count):
        cards = rng.randint(1, 6)
        rankings = [
            rng.sample(range(cards), rng.randint(1, cards)) for _ in range(rng.randint(1, 4))
        ]
        grades = [rng.choice([None, None, 0, 0, 1, 2]) for _ in range(cards)]
        schedules.append([rankings, grades, rng.choice([1, 2])])
    return schedules


def test_keys_js_schedules_first_hit_as_pooling_does():
    schedules = random_schedules(2000, seed=7)
    found = run_keys_js({}, schedules)["schedules"]
    for (rankings, grades, threshold), seen in zip(schedules, found, strict=True):
        runs = {f"run{number}": ranking for number, ranking in enumerate(rankings)}
        judged = {card: grade for card, grade in enumerate(grades) if grade is not None}
        expected = [
            [pooling.run_settled(ranking, judged, threshold) for ranking in rankings],
            pooling.holes(runs, judged, threshold),
            pooling.next_to_judge(runs, judged, threshold, range(len(grades))),
        ]
        assert seen == expected, (rankings, grades, threshold)
    # the cases drawn hold every branch: settled and not, holes, a card next and none
    assert {seen[2] is None for seen in found} == {True, False}
    assert {seen[1] > 0 for seen in found} == {True, False}


# --- panel_model itself ---------------------------------------------------------------------------

BINARY = {"mode": "first_hit", "max_grade": 1, "rel_threshold": 1, "depth": 0}


def card(doc_id: str, grade: int | None, **provenance: int) -> dict:
    return {"doc_id": doc_id, "grade": grade, "provenance": provenance or {"import": 1}}


def query_view(query_id: str, cards: list[dict], **fields) -> QueryView:
    """A query as the label page shows it: the first unjudged card current."""
    current = next((c for c in cards if c["grade"] is None), None)
    return QueryView(
        query={"query_id": query_id, "query": f"text of {query_id}", "slice": "api"},
        state=fields.pop("state", {"status": "in_progress"}),
        mode=fields.pop("mode", "first_hit"),
        candidates=cards,
        current=fields.pop("current", current),
        attached=[],
        **fields,
    )


def panel_of(view, ahead=None, last_action=None, **session) -> dict | None:
    labelling = SimpleNamespace(
        protocol=session.get("protocol", BINARY),
        search=session.get("search"),
        history_armed=session.get("armed", False),
    )
    return keys.panel_model(
        labelling, view, ahead, last_action, grade_name=grade_name, implied=IMPLIED_NAME
    )


def test_no_query_on_screen_has_no_panel():
    assert panel_of(None) is None


def test_the_panel_is_the_query_its_cards_and_the_rules_that_apply():
    view = query_view(
        "q1",
        [card("a", 0), card("b", None), card("c", 0)],
        state={"status": "in_progress"},
        asserted=frozenset({"c"}),
    )
    assert panel_of(view, last_action={"query_id": "q0", "doc_id": None}, armed=True) == {
        "query": "q1",
        "text": "text of q1",
        "meta": "query q1 · slice api",
        "next": None,
        "undo_to": ["q0", None],
        "cards": [["a", 0, False], ["b", None, False], ["c", 0, True]],
        "current": "b",
        "mode": "first_hit",
        "threshold": 1,
        "done": False,
        "rankings": None,
        "grades": "01",
        "names": ["not relevant", "relevant"],
        "implied": "by verdict",
        "marker": keys.CARD_MARKER,
        "searching": False,
        "armed": True,
    }


def test_the_protocol_sets_the_grade_keys_their_names_and_the_threshold():
    protocol = {"mode": "full", "max_grade": 3, "rel_threshold": 2, "depth": 0}
    panel = panel_of(query_view("q1", [card("a", None)], mode="full"), protocol=protocol)
    assert (panel["grades"], panel["threshold"], panel["mode"]) == ("0123", 2, "full")
    assert panel["names"] == ["not relevant", "relevant", "highly relevant", "perfect"]


def test_a_done_query_reopened_says_so_and_opens_on_its_relevant_card():
    relevant = card("a", 1)
    view = query_view("q1", [relevant, card("b", None)], state={"status": "done"}, current=relevant)
    assert (panel_of(view)["done"], panel_of(view)["current"]) == (True, "a")


@pytest.mark.parametrize(
    ("cards", "rankings"),
    [
        ([], None),
        ([card("a", None), card("b", None)], None),  # an imported list: the cards' order
        ([card("a", None, bm25=1), card("b", None, bm25=2)], None),
        # by run name; each run best first, as card indices
        ([card("a", None, dense=2, bm25=1), card("b", None, dense=1)], [[0], [1, 0]]),
        ([card("a", None, A=1), card("b", None, B=1), card("c", None, C=1)], [[0], [1], [2]]),
        # equal ranks in a run go by doc id, as the server's context orders them
        ([card("b", None, A=1), card("a", None, A=1), card("c", None, A=0, B=1)], [[2, 1, 0], [2]]),
    ],
)
def test_rankings_give_each_pooled_run_s_cards_best_first(cards, rankings):
    assert panel_of(query_view("q1", cards))["rankings"] == rankings


def test_a_pooled_query_in_full_mode_has_no_rankings():
    # full mode judges every card in the cards' order: no run's ranking changes that
    cards = [card("a", None, A=1), card("b", None, B=1)]
    assert panel_of(query_view("q1", cards, mode="full"))["rankings"] is None


def test_the_query_fetched_ahead_opens_with_the_search_closed_and_h_not_waiting():
    view = query_view("q1", [card("a", None)])
    ahead = query_view("q2", [card("e1", None), card("e2", None)])
    panel = panel_of(view, ahead, search=object(), armed=True)
    assert (panel["searching"], panel["armed"]) == (True, True)
    following = panel["next"]
    assert (following["query"], following["current"], following["cards"]) == (
        "q2",
        "e1",
        [["e1", None, False], ["e2", None, False]],
    )
    assert (following["searching"], following["armed"]) == (False, False)
    assert (following["next"], following["undo_to"]) == (None, None)
