"""Full-text search over documents (FTS5 through sqlite-utils), used to attach a missed answer."""

import pytest
import sqlite_utils

from goldset.labeler.store import DEMO_TASKS, Store, migrations


def test_search_finds_documents_by_their_words(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        hits = store.search("deprecated LegacyAuthClient", limit=3)
        assert hits[0]["doc_id"] == "cirrus/auth/v1.py#LegacyAuthClient"
        assert set(hits[0]) == {"doc_id", "title", "text"}
        assert len(store.search("upload", limit=3)) == 3


def test_search_takes_punctuation_and_operators_literally(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        assert store.search('ISO-8601 "duration') != []
        # Operators are words like any other: "NOT" finds NotFound, nothing raises.
        hits = store.search('NOT AND OR * ( ^ "-', limit=50)
        assert "cirrus/errors.py#NotFound" in [hit["doc_id"] for hit in hits]
        assert store.search('" - * ( ^') == []
        assert store.search("   ") == []


def test_search_with_a_querys_own_text_finds_the_answer_it_missed(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        hits = store.search("deprecated v1 auth client", limit=5)
        assert hits[0]["doc_id"] == "cirrus/auth/v1.py#LegacyAuthClient"


def test_search_matches_any_word_as_a_prefix(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        # "legacyauth" is no word of any document: only a prefix of LegacyAuthClient's.
        titles = [hit["title"] for hit in store.search("legacyauth nosuchword")]
        assert any("LegacyAuthClient" in title for title in titles)


def test_import_corpus_makes_documents_outside_the_candidates_searchable(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        '{"_id": "faq-9", "title": "Zeppelin mooring", "text": "how airships are moored"}\n'
    )
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        assert store.search("zeppelin") == []
        assert store.add_corpus(corpus) == 1
        assert [hit["doc_id"] for hit in store.search("zeppelin")] == ["faq-9"]
        assert store.add_corpus(corpus) == 0


def test_search_finds_pooled_corpus_documents_that_are_no_candidate(tmp_path, cranfield_dir):
    with Store(tmp_path / "project.db") as store:
        store.pool(
            cranfield_dir / "corpus.jsonl",
            cranfield_dir / "queries.jsonl",
            [cranfield_dir / "runs" / "bm25.trec"],
            depth=1,
        )
        assert store.status()["documents"] == 1400
        assert store.search("destalling slipstream")[0]["doc_id"] == "1"


def test_a_document_filled_in_later_is_found_once_by_its_new_text(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_records(
            [{"query_id": "g1", "query": "wing", "status": "done", "judgments": {"doc-a": 1}}]
        )
        assert store.document("doc-a")["text"] == ""
        store.import_records(
            [
                {
                    "query_id": "t1",
                    "query": "wing",
                    "candidates": [
                        {
                            "doc_id": "doc-a",
                            "title": "Slipstream",
                            "text": "propeller slipstream over a wing",
                        }
                    ],
                }
            ]
        )
        assert [hit["doc_id"] for hit in store.search("propeller")] == ["doc-a"]
        assert [hit["doc_id"] for hit in store.search("slipstream")] == ["doc-a"]


def test_one_part_of_a_camel_case_identifier_finds_it(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_tasks(DEMO_TASKS)
        assert [hit["doc_id"] for hit in store.search("legacy")] == [
            "cirrus/auth/v1.py#LegacyAuthClient"
        ]
        found = [hit["doc_id"] for hit in store.search("auth client", limit=10)]
        assert "cirrus/auth/v1.py#LegacyAuthClient" in found


def identifier_project(path) -> Store:
    store = Store(path)
    store.import_records(
        [
            {
                "query_id": "q1",
                "query": "pool sockets",
                "candidates": [
                    {"doc_id": "acme/net/http_pool.py#ConnPool", "title": "ConnPool", "text": ""},
                    {"doc_id": "acme.storage.BlobStore.put", "title": "put(key)", "text": ""},
                    {"doc_id": "acme/misc.py#noop", "title": "noop()", "text": "does nothing"},
                ],
            }
        ]
    )
    return store


@pytest.mark.parametrize(
    ("words", "doc_id"),
    [
        ("http", "acme/net/http_pool.py#ConnPool"),  # a snake_case part of a slashed path
        ("conn", "acme/net/http_pool.py#ConnPool"),  # a CamelCase part of a title
        ("storage", "acme.storage.BlobStore.put"),  # a dotted path's part
        ("blob", "acme.storage.BlobStore.put"),  # a CamelCase part inside a dotted path
    ],
)
def test_ids_and_titles_are_found_by_their_parts_as_prefixes(tmp_path, words, doc_id):
    with identifier_project(tmp_path / "project.db") as store:
        assert [hit["doc_id"] for hit in store.search(words)] == [doc_id]


def test_a_project_made_before_the_parts_column_finds_identifiers_after_the_upgrade(tmp_path):
    path = tmp_path / "project.db"
    db = sqlite_utils.Database(path)
    migrations.apply(db, stop_before="index_identifier_parts")
    db.execute(
        "INSERT INTO documents (doc_id, title, text) "
        "VALUES ('cirrus/auth/v1.py#LegacyAuthClient', 'LegacyAuthClient', 'deprecated')"
    )
    db.execute("INSERT INTO documents_fts (documents_fts) VALUES ('rebuild')")
    db.close()
    with Store(path) as store:
        assert [hit["doc_id"] for hit in store.search("legacy")] == [
            "cirrus/auth/v1.py#LegacyAuthClient"
        ]
        assert [hit["doc_id"] for hit in store.search("deprecated")] == [
            "cirrus/auth/v1.py#LegacyAuthClient"
        ]


def test_a_document_rewritten_by_a_later_import_is_found_by_its_new_title_parts(tmp_path):
    with Store(tmp_path / "project.db") as store:
        store.import_records(
            [{"query_id": "g1", "query": "wing", "status": "done", "judgments": {"doc-a": 1}}]
        )
        store.import_records(
            [
                {
                    "query_id": "t1",
                    "query": "wing",
                    "candidates": [{"doc_id": "doc-a", "title": "WingFlapModel", "text": "x"}],
                }
            ]
        )
        assert [hit["doc_id"] for hit in store.search("flap")] == ["doc-a"]
        assert store.search("flap model")[0]["doc_id"] == "doc-a"
