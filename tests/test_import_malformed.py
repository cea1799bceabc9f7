"""The catalogue of malformed tasks files (tests/malformed/): each one is refused with a message
naming the file, the line and the field, and leaves the database unchanged: its bytes (its
WAL's included) and its rows.

tests/malformed/expected.json gives, for each file, the line and the field the error must name
(field null where the line is not even JSON, or not UTF-8, so no field can be named).
"""

import json
from pathlib import Path

import pytest
from helpers.projects import project_state

from goldset.eval.readers import InputError
from goldset.labeler.store import Store

MALFORMED = Path(__file__).parent / "malformed"
EXPECTED = json.loads((MALFORMED / "expected.json").read_text())


def test_catalogue_has_at_least_twenty_files_each_with_an_expectation():
    files = sorted(p.name for p in MALFORMED.iterdir() if p.name != "expected.json")
    assert len(files) >= 20
    assert files == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_malformed_file_is_refused_naming_file_line_and_field(module_demo_db, name):
    before = project_state(module_demo_db)
    expected = EXPECTED[name]
    with Store(module_demo_db) as store, pytest.raises(InputError) as error:
        store.import_tasks(MALFORMED / name)
    message = str(error.value)
    assert f"{name}:{expected['line']}:" in message
    assert error.value.line == expected["line"]
    assert error.value.field == expected["field"]
    if expected["field"]:
        assert f"field '{expected['field']}'" in message
    assert project_state(module_demo_db) == before
