"""The viewer in real headless Chromium, opened from the filesystem (file://, no server): the run page renders and
its table filters as a person types, a session page shows its conversation with tool calls and draws its token
view (trainable tokens highlighted, logprobs on hover), and no page throws."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from polar_hpc.cli.entry import main
from tests.fixtures.browser import Browser

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
async def site(sdk_run: Path, tmp_path: Path) -> Path:
    out = tmp_path / "site"
    assert main(["view", str(sdk_run), "--out", str(out), "--tokenizer", "asset:qwen3-tokenizer"]) == 0
    return out


async def test_viewer_in_chromium(site: Path, browser: Browser) -> None:
    await _run_page_renders_and_filters(site, browser)
    await _session_page_shows_tool_calls_and_tokens(site, browser)


async def _run_page_renders_and_filters(site: Path, browser: Browser) -> None:
    await browser.goto((site / "index.html").as_uri())
    assert await browser.eval("document.querySelectorAll('#sessions tbody tr').length") == 6
    assert await browser.eval("document.getElementById('shown').textContent") == "6 of 6 sessions"
    await browser.eval("document.getElementById('accepted').value = 'no';"
                       "document.getElementById('accepted').dispatchEvent(new Event('input'))")
    assert await browser.eval("document.getElementById('shown').textContent") == "2 of 6 sessions"
    visible: list[str] = await browser.eval(
        "[...document.querySelectorAll('#sessions tbody tr:not([hidden]) td:last-child')].map(td => td.textContent)")
    assert visible == ["tests still failing: test_add.py::test_add"] * 2
    await browser.eval("document.getElementById('accepted').value = '';"
                       "document.getElementById('accepted').dispatchEvent(new Event('input'))")
    await browser.type_into("#q", "calc-4")
    assert await browser.eval("document.getElementById('shown').textContent") == "1 of 6 sessions"
    images = await browser.eval("[...document.images].map(i => [i.getAttribute('src'), i.naturalWidth])")
    assert {src for src, _ in images} >= {"report/stage_durations.png", "report/reward_hist.png"}
    assert all(width > 100 for _, width in images)  # the plots load from the filesystem
    assert browser.errors == []


async def _session_page_shows_tool_calls_and_tokens(site: Path, browser: Browser) -> None:
    await browser.goto((site / "index.html").as_uri())
    href = await browser.eval("document.querySelector('#sessions a[href*=\"calc-2\"]').href")
    await browser.goto(href)
    calls = await browser.eval("[...document.querySelectorAll('.call')].map(c => c.dataset.tool)")
    assert calls == ["bash", "edit"]
    text = await browser.eval("document.querySelector('.chain').innerText")
    assert "add() subtracts; fix it." in text and '"new": "a + b"' in text and "replaced 1 occurrence" in text
    assert await browser.eval("document.getElementById('status').textContent") == "completed"
    tokens: dict[str, Any] = await browser.eval("""(() => {
        const box = document.querySelector('.tokens');
        const s = [...box.querySelectorAll('.tok.s')];
        return {rendered: +box.dataset.rendered, spans: box.querySelectorAll('.tok').length, trainable: s.length,
                text: s.map(e => e.textContent).join(''), title: s[0].title,
                segments: [...box.querySelectorAll('.seg')].map(e => e.textContent)};
    })()""")
    assert tokens["rendered"] == tokens["spans"] == 390 and tokens["trainable"] == 107
    assert "<tool_call>" in tokens["text"] and "Fixed add.py" in tokens["text"]
    assert tokens["title"].startswith("id ") and "logprob -0.0" in tokens["title"]
    assert tokens["segments"] == ["prompt 246", "sampled 35", "inserted 19", "sampled 51", "inserted 18",
                                  "sampled 21"]
    assert "tests still failing" in await browser.eval("document.body.innerText")
    printed = await browser.eval("document.querySelector('.test-output').innerText")
    assert "E       assert add(1, 2) == 3" in printed  # what the tests printed
    assert browser.errors == []
