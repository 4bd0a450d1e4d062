"""The dashboard in a real browser: Playwright driving Debian's Chromium against `kubegpu serve --demo`."""

from __future__ import annotations

import os
import shutil

import pytest

CHROMIUM = os.environ.get("KUBEGPU_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
PAGES = ["/", "/pending", "/defrag", "/audit", "/simulate", "/why/ml-training/ppo-actor-0-bp6l5"]

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                reason="chromium not installed (apt-get install chromium); Playwright cannot "
                                       "download its own browser here")


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    pg.problems = []
    pg.on("console", lambda msg: pg.problems.append(msg.text) if msg.type in ("error", "warning") else None)
    pg.on("pageerror", lambda err: pg.problems.append(str(err)))
    yield pg
    context.close()


def not_blank(png: bytes) -> bool:
    """More than one colour in the screenshot (a blank or failed page is one flat colour)."""
    import io

    from PIL import Image

    img = Image.open(io.BytesIO(png)).convert("RGB").resize((200, 200))
    return len(img.getcolors(maxcolors=200 * 200) or []) > 20


@pytest.mark.parametrize("path", PAGES)
def test_every_page_renders_without_console_errors(served_demo, page, path, tmp_path):
    resp = page.goto(served_demo + path)
    assert resp.status == 200
    page.wait_for_load_state("load")
    png = page.screenshot(full_page=True)
    (tmp_path / ("page" + path.replace("/", "_") + ".png")).write_bytes(png)
    assert page.problems == [], page.problems          # CSP violations are console errors too
    assert not_blank(png)


def test_gpu_map_has_one_cell_per_device_matching_api_frag(served_demo, page):
    import json
    import urllib.request

    frag = json.loads(urllib.request.urlopen(served_demo + "/api/frag", timeout=10).read())
    page.goto(served_demo + "/")
    cells = page.locator(".map .dev")
    assert cells.count() == frag["gpus"]["total"]
    used = page.eval_on_selector_all(".map .dev", "els => els.reduce((s, e) => s + Number(e.dataset.used), 0)")
    assert used / 1000 == pytest.approx(frag["gpus"]["allocated"])
    free_cells = page.locator('.map .dev[data-used="0"]').count()
    assert free_cells == frag["fits_by_size"]["1"]     # whole free devices = 1-GPU pods that fit (the demo)
    page.hover(".map a.dev >> nth=0")
    assert page.locator("#hover").is_visible()
    assert "/" in page.locator("#hover").inner_text()                   # shows ns/name of the pod


def test_click_on_a_pending_pod_opens_its_explanation(served_demo, page):
    page.goto(served_demo + "/pending")
    first = page.locator("a.podlink").first
    name = first.inner_text()
    first.click()
    page.wait_for_url("**/why/**")
    assert page.locator("h1").inner_text() == f"Why {name}"
    assert page.locator("#event").inner_text().startswith("0/40 nodes are available")
    assert page.problems == []


def test_a_pod_in_the_map_links_to_its_why_page(served_demo, page):
    page.goto(served_demo + "/")
    cell = page.locator(".map a.dev").first
    cell.click()
    page.wait_for_url("**/why/**")
    assert page.locator("h1").inner_text().startswith("Why ")


def test_filter_by_pool_keeps_only_that_pool(served_demo, page):
    page.goto(served_demo + "/")
    page.select_option("select[name=pool]", "inference")
    page.wait_for_url("**pool=inference**")
    assert page.locator(".map .dev").count() == 32


def test_simulate_page_lists_the_results_folder(served_demo, page):
    page.goto(served_demo + "/simulate")
    rows = page.locator("#runs tr")
    assert rows.count() == 2                                  # header + the one run
    assert "seed-flapping" in rows.nth(1).inner_text()
