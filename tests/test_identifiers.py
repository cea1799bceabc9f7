"""Identifiers split into their words: what the search index holds beside title and text."""

import doctest

import pytest

from goldset.labeler import identifiers
from goldset.labeler.identifiers import identifier_parts, split_camel_case


@pytest.mark.parametrize(
    ("word", "parts"),
    [
        ("LegacyAuthClient", ["Legacy", "Auth", "Client"]),
        ("HTTPServer", ["HTTP", "Server"]),
        ("getHTTPResponseCode", ["get", "HTTP", "Response", "Code"]),
        ("sha256Hash", ["sha256", "Hash"]),
        ("ÜberGrößeKlasse", ["Über", "Größe", "Klasse"]),
        ("lowercase", ["lowercase"]),
        ("UPPER", ["UPPER"]),
        ("Capitalised", ["Capitalised"]),
        ("v2", ["v2"]),
    ],
)
def test_a_word_splits_where_its_case_changes(word, parts):
    assert split_camel_case(word) == parts


def test_an_id_gives_every_part_and_a_title_only_its_compound_words_parts():
    parts = identifier_parts("sdk.http_pool/ConnPool.open", "ConnPool.open(timeout) keeps it")
    assert parts == "sdk http pool conn open"


def test_the_docstring_examples_hold():
    results = doctest.testmod(identifiers)
    assert results.attempted >= 4 and results.failed == 0
