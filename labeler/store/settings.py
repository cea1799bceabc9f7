"""The project's labelling protocol: mode, grade scale, relevance threshold."""

from __future__ import annotations

import json

from goldset.labeler.store.connection import Connection

# depth 0 = every candidate of a query is judged (no cut-off).
DEFAULT_SETTINGS = {"mode": "first_hit", "max_grade": 3, "rel_threshold": 1, "depth": 0}


class Settings(Connection):
    """The project's labelling protocol: mode, grade scale, relevance threshold."""

    def settings(self) -> dict:
        """The project's labelling protocol: ``mode`` (first_hit|full), ``depth`` (candidates
        judged per query, 0 = all), ``max_grade`` (1 = binary, default 3) and
        ``rel_threshold`` (grade counted as relevant, default 1). Read once per transaction."""
        return dict(self._once("settings", self._read_settings))

    def _read_settings(self) -> dict:
        with self._lock:
            stored = dict(self.conn.execute("SELECT key, value FROM settings").fetchall())
        return {
            key: type(default)(stored.get(key, default))
            for key, default in DEFAULT_SETTINGS.items()
        }

    def protocol_log(self) -> list[dict]:
        """Every change of the protocol, oldest first: changed_by, changed_at, changes (the
        settings changed, with their new values) and settings (the whole protocol after)."""
        rows = self._rows(
            "SELECT changed_by, changed_at, changes, settings FROM protocol_log ORDER BY id"
        )
        for row in rows:
            row.update(changes=json.loads(row["changes"]), settings=json.loads(row["settings"]))
        return rows
