"""The dashboard in a real browser: it follows the labelling done on another tab by itself,
and screenshots of the dashboard and the compare page are left in tests/artifacts/."""

from __future__ import annotations

from e2e_support import open_app, query_heading, wait_idle
from helpers.projects import labelled_demo
from playwright.sync_api import Browser, expect

from goldset.labeler.live import REFRESH_SECONDS

DESKTOP = {"width": 1280, "height": 900}
# Streamlit scrolls inside the page: a viewport as tall as the page shows it all.
DASHBOARD_HEIGHT, COMPARE_HEIGHT = 2600, 4400


def test_labelling_on_one_tab_changes_the_dashboard_on_another(
    browser: Browser, serve_app, tmp_path, artifacts_dir
):
    db = tmp_path / "demo.db"
    with labelled_demo(db) as store:
        runs = {name: store.candidate_run_frame() for name in ("bm25", "dense")}
    url = serve_app(db)
    context = browser.new_context(viewport=DESKTOP)
    dashboard = context.new_page()
    dashboard.goto(f"{url}/dashboard")
    shown = dashboard.get_by_text("4 answerable and 2 unanswerable queries done")
    expect(shown).to_be_visible(timeout=30_000)  # a cold server: first imports, first figures
    dashboard.set_viewport_size({**DESKTOP, "height": DASHBOARD_HEIGHT})
    wait_idle(dashboard)
    dashboard.screenshot(path=artifacts_dir / "dashboard.png")

    label = context.new_page()
    open_app(label, url)
    expect(query_heading(label)).to_have_text("list objects in bucket")  # q07, skipped by ana
    label.keyboard.type("1")  # relevant at rank 1: done
    expect(query_heading(label)).not_to_have_text("list objects in bucket")

    refreshed = dashboard.get_by_text("5 answerable and 2 unanswerable queries done")
    expect(refreshed).to_be_visible(timeout=(REFRESH_SECONDS + 5) * 1000)

    compare = context.new_page()
    compare.goto(f"{url}/compare")
    wait_idle(compare)
    files = []
    for name, frame in runs.items():
        path = tmp_path / f"{name}.trec"
        sign = 1 if name == "bm25" else -1  # dense ranks the candidate lists upside down
        lines = [
            f"{r.query_id} Q0 {r.doc_id} 0 {sign * r.score} {name}" for r in frame.itertuples()
        ]
        path.write_text("\n".join(lines) + "\n")
        files.append(path)
    compare.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(files)
    # Dense is far worse, but on 5 queries no CI can tell: the gate says so.
    expect(compare.get_by_text("Release gate: inconclusive.")).to_be_visible(timeout=20_000)
    for number, name in enumerate(runs, start=1):  # record both: a trend, and its flags
        wait_idle(compare)
        run_box = compare.get_by_role("combobox", name="Run to record")
        run_box.click()
        # Typing opens the list even when the click only focused the box (layout settling).
        run_box.press_sequentially(name)
        compare.get_by_role("option", name=name, exact=True).click()
        compare.get_by_label("Tags", exact=True).fill(f"model={name}")
        compare.get_by_role("button", name="Record").click()
        expect(compare.get_by_text(f"Recorded as #{number}.")).to_be_visible()
    expect(compare.get_by_text("change(s) between consecutive records")).to_be_visible()
    compare.set_viewport_size({**DESKTOP, "height": COMPARE_HEIGHT})
    compare.get_by_role("heading", name="Compare runs").scroll_into_view_if_needed()
    wait_idle(compare)
    compare.screenshot(path=artifacts_dir / "compare.png")
