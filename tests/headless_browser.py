"""A real headless Chromium for the HTML report's tests, driven by Playwright for Python so a
test can see what a page did: every JavaScript dialog it opened (``alert``, ``confirm``,
``prompt``), every uncaught script error, its DOM after load and its visible text.

Playwright drives the system's Chromium (Debian's ``chromium``, which .ci/run installs), so no
browser download is needed; where no Chromium exists the tests skip, saying so."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Error

_BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: After the load event, how long queued tasks (timers, late error events) may still run.
SETTLE_MS = 100


def _find_chromium() -> str | None:
    for name in _BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = _find_chromium()
needs_browser = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no headless Chromium on this machine (.ci/run installs it: apt-get install chromium)",
)


@dataclass
class Visit:
    """What a page did while it loaded and settled, and what it showed."""

    dialogs: list[tuple[str, str]] = field(default_factory=list)  # (type, message)
    errors: list[str] = field(default_factory=list)  # uncaught script errors
    dom: str = ""  # the DOM serialized after the page's scripts ran
    text: str = ""  # the body's rendered text (document.body.innerText)
    title: str = ""


@contextmanager
def launched() -> Iterator[Browser]:
    """The system Chromium, headless, under Playwright; closed on exit."""
    assert CHROMIUM is not None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:  # a checkout installed before the test extra named it
        pytest.fail("Playwright is missing: pip install -e '.[test]'")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def visit(browser: Browser, page_file: Path, *, screenshot: Path | None = None) -> Visit:
    """Open ``page_file`` in a fresh page, note each dialog (then dismiss it, as a user closing
    it would) and each uncaught error until the page loaded and settled."""
    seen = Visit()

    def on_dialog(dialog: Dialog) -> None:
        seen.dialogs.append((dialog.type, dialog.message))
        dialog.dismiss()

    def on_error(error: Error) -> None:
        seen.errors.append(f"{error.name}: {error.message}")

    context = browser.new_context(viewport={"width": 1200, "height": 1600})
    try:
        page = context.new_page()
        page.on("dialog", on_dialog)
        page.on("pageerror", on_error)
        page.goto(page_file.resolve().as_uri(), wait_until="load")
        page.evaluate("ms => new Promise(done => setTimeout(done, ms))", SETTLE_MS)
        seen.dom = page.content()
        seen.text = page.inner_text("body")
        seen.title = page.title()
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=False)
    finally:
        context.close()
    return seen
