"""The contracts in docs/ keep up with the code: every metric the CLI accepts, every key the
golden-set export writes, every status and verdict of a query are documented; every relative
link in the README and docs/ leads to a file; no tracked file cites design notes that are not
in the repository."""

import json
import re
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from goldset.eval.metrics import METRICS
from goldset.labeler import golden, judges
from goldset.labeler.cli import cli
from goldset.labeler.store import DEMO_TASKS, Store

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
JUDGE = "machine:rule"
# The design notes kept beside the repository, by file name or by the title alone; spelled in
# parts so that this file does not cite what it forbids.
OUTSIDE_NOTES = re.compile(r"\bDES" + r"IGN\b|" + "NOTES" + r"\.md|\.\./" + "shared")
HISTORY = "CHANGELOG.md"  # past entries stay as they were written


def documented_names(page: str) -> set[str]:
    """Every name written as code (between backticks) on a page of docs/."""
    return set(re.findall(r"`([^`\s]+)`", (DOCS / page).read_text(encoding="utf-8")))


def judge_down(store: Store, query_id: str, grades: list[int], annotator: str = "ana") -> None:
    """Judge the next candidates of a query in turn, as the label page does."""
    for grade in grades:
        doc_id = store.next_candidate(query_id, annotator)["doc_id"]
        store.judge(query_id, doc_id, grade, annotator, seconds=2.0)


@pytest.fixture(scope="module")
def demo_with_every_key(tmp_path_factory) -> Path:
    """The demo project labelled in every way that adds keys to an export: two annotators who
    disagree, a reviewer's decision, a miss with its answer found by search, an unanswerable
    query, a skip, a note, a full-mode query, and a machine judge's labels."""
    path = tmp_path_factory.mktemp("contracts") / "demo.db"
    with Store(path) as store:
        store.import_tasks(DEMO_TASKS)
        judge_down(store, "q01", [1])
        judge_down(store, "q02", [0, 1], annotator="bob")
        judge_down(store, "q02", [1], annotator="ana")
        store.adjudicate("q02", "rita", {"cirrus/util/sleep.py#sleep_with_jitter": 1}, True)
        judge_down(store, "q03", [0, 0])
        store.mark("q03", "miss", "ana")
        store.attach("q03", "cirrus/auth/v1.py#LegacyAuthClient", 1, "ana")
        store.mark("q04", "unanswerable", "ana")
        store.mark("q05", "skip", "ana")
        store.set_note("q06", "ana", "unclear")
        context = {"judge": JUDGE, "model": "rule", "prompt_sha256": "0" * 64}
        pair = judges.Pair("q01", "cirrus/timeutil.py#format_duration", "", "", "")
        call = judges.Call("ok", 0.1, grade=0, reason="rule")
        store.record_judge_calls(judges.call_rows(pair, [call], context))
    return path


def exported(project: Path, tmp_path: Path, *options: str) -> list[dict]:
    """The records `goldset export --format jsonl` writes for the project."""
    out = tmp_path / f"golden{len(options)}.jsonl"
    args = ["export", "--db", str(project), "--format", "jsonl", "--out", str(out), *options]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def keys_written(records: list[dict]) -> set[str]:
    """Every key of the records, and of the objects the format defines inside them."""
    keys: set[str] = set()
    for record in records:
        keys |= set(record)
        for label in record.get("labels", {}).values():
            keys |= set(label)
        keys |= set(record.get("adjudication", {})) | set(record.get("pool", {}))
    return keys


def test_every_metric_the_cli_accepts_is_documented_with_its_formula():
    page = (DOCS / "metrics.md").read_text(encoding="utf-8")
    missing = [name for name in METRICS if f"`{name}@k`" not in page]
    assert not missing, f"docs/metrics.md does not document: {missing}"


def test_every_key_the_golden_export_writes_is_documented(demo_with_every_key, tmp_path):
    records = exported(demo_with_every_key, tmp_path) + exported(
        demo_with_every_key, tmp_path, "--labels", "both", "--judge", "rule"
    )
    written = keys_written(records)
    # The fixture reaches every optional part of a record, so the check covers them.
    assert {"labels", "adjudication", "pool", "metadata", "machine_judgments"} <= written
    missing = sorted(written - documented_names("formats.md"))
    assert not missing, f"docs/formats.md does not document the golden keys: {missing}"


def test_every_status_verdict_and_mode_of_a_query_is_documented():
    names = {*golden.EXPORTED_STATUS, *golden.EXPORTED_STATUS.values()}
    names |= {*golden.VERDICTS, *golden.MODES}
    missing = sorted(names - documented_names("labelling.md"))
    assert not missing, f"docs/labelling.md does not document: {missing}"


def relative_links(page: Path) -> list[str]:
    """The targets of a Markdown page's links and images that are paths in the repository."""
    targets = re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8"))
    return [t for t in targets if not re.match(r"[a-z]+:|#", t)]


@pytest.mark.parametrize(
    "page",
    [ROOT / "README.md", ROOT / "bench" / "README.md", *sorted(DOCS.glob("*.md"))],
    ids=lambda page: str(page.relative_to(ROOT)),
)
def test_every_relative_link_leads_to_a_file(page):
    broken = [
        target
        for target in relative_links(page)
        if not (page.parent / target.split("#")[0]).exists()
    ]
    assert not broken, f"{page.relative_to(ROOT)} links to what does not exist: {broken}"


def tracked_files() -> list[Path]:
    """The files git tracks in the repository."""
    listing = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [ROOT / name for name in listing.decode("utf-8").split("\0") if name]


def test_no_tracked_file_cites_design_notes_kept_outside_the_repository():
    citing = []
    for path in tracked_files():
        if path.name == HISTORY or not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:  # an image: no citation in it
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE_NOTES.search(line):
                citing.append(f"{path.relative_to(ROOT)}:{number}")
    assert not citing, f"cite notes that are not in the repository (say it in docs/): {citing}"
