"""The key listener in a real browser: fast typing on a slow panel loses and repeats nothing."""

from pathlib import Path

import pytest
from e2e_support import open_app, streamlit_app, wait_idle
from playwright.sync_api import Page, expect

KEY_LOG_APP = Path(__file__).parent / "apps" / "key_log.py"


@pytest.fixture(scope="module")
def key_log_url():
    with streamlit_app(KEY_LOG_APP) as url:
        yield url


@pytest.mark.parametrize("delay_ms", [0, 30, 120])
def test_keys_typed_during_slow_reruns_are_all_applied_in_order(
    page: Page, key_log_url: str, delay_ms: int
):
    open_app(page, key_log_url)
    typed = "0001" * 5 + "2310"
    page.keyboard.type(typed, delay=delay_ms)
    expect(page.get_by_test_id("stCode")).to_have_text(" ".join(typed), timeout=15_000)
    wait_idle(page)
    expect(page.get_by_test_id("stCode")).to_have_text(" ".join(typed))


def test_keys_outside_the_accepted_set_are_ignored(page: Page, key_log_url: str):
    open_app(page, key_log_url)
    page.keyboard.type("0x9a1", delay=30)
    expect(page.get_by_test_id("stCode")).to_have_text("0 1", timeout=15_000)
