"""Registered users (annotators, reviewers, admins): the store keeps names, roles and
password hashes; hashing and login are the app's."""

import pytest

from goldset.labeler.store import DEMO_TASKS


def test_users_are_added_listed_changed_and_removed(store):
    store.add_annotator("ana", password_hash="scrypt$1")
    store.add_annotator("rita", role="reviewer")
    assert [user["name"] for user in store.annotators()] == ["ana", "rita"]
    assert store.annotator("ana")["role"] == "annotator"
    store.update_annotator("ana", role="admin", password_hash="scrypt$2")
    assert (store.annotator("ana")["role"], store.annotator("ana")["password_hash"]) == (
        "admin",
        "scrypt$2",
    )
    store.remove_annotator("rita")
    assert store.annotator("rita") is None


def test_bad_user_changes_are_refused(store):
    store.add_annotator("ana")
    with pytest.raises(ValueError, match="already exists"):
        store.add_annotator("ana")
    with pytest.raises(ValueError, match="role"):
        store.add_annotator("bob", role="owner")
    with pytest.raises(ValueError, match="unknown annotator"):
        store.update_annotator("zed", role="admin")
    with pytest.raises(ValueError, match="unknown annotator"):
        store.remove_annotator("zed")


def test_removing_a_user_keeps_their_judgements(store):
    store.import_tasks(DEMO_TASKS)
    store.add_annotator("ana")
    store.judge("q01", "cirrus/timeutil.py#parse_duration", 1, "ana")
    store.remove_annotator("ana")
    assert store.golden_records()[0]["annotators"] == ["ana"]
