"""Full-text search over documents (FTS5 through sqlite-utils), used to attach a missed answer."""

from labeler.store import DEMO_TASKS, Store


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
