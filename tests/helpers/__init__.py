"""Helpers for the metric tests: trec_eval's formats and seeded random collections."""
