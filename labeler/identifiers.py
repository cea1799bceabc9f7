"""Identifiers split into the words they are made of, so that search finds them by a part.

SQLite's full-text tokenizer splits text at punctuation only: ``snake_case`` and dotted or
slashed paths fall apart into their words, but ``LegacyAuthClient`` stays one token, and
neither ``legacy`` nor ``auth client`` finds it. :func:`identifier_parts` gives the words a
document's id and title are made of, for the index column searched beside title and text.
"""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+")  # what the tokenizer keeps: runs of letters and digits


def split_camel_case(word: str) -> list[str]:
    """The parts of one word at its changes of case: a capital after a small letter or a
    digit starts a part, and so does the last capital of a run followed by a small letter.

    >>> split_camel_case("HTTPServerV2Auth")
    ['HTTP', 'Server', 'V2', 'Auth']
    >>> split_camel_case("parseISO8601Duration")
    ['parse', 'ISO8601', 'Duration']
    """
    if word.islower() or word.isupper() or word[1:].islower():
        return [word]  # the common case, no change of case inside: decided at C speed
    parts, start = [], 0
    for i in range(1, len(word)):
        follows = word[i + 1 : i + 2]
        if word[i].isupper() and (not word[i - 1].isupper() or follows.islower()):
            parts.append(word[start:i])
            start = i
    parts.append(word[start:])
    return parts


def identifier_parts(doc_id: str, title: str) -> str:
    """The words to index beside a document's title and text, lower-cased, each once: every
    part of its id (a path, a dotted name, a CamelCase class), and the parts of the title's
    CamelCase words (its other words are indexed with the title already).

    >>> identifier_parts("cirrus/auth/v1.py#LegacyAuthClient", "class LegacyAuthClient")
    'cirrus auth v1 py legacy client'
    >>> identifier_parts("42", "Slipstream over a wing")
    '42'
    """
    parts = [part for word in WORD.findall(doc_id) for part in split_camel_case(word)]
    for word in WORD.findall(title):
        split = split_camel_case(word)
        if len(split) > 1:
            parts.extend(split)
    return " ".join(dict.fromkeys(part.lower() for part in parts))
