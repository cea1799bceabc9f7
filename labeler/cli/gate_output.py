"""The release gate where CI looks: JUnit XML (test reports) and Markdown (GitHub's job summary,
a PR comment), from the dict ``goldset compare`` builds (:func:`goldset.eval.compare.compare_runs`).

Every run name, slice name and query id is data: the XML is built by ElementTree, which
escapes it, and Markdown escapes every character that could make it a link, markup or HTML.
"""

from __future__ import annotations

import re

from goldset.labeler.cli.text import fixed

VERDICT_TITLES = {"pass": "✅ pass", "fail": "❌ fail", "inconclusive": "⚠️ inconclusive"}
STATUS_TITLES = {"kept": "✅ kept", "violated": "❌ violated", "undecided": "⚠️ undecided"}
CHANGED_SHOWN = 10  # queries listed per kind of change
CHANGED_TITLES = {
    "new_misses": "New misses (a relevant doc in the top 10 before, none now)",
    "new_hits": "New hits (none in the top 10 before, one now)",
    "worse": "Worse (first relevant doc lower)",
    "better": "Better (first relevant doc higher)",
}
# XML 1.0 cannot hold these characters at all, escaped or not.
XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# Markdown's markup, GitHub's too (:emoji:, @mention, #issue, ~strike~), and what autolinks.
MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:@$])")


def p_text(p_value: float | None, floor: float | None) -> str:
    """A p-value as :func:`goldset.eval.stats.p_value_text` writes it (``< floor`` at the floor of
    its resamples); none is an empty cell."""
    from goldset.eval.stats import p_value_text  # here: `goldset --help` loads nothing of eval

    return "" if p_value is None else p_value_text(p_value, floor)


def junit(result: dict, undecided_fails: bool = False) -> str:
    """One JUnit test suite, a test case per gate rule (and slice): a violated rule is a
    failure with its reason as the message, an undecided one skipped (a failure when
    ``undecided_fails``), a kept one passes."""
    import xml.etree.ElementTree as ElementTree  # here: text and JSON output never load it

    gate = result["gate"]
    rules = gate["rules"]
    failing = {"violated", "undecided"} if undecided_fails else {"violated"}
    failures = sum(rule["status"] in failing for rule in rules)
    skipped = sum(rule["status"] == "undecided" for rule in rules) if not undecided_fails else 0
    counts = {"tests": str(len(rules)), "failures": str(failures), "errors": "0", "time": "0"}
    name = _xml_text(f"goldset gate: {result['candidate']} vs {result['baseline']}")
    suites = ElementTree.Element("testsuites", name=name, **counts)
    suite = ElementTree.SubElement(suites, "testsuite", name=name, skipped=str(skipped), **counts)
    properties = ElementTree.SubElement(suite, "properties")
    for name, value in (
        ("verdict", gate["verdict"]),
        ("schema", gate["schema"]),
        ("golden_version", result["golden_version"]),
    ):
        ElementTree.SubElement(properties, "property", name=name, value=_xml_text(str(value)))
    for rule in rules:
        case = ElementTree.SubElement(
            suite, "testcase", classname="goldset.gate", name=_xml_text(rule["name"]), time="0"
        )
        message = _xml_text(rule["reason"])
        if rule["status"] in failing:
            failure = ElementTree.SubElement(case, "failure", message=message, type=rule["status"])
            failure.text = message
        elif rule["status"] == "undecided":
            ElementTree.SubElement(case, "skipped", message=message)
    ElementTree.indent(suites)
    body = ElementTree.tostring(suites, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def markdown(result: dict) -> str:
    """The verdict, a table of the rules, the paired figures and the changed queries."""
    gate = result["gate"]
    lines = [
        f"## Release gate: {VERDICT_TITLES[gate['verdict']]}",
        "",
        f"{_md(result['candidate'])} vs {_md(result['baseline'])} on golden set "
        f"{_md(result['golden_version'])}",
        "",
        "| rule | change | CI | status | why |",
        "|---|---:|---:|---|---|",
        *(_rule_row(rule) for rule in gate["rules"]),
    ]
    lines += [f"> warning: {_md(warning)}" for warning in gate["warnings"]]
    lines += [
        "",
        "| metric | baseline | candidate | delta | 95% CI | p |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for spec, entry in result["metrics"].items():
        lines.append(_metric_row(spec, entry))
    lines += changed_lines(result["changed_queries"], markdown=True)
    return "\n".join(lines) + "\n"


def _rule_row(rule: dict) -> str:
    unit = " pts" if rule["units"] == "points" else ""
    number = "{:+.2f}" if rule["units"] == "points" else "{:+.4f}"
    low, high = (number.format(bound) for bound in rule["ci"])
    level = rule["ci_level"]
    interval = f"[{low}, {high}] ({level * 100:.4g}%)" if level else "(means)"
    allowed = number.format(rule["allowance"]).lstrip("+")
    bound = "may rise by" if rule["worse_if"] == "rise" else "may fall by"
    why = {
        "kept": "within the allowance",
        "violated": "beyond the allowance",
        "undecided": (
            f"about {rule['more_queries']} more queries would decide it"
            if rule["more_queries"]
            else "no number of queries decides it at the allowance"
        ),
    }[rule["status"]]
    return (
        f"| {_md(rule['name'])} ({bound} at most {allowed}{unit}) | "
        f"{number.format(rule['delta'])}{unit} | {interval} | {STATUS_TITLES[rule['status']]} | "
        f"{why} |"
    )


def _metric_row(spec: str, entry: dict) -> str:
    if entry.get("reason"):
        return f"| {_md(spec)} | {_md(entry['reason'])} | | | | |"
    ci = entry["ci95"]
    interval = f"[{ci[0]:+.4f}, {ci[1]:+.4f}]" if ci else ""
    p_value = p_text(entry["p_value"], entry.get("p_value_floor"))
    return (
        f"| {_md(spec)} | {fixed(entry['baseline'])} | {fixed(entry['candidate'])} | "
        f"{entry['delta']:+.4f} | {interval} | {p_value} |"  # ours, digits and "<": no markup
    )


def changed_lines(changed: dict[str, list[dict]], markdown: bool = False) -> list[str]:
    """A short section per kind of changed query, largest change first, capped with a count:
    the CLI's text, or Markdown (data escaped, titles in bold)."""
    quote = _md if markdown else str
    bullet = "- " if markdown else "  "
    lines = []
    for name, title in CHANGED_TITLES.items():
        items = changed[name]
        if not items:
            continue
        if markdown:
            lines += ["", f"**{title}: {len(items)}**", ""]
        else:
            lines += ["", f"{title.lower()}: {len(items)}"]
        for item in items[:CHANGED_SHOWN]:
            where = f" ({quote(item['slice'])})" if item["slice"] else ""
            lines.append(
                f"{bullet}{quote(item['query_id'])}{where}: rank {rank_text(item['baseline_rank'])}"
                f" → {rank_text(item['candidate_rank'])}"
            )
        if len(items) > CHANGED_SHOWN:
            more = "the JSON lists" if markdown else "--json lists"
            lines.append(f"{bullet}… and {len(items) - CHANGED_SHOWN} more ({more} them all)")
    return lines


def rank_text(rank: int | None) -> str:
    """A rank as printed: ``none`` where no relevant doc was found."""
    return "none" if rank is None else str(rank)


def _md(text: str) -> str:
    """Data as literal Markdown text: HTML's characters as entities, every other character
    that Markdown reads as markup backslash-escaped, one line."""
    text = " ".join(str(text).split())
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return MARKDOWN_SPECIAL.sub(r"\\\1", text)


def _xml_text(text: str) -> str:
    return XML_FORBIDDEN.sub("\N{REPLACEMENT CHARACTER}", text)
