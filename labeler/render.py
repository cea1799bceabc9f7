"""Safe HTML for query and document text, with the query's terms highlighted.

Data text is never markup. Every piece of it passes through :func:`html.escape` and the only
tags in the output are the few this module writes itself (``div``, ``span``, ``bdi``,
``mark``), so neither HTML nor Markdown from the data can render: the result goes to
``st.html``, which does not interpret Markdown. ``<bdi>`` isolates each data string, so a
right-to-left mark in a title cannot reorder the labels around it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path

STYLESHEET = Path(__file__).parent / "render.css"

# Short function words highlight everywhere and so help nobody.
# fmt: off
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "in", "into", "is",
    "it", "of", "on", "or", "the", "to", "what", "when", "where", "which", "who", "why",
    "with", "without",
})
# fmt: on

# Only so much text is useful on a card; a 10 MB document would stall the browser.
CARD_TEXT_LIMIT = 4_000
PREVIEW_LIMIT = 160


def query_terms(query: str) -> list[str]:
    """Return the distinct lower-cased words of ``query`` worth highlighting, in query order.

    Words are runs of letters and digits (``ISO-8601`` gives ``iso`` and ``8601``); stopwords
    and single characters are left out.

    >>> query_terms("parse ISO-8601 duration")
    ['parse', 'iso', '8601', 'duration']
    """
    words = re.findall(r"[^\W_]+", query.lower())
    return list(dict.fromkeys(w for w in words if len(w) > 1 and w not in STOPWORDS))


@lru_cache(maxsize=256)
def _term_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    """A pattern matching any term at the start of a word (``_`` counts as a separator) or
    of a CamelCase part (``auth`` in ``LegacyAuthClient``, as search finds it)."""
    if not terms:
        return None
    alternatives = "|".join(re.escape(term) for term in sorted(terms, key=len, reverse=True))
    camel = r"(?-i:(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z]))"
    return re.compile(rf"(?:(?<![^\W_])|{camel})(?:{alternatives})", re.IGNORECASE)


def highlight(text: str, terms: Sequence[str]) -> str:
    """Return ``text`` as escaped HTML with each word starting with a term wrapped in ``<mark>``.

    Matching runs on the raw text and each piece is escaped on its own, so an entity is never
    split and nothing from ``text`` reaches the output unescaped.

    >>> highlight("Retry <b>later</b>", ["retry"])
    '<mark>Retry</mark> &lt;b&gt;later&lt;/b&gt;'
    """
    text = text.replace("\x00", "\ufffd")
    pattern = _term_pattern(tuple(terms))
    if pattern is None:
        return html.escape(text)
    pieces: list[str] = []
    position = 0
    for match in pattern.finditer(text):
        pieces.append(html.escape(text[position : match.start()]))
        pieces.append(f"<mark>{html.escape(match.group())}</mark>")
        position = match.end()
    pieces.append(html.escape(text[position:]))
    return "".join(pieces)


def clip(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def data_text(text: str, terms: Sequence[str] = (), *, limit: int = CARD_TEXT_LIMIT) -> str:
    """Return data text as an isolated, escaped, highlighted ``<bdi>`` fragment."""
    return f"<bdi>{highlight(clip(text, limit), terms)}</bdi>"


def query_heading(query: str, query_id: str, slice_name: str | None) -> str:
    """HTML for the query being judged: its text, id and slice, all escaped."""
    return (
        f'<div class="gs-query"><div class="gs-query-text">{data_text(query)}</div>'
        f'<div class="gs-meta">{query_meta(query_id, slice_name)}</div></div>'
    )


def query_meta(query_id: str, slice_name: str | None, *, escape: bool = True) -> str:
    """``query q17 · slice tail``: escaped HTML, or (``escape=False``) plain text for the key
    listener, which sets it as text when it shows the next query ahead of the server."""
    if not escape:
        return f"query {query_id}" + (f" · slice {slice_name}" if slice_name else "")
    slice_html = f" · slice <bdi>{html.escape(slice_name)}</bdi>" if slice_name else ""
    return f"query <bdi>{html.escape(query_id)}</bdi>{slice_html}"


def note(text: str) -> str:
    """A small line of text (a status message, who is labelling), escaped."""
    return f'<div class="gs-meta">{data_text(text)}</div>'


def banner(text: str, query_id: str, *, kind: str) -> str:
    """The verdict line under the query's heading, escaped: ``kind`` ``due`` (a verdict is
    asked for) or ``done``. It names its query, so that the key listener hides it while it
    shows another query ahead of the server."""
    if kind not in ("due", "done"):
        raise ValueError(f"banner kind must be due or done, not {kind!r}")
    query = html.escape(query_id, quote=True)
    return (
        f'<div class="gs-verdict gs-verdict-{kind}" role="status" data-query="{query}">'
        f"{data_text(text)}</div>"
    )


def alert(text: str) -> str:
    """A line that must not be missed (a press the database refused to store), escaped."""
    return f'<div class="gs-alert" role="alert">{data_text(text)}</div>'


def slice_progress(per_slice: Mapping[str, Mapping[str, int]]) -> str:
    """Done/total per slice on one line, e.g. ``head 3/26 · tail 0/24`` (slice names escaped)."""
    parts = [
        f"{data_text(name or 'no slice')} {counts['done']}/{counts['total']}"
        for name, counts in per_slice.items()
    ]
    return f'<div class="gs-meta">{" · ".join(parts)}</div>'


def candidate_card(
    *,
    rank: int,
    title: str,
    text: str,
    terms: Sequence[str],
    state: str,
    label: str | None = None,
    details: str | None = None,
    marker: str = "▶ judge this",
    doc_id: str | None = None,
    grade: int | None = None,
    implied: bool = False,
) -> str:
    """HTML for one candidate.

    ``state`` is ``"current"`` (the one the next key judges: framed, its text open),
    ``"judged"`` (its ``label`` shown) or ``"waiting"`` (one line). ``details`` is plain text
    such as score and provenance, shown under the title when given. ``marker`` is the badge of
    the current candidate (the review page frames a disputed one with its own words). A card
    given its ``doc_id`` (and ``grade``, None = unjudged) carries them as data attributes, so
    that the key listener can judge and move the cursor on the page at once, before the
    server answers (see ``keys.js``); its whole text is there, and the stylesheet folds it to
    one line. ``implied``: its grade was given by a verdict (U/M), not pressed: the label is
    muted.
    """
    if state not in ("current", "judged", "waiting"):
        raise ValueError(f"candidate state must be current, judged or waiting, not {state!r}")
    label_class = "gs-label gs-implied" if implied else "gs-label"
    badge = f'<span class="{label_class}">{html.escape(label)}</span>' if label else ""
    marker = f'<span class="gs-now">{html.escape(marker)}</span>' if state == "current" else ""
    head = (
        f'<div class="gs-head"><span class="gs-rank">#{rank}</span>'
        f'<span class="gs-title">{data_text(title, terms, limit=PREVIEW_LIMIT)}</span>'
        f"{badge}{marker}</div>"
    )
    meta = f'<div class="gs-meta">{data_text(details)}</div>' if details else ""
    limit = CARD_TEXT_LIMIT if state == "current" or doc_id is not None else PREVIEW_LIMIT
    body = f'<div class="gs-text gs-text-{state}">{data_text(text, terms, limit=limit)}</div>'
    data = ""
    if doc_id is not None:
        shown = "" if grade is None else str(int(grade))
        data = f' data-doc="{html.escape(doc_id, quote=True)}" data-grade="{shown}"'
    return f'<div class="gs-card gs-{state}"{data}>{head}{meta}{body}</div>'


def card_list(query_id: str, cards: Sequence[str], *, hidden: bool = False) -> str:
    """The candidate cards of one query, in a block naming the query (escaped) for the key
    listener: a press is aimed at the query and card on screen. ``hidden``: the next
    query's, fetched ahead (see :func:`query_heading`)."""
    query = html.escape(query_id, quote=True)
    classes = "gs-cards gs-hidden" if hidden else "gs-cards"
    return f'<div class="{classes}" data-query="{query}">{"".join(cards)}</div>'


def history_strip(entries: Sequence[tuple[str, str]]) -> str:
    """The queries viewed before the open one: ``H`` + their number reopens each.
    ``entries`` are (query_id, verdict or status) pairs, newest first; all escaped."""
    items = "".join(
        f'<span class="gs-hist"><kbd>{number}</kbd> <bdi>{html.escape(query_id)}</bdi> '
        f'<span class="gs-meta">{html.escape(verdict)}</span></span>'
        for number, (query_id, verdict) in enumerate(entries, start=1)
    )
    return (
        f'<div class="gs-history"><span class="gs-meta">History (H + number):</span>{items}</div>'
    )


def stylesheet() -> str:
    """The ``<style>`` block for the classes used above (``st.html`` puts it out of the flow)."""
    return f"<style>{STYLESHEET.read_text(encoding='utf-8')}</style>"
