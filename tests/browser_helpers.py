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


def write_big_vocab_run(folder):
    """A run of 3,000 characters and BOS in `folder` (random weights, 5 snapshots of 20
    steps): the planetarium's big vocabulary, for its browser test and the frame
    benchmark."""
    import numpy as np

    import microgpt as mg
    from harness.history import HISTORY_NAME, History
    from model_config import GPTConfig
    vocab = [chr(0x4E00 + i) for i in range(3000)]
    cfg = GPTConfig(vocab_size=len(vocab) + 1)
    h, rng, params = History(cfg, vocab, 20, count=5), np.random.default_rng(0), mg.init_params(cfg)
    for step in range(21):
        if h.due(step):
            h.record(step, {k: v + 0.01 * step * rng.normal(size=np.shape(v)) for k, v in params.items()})
    os.makedirs(folder, exist_ok=True)
    h.save(os.path.join(folder, HISTORY_NAME), [3.0 - 0.01 * i for i in range(20)], [(20, 2.9)])
    return str(folder)
