"""What the browser tests share: Debian's headless Chromium driven by Playwright, or one line saying
how to install them (the calling test module is then skipped)."""
import os
import shutil

import pytest

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def find_chromium():
    for path in (os.environ.get("PLANETARIUM_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def chromium_or_skip(page):
    """(Chromium's path, Playwright's sync_playwright), or the calling module skipped in one line."""
    chromium = find_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if chromium is None or sync_playwright is None:
        pytest.skip(f"no browser for the {page} test: install one with `apt-get install chromium` "
                    "(Debian/Ubuntu; .ci/run does it) and `pip install playwright` (requirements.txt), "
                    "or set PLANETARIUM_CHROMIUM", allow_module_level=True)
    return chromium, sync_playwright
