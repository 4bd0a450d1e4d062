"""`doctor -o html`: findings grouped by pitfall, code rendered as code, no duplicated labels, the
GPU map inline; the page and the map are not blank (headless Chromium when installed)."""

import base64
import io
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

from .support import run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "report.html"
    r = run("doctor", "--demo", "-o", "html", "--file", str(out))
    assert r.returncode == 0, r.stderr
    return out


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.stack, self.h3, self.kpis, self.code = [], [], [], 0
        self._kpi = False

    def handle_starttag(self, tag, attrs):
        self.stack.append(tag)
        if tag == "span" and ("class", "kpi") in attrs:
            self._kpi = True
        self.code += tag == "code"

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()
        if tag == "span":
            self._kpi = False

    def handle_data(self, data):
        if self.stack and self.stack[-1] == "h3":
            self.h3.append(data)
        elif self._kpi and self.stack and self.stack[-1] == "span":
            self.kpis.append(data.strip())


def _pixels(png: bytes) -> np.ndarray:
    import matplotlib.image

    return matplotlib.image.imread(io.BytesIO(png), format="png")


def test_audit_is_grouped_by_pitfall_with_code_and_unique_labels(page):
    import json

    text = page.read_text()
    parsed = _Collect()
    parsed.feed(text)
    findings = json.loads(run("audit", "--demo", "-o", "json").stdout)["findings"]
    pitfalls = {f["pitfall"] for f in findings}
    headings = [h for h in parsed.h3 if h.startswith("Pitfall ")]
    assert len(headings) == len(pitfalls) == len(set(headings))
    assert parsed.code > 10                               # `...` in remediations became <code>
    audit_html = text.split("<h2>Audit")[1]
    assert "`" not in re.sub(r"<[^>]+>", "", audit_html)  # no raw backticks left
    assert len(parsed.kpis) == len(set(parsed.kpis))      # no label twice
    assert "class='nowrap'>KG-505<" in text               # IDs are never broken


def test_inline_gpu_map_is_a_real_picture(page):
    data = re.search(r'src="data:image/png;base64,([^"]+)"', page.read_text()).group(1)
    pixels = _pixels(base64.b64decode(data))
    assert pixels.shape[0] > 300 and float(pixels[..., :3].std()) > 0.05


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (apt-get install chromium)")
def test_headless_chromium_screenshot_is_not_blank(page, tmp_path):
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", f"--screenshot={shot}",
                    "--window-size=1400,2000", page.as_uri()], capture_output=True, timeout=120, check=False)
    assert shot.exists(), "chromium wrote no screenshot"
    pixels = _pixels(shot.read_bytes())
    assert pixels.shape[:2] == (2000, 1400)
    assert float(pixels[..., :3].std()) > 0.05
    # the GPU map's colours (training blue, stranded red) are on screen, not only text
    rgb = (pixels[..., :3] * 255).astype(int)
    assert ((abs(rgb - [8, 81, 156]).sum(axis=-1) < 30).sum()) > 1000
