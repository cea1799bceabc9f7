"""Roles enforced by the app's server, and the review and admin pages, driven with AppTest.

Security first: an unauthenticated session gets the login form only; an annotator's session
has no reviewer or admin page to switch to, those pages refuse an annotator when run
directly, and their actions check the role in the database when they fire.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.team import PASSWORD, PLANTED_KAPPA, PLANTED_QUEUE
from streamlit.testing.v1 import AppTest

from goldset.labeler.accounts import LOCK_AFTER_FAILURES
from goldset.labeler.auth import hash_password
from goldset.labeler.store import Store

APP = "../labeler/app.py"
REVIEW = "views/review.py"
ADMIN = "views/admin.py"
OIDC = {
    "auth": {
        "redirect_uri": "http://127.0.0.1:8501/oauth2callback",
        "cookie_secret": "not-a-secret",
        "client_id": "goldset",
        "client_secret": "not-a-secret",
        "server_metadata_url": "https://idp.invalid/.well-known/openid-configuration",
    }
}


@pytest.fixture
def planted_app(planted_db, open_in_app) -> Path:
    """The planted team project (see tests/helpers/team.py), opened by the app. Only ana
    has a password (hashing is deliberately slow); the others are signed in directly."""
    with Store(planted_db) as store:
        store.update_annotator("ana", password_hash=hash_password(PASSWORD))
    return open_in_app(planted_db)


def session(user: str | None = None, page: str | None = None) -> AppTest:
    """A browser session on the app, already signed in as ``user`` if given, on ``page``."""
    at = AppTest.from_file(APP, default_timeout=30)
    if user:
        at.session_state["annotator"] = user
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, at.exception
    return at


def log_in(at: AppTest, name: str, password: str) -> AppTest:
    at.text_input[0].input(name)
    at.text_input[1].input(password)
    return next(button for button in at.button if button.label == "Log in").click().run()


def texts(at: AppTest) -> str:
    """Everything the page says, in one string."""
    parts = [
        element.value
        for kind in ("title", "subheader", "error", "warning")
        for element in at.get(kind)
    ]
    parts += [html.proto.body for html in at.get("html")]
    return "\n".join(str(part) for part in parts)


# --- who may see what -----------------------------------------------------------------------------


@pytest.mark.parametrize("page", [None, "views/label.py", REVIEW, ADMIN])
def test_unauthenticated_session_sees_only_the_login_form(planted_app, page):
    at = session(page=page)  # whichever page the browser asks for
    assert [field.label for field in at.text_input] == ["User name", "Password"]
    assert [button.label for button in at.button] == ["Log in"]
    assert "question" not in texts(at) and not at.dataframe and not at.metric


def test_annotator_gets_the_label_page_and_no_reviewer_or_admin_page(planted_app):
    at = log_in(session(), "ana", PASSWORD)
    assert "Labelling as ana" in texts(at)
    for page in (REVIEW, ADMIN, "views/dashboard.py"):
        with pytest.raises(ValueError, match="Could not find a navigation page"):
            at.switch_page(page)


def test_reviewer_gets_review_but_not_admin(planted_app):
    at = session("rita", REVIEW)
    assert "Adjudication queue" in texts(at)
    with pytest.raises(ValueError, match="Could not find a navigation page"):
        at.switch_page(ADMIN)


@pytest.mark.parametrize(("page", "role"), [(REVIEW, "reviewers"), (ADMIN, "admins")])
def test_reviewer_and_admin_pages_refuse_an_annotator_on_their_own(planted_app, page, role):
    # The page run directly, bypassing the navigation: it checks the role itself.
    at = AppTest.from_file(f"../labeler/{page}", default_timeout=30)
    at.session_state["annotator"] = "ana"
    at.run()
    assert [error.value for error in at.error] == [
        f"This page is for {role}; you are signed in as annotator."
    ]
    assert not at.dataframe and not at.button and not at.get("form")


def test_a_removed_user_is_signed_out_at_the_next_click(planted_app):
    at = session("ana")
    with Store(planted_app) as store:
        store.remove_annotator("ana")
    at.run()
    assert [field.label for field in at.text_input] == ["User name", "Password"]


def test_a_demoted_reviewers_stale_page_cannot_decide(planted_app):
    at = session("rita", REVIEW)
    with Store(planted_app) as store:
        store.update_annotator("rita", role="annotator")
    at.button(key="adopt_q5_bob").click().run()  # the callback fires before the page reruns
    with Store(planted_app) as store:
        assert store.decisions() == {}


# --- sign-in --------------------------------------------------------------------------------------


def test_wrong_passwords_lock_the_account_from_the_login_form(planted_app):
    at = session()
    for _ in range(LOCK_AFTER_FAILURES):
        log_in(at, "ana", "wrong")
    assert "locked until" in at.error[0].value
    log_in(at, "ana", PASSWORD)
    assert "locked until" in at.error[0].value and "Labelling as" not in texts(at)


def test_identity_provider_sign_in_is_offered_when_secrets_configure_it(planted_app):
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets.update(OIDC)
    at.user.update({"is_logged_in": False})
    at.run()
    assert [button.label for button in at.button][:1] == ["Sign in with your identity provider"]
    assert [field.label for field in at.text_input] == ["User name", "Password"]


def test_each_named_identity_provider_gets_its_button(planted_app):
    shared = {key: OIDC["auth"][key] for key in ("redirect_uri", "cookie_secret")}
    provider = {key: OIDC["auth"][key] for key in ("client_id", "client_secret")}
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets.update({"auth": {**shared, "google": provider, "okta": provider}})
    at.user.update({"is_logged_in": False})
    at.run()
    assert [button.label for button in at.button] == [
        "Sign in with google",
        "Sign in with okta",
        "Log in",
    ]


def test_identity_provider_user_who_is_registered_is_signed_in_with_their_role(planted_app):
    with Store(planted_app) as store:
        store.add_annotator("rev@example.com", role="reviewer")
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets.update(OIDC)
    at.user.update({"is_logged_in": True, "email": "rev@example.com", "email_verified": True})
    at.run().switch_page(REVIEW).run()
    assert "Adjudication queue" in texts(at)


@pytest.mark.parametrize(
    "claims",
    [{"email": "rev@example.com"}, {"email": "ana", "email_verified": True}],
    ids=["e-mail not verified", "an account with a password"],
)
def test_identity_provider_sign_in_takes_only_verified_password_free_accounts(planted_app, claims):
    with Store(planted_app) as store:
        store.add_annotator("rev@example.com", role="reviewer")
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets.update(OIDC)
    at.user.update({"is_logged_in": True, **claims})
    at.run()
    assert "Log in" in [button.label for button in at.button]
    assert "Labelling as" not in texts(at)


def test_identity_provider_user_who_is_not_registered_is_told_and_kept_out(planted_app):
    at = AppTest.from_file(APP, default_timeout=30)
    at.secrets.update(OIDC)
    at.user.update({"is_logged_in": True, "email": "stranger@example.com", "email_verified": True})
    at.run()
    assert "not a user of this project" in at.warning[0].value
    assert at.text[0].value == "stranger@example.com"
    assert "Labelling as" not in texts(at)


# --- the review page ------------------------------------------------------------------------------


def test_review_page_shows_the_planted_agreement_and_queue(planted_app):
    at = session("rita", REVIEW)
    kappa = at.metric[0]
    assert kappa.label == "kappa (relevant or not)" and kappa.value == f"{PLANTED_KAPPA:.3f}"
    assert at.dataframe[1].value["Query id"].tolist() == PLANTED_QUEUE
    assert "Adjudication queue · 3 waiting" in texts(at)
    chooser = at.selectbox(key="review_query")
    assert (
        chooser.options[0].startswith("1 · q5 · ")
        and "RR@10 gap 0.75 · waiting" in (chooser.options[0])
    )


def decide(at: AppTest, query_id: str) -> AppTest:
    """Press the decision form's button of ``query_id``."""
    next(
        b for b in at.button if b.label == "Decide with these grades" and query_id in str(b.form_id)
    ).click().run()
    return at


def test_a_disagreement_shows_the_query_the_candidates_texts_and_each_annotators_grade(planted_app):
    at = session("rita", REVIEW)
    at.selectbox(key="review_query").set_value("q2").run()
    with Store(planted_app) as store:
        query = store.query("q2")["query"]
        first = store.candidates("q2")[0]
    page = texts(at)
    assert query in page
    # the candidates' own texts (a disputed one in full), to decide with the evidence
    assert f'<div class="gs-text gs-text-current"><bdi>{first["text"]}</bdi>' in page
    assert '<span class="gs-now">disputed</span>' in page
    assert "ana: 0 · not relevant · bob: 1 · relevant" in page


def test_the_decision_form_starts_with_no_choice_for_a_disputed_grade_and_requires_one(planted_app):
    at = session("rita", REVIEW)
    at.selectbox(key="review_query").set_value("q2").run()
    disputed = at.selectbox(key="grade_q2_0")
    assert disputed.value is None and "disputed" in disputed.label
    decide(at, "q2")
    assert "Choose a grade for the disputed row(s) 1, 2 first." in texts(at)
    with Store(planted_app) as store:
        assert store.decisions() == {}
    at.selectbox(key="grade_q2_0").set_value(1)
    at.selectbox(key="grade_q2_1").set_value(0)
    decide(at, "q2")
    with Store(planted_app) as store:
        assert store.decision("q2").judgments == {"q2-d1": 1, "q2-d2": 0}


def test_reviewer_accepts_one_annotators_label(planted_app):
    at = session("rita", REVIEW)
    at.button(key="adopt_q5_bob").click().run()
    assert "q5: decided for bob&#x27;s label." in texts(at)  # escaped: data never markup
    assert at.dataframe[1].value["Query id"].tolist() == ["q2", "q3"]
    with Store(planted_app) as store:
        assert store.decision("q5").adopted == "bob" and store.labels("q5") == {"q5-d1": 1}


def test_reviewer_decides_grade_by_grade(planted_app):
    at = session("rita", REVIEW)
    at.selectbox(key="review_query").set_value("q3").run()
    at.checkbox(key="unanswerable_q3").check()
    at.text_input(key="note_q3").input("nothing in the corpus")
    decide(at, "q3")
    with Store(planted_app) as store:
        decision = store.decision("q3")
    assert (decision.answerable, decision.adopted, decision.note) == (
        False,
        None,
        "nothing in the corpus",
    )
    assert decision.judgments == {f"q3-d{rank}": 0 for rank in range(1, 5)}  # where they agreed


# --- the admin page -------------------------------------------------------------------------------


def test_admin_adds_a_user_and_deals_the_rest_with_overlap(planted_app):
    with Store(planted_app) as store:
        store.import_records(
            [
                {"query_id": f"n{i}", "query": f"new {i}", "candidates": [{"doc_id": f"n{i}-d"}]}
                for i in range(10)
            ]
        )
    at = session("alan", ADMIN)
    form = [field for field in at.text_input if field.label == "User name"][0]
    form.input("cy")
    [field for field in at.text_input if field.label == "Password"][0].input("cy password")
    next(b for b in at.button if b.label == "Add user").click().run()
    assert "Added annotator cy." in texts(at)
    at.slider[0].set_value(20)
    next(b for b in at.button if b.label == "Deal queries").click().run()
    assert "Dealt 10 queries (2 overlapping)" in texts(at)
    with Store(planted_app) as store:
        assert set(store.assignment_counts()) == {"ana", "bob", "cy"}


def test_admin_cannot_remove_or_demote_themselves(planted_app):
    at = session("alan", ADMIN)
    at.selectbox(key="remove_name").select("alan")
    next(c for c in at.checkbox if c.label == "Yes, remove this account").check()
    next(b for b in at.button if b.label == "Remove user").click().run()
    assert "you cannot remove your own account" in texts(at)
    with Store(planted_app) as store:
        assert store.annotator("alan")["role"] == "admin"
