"""The one error type for bad input, shared by every reader (eval and labeler alike)."""

from __future__ import annotations


class InputError(ValueError):
    """Bad input; the message names the file, the line (1-based) and the field."""

    def __init__(self, source: str, line: int | None, field: str | None, problem: str):
        self.source, self.line, self.field, self.problem = source, line, field, problem
        where = source if line is None else f"{source}:{line}"
        what = f" field '{field}':" if field else ""
        super().__init__(f"{where}:{what} {problem}")
