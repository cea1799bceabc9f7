"""The project's labelling protocol: mode, grade scale, relevance threshold."""

from __future__ import annotations

from labeler.store.connection import Connection

DEFAULT_SETTINGS = {"mode": "first_hit", "max_grade": 3, "rel_threshold": 1}


class Settings(Connection):
    """The project's labelling protocol: mode, grade scale, relevance threshold."""

    def settings(self) -> dict:
        """Project settings: ``mode`` (first_hit|full), ``max_grade`` (1 = binary, default 3)
        and ``rel_threshold`` (grade counted as relevant, default 1)."""
        with self._lock:
            stored = dict(self.conn.execute("SELECT key, value FROM settings").fetchall())
        return {
            key: type(default)(stored.get(key, default))
            for key, default in DEFAULT_SETTINGS.items()
        }
