"""Data text renders as text: escaped, isolated, highlighted only with goldset's own tags."""

from html.parser import HTMLParser

import pytest

from goldset.labeler.render import (
    candidate_card,
    clip,
    highlight,
    note,
    query_heading,
    query_terms,
    slice_progress,
)

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "![x](http://example.invalid/t.png)",
    "[a](javascript:alert(1))",
    '"><svg onload=alert(1)>',
    "&lt;script&gt; already escaped",
    "<style>body{display:none}</style>",
    "retry \x00 NUL and \u202e right-to-left override",
]
OWN_TAGS = {"div", "span", "bdi", "mark"}


class TagAndTextCollector(HTMLParser):
    """Collects every tag (with its attributes) and the text a browser would show."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list]] = []
        self.text = ""

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text += data


def parse(fragment: str) -> TagAndTextCollector:
    collector = TagAndTextCollector()
    collector.feed(fragment)
    collector.close()
    return collector


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_text_comes_back_as_the_same_text_inside_own_tags_only(hostile):
    parsed = parse(highlight(hostile, query_terms("alert script retry example")))
    assert parsed.text == hostile.replace("\x00", "\ufffd")
    assert {tag for tag, _ in parsed.tags} <= {"mark"}
    assert all(attrs == [] for _, attrs in parsed.tags)


@pytest.mark.parametrize("hostile", HOSTILE)
def test_hostile_title_and_text_in_a_card_add_no_tag_or_attribute(hostile):
    card = candidate_card(
        rank=1, title=hostile, text=hostile, terms=["alert"], state="current", details=hostile
    )
    parsed = parse(card)
    assert {tag for tag, _ in parsed.tags} <= OWN_TAGS
    assert {name for _, attrs in parsed.tags for name, _ in attrs} <= {"class"}
    assert parsed.text.count(hostile.replace("\x00", "\ufffd")) == 3


def test_hostile_query_heading_shows_query_id_and_slice_as_text():
    heading = query_heading("<b>q</b>", 'q1"><script>', "<i>tail</i>")
    parsed = parse(heading)
    assert {tag for tag, _ in parsed.tags} <= OWN_TAGS
    assert "<b>q</b>" in parsed.text and 'q1"><script>' in parsed.text
    assert "<i>tail</i>" in parsed.text


def test_query_terms_split_on_punctuation_and_drop_stopwords():
    assert query_terms("retry with jitter helper") == ["retry", "jitter", "helper"]
    assert query_terms("Parse ISO-8601 duration, parse again") == [
        "parse", "iso", "8601", "duration", "again"
    ]  # fmt: skip


def test_terms_highlight_at_word_starts_case_insensitively_including_identifiers():
    assert highlight("Retry retry_jitter preretry", ["retry", "jitter"]) == (
        "<mark>Retry</mark> <mark>retry</mark>_<mark>jitter</mark> preretry"
    )


def test_terms_highlight_at_the_camel_case_parts_search_finds():
    assert highlight("LegacyAuthClient HTTPServer authorize", ["auth", "server"]) == (
        "Legacy<mark>Auth</mark>Client HTTP<mark>Server</mark> <mark>auth</mark>orize"
    )


def test_longer_term_wins_over_its_prefix():
    assert highlight("uploads", ["up", "upload"]) == "<mark>upload</mark>s"


def test_term_with_regex_characters_matches_literally():
    assert highlight("a c++ b cxx", ["c++"]) == "a <mark>c++</mark> b cxx"


def test_long_text_is_clipped_with_a_count_of_what_was_left_out():
    assert clip("x" * 12, 10) == "xxxxxxxxxx… [2 more characters]"
    assert clip("short", 10) == "short"


def test_card_state_must_be_known():
    with pytest.raises(ValueError, match="current, judged or waiting"):
        candidate_card(rank=1, title="t", text="x", terms=[], state="done")


def test_current_card_is_marked_and_judged_card_shows_its_label():
    current = candidate_card(rank=2, title="t", text="x", terms=[], state="current")
    judged = candidate_card(rank=1, title="t", text="x", terms=[], state="judged", label="0 · no")
    assert "gs-current" in current and "judge this" in current
    assert "0 · no" in parse(judged).text and "judge this" not in judged


def test_slice_names_in_the_progress_line_are_text():
    line = slice_progress({"<img src=x>": {"done": 1, "total": 2}, "": {"done": 0, "total": 3}})
    parsed = parse(line)
    assert parsed.text == "<img src=x> 1/2 · no slice 0/3"
    assert {tag for tag, _ in parsed.tags} <= OWN_TAGS


def test_a_note_is_escaped():
    assert parse(note("Not done: doc '<b>x</b>'")).text == "Not done: doc '<b>x</b>'"
