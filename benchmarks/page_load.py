"""How long the prebuilt pages take to load in headless Chromium from file://: size, median and
largest time from navigation start to the end of the load event (the first screen is drawn
before it ends), each load in a fresh tab. Needs Playwright and Chromium (PLANETARIUM_CHROMIUM).

    .venv/bin/python benchmarks/page_load.py [--repeat 9] [PAGE ...]
"""
import argparse
import os

from playwright.sync_api import sync_playwright

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "docs", name) for name in ("step_player.html", "planetarium.html")]

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pages", nargs="*", default=PAGES)
    parser.add_argument("--repeat", type=int, default=9, help="loads per page (default 9)")
    args = parser.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get(
            "PLANETARIUM_CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox", "--disable-gpu"])
        for path in args.pages:
            times = []
            for _ in range(args.repeat):
                tab = browser.new_page(viewport={"width": 1440, "height": 900})
                tab.goto("file://" + os.path.abspath(path), wait_until="load")
                times.append(tab.evaluate("performance.getEntriesByType('navigation')"
                                          "[0].loadEventEnd"))
                tab.close()
            print(f"{os.path.basename(path)}: {os.path.getsize(path) / 1e6:.2f} MB, loaded in"
                  f" {sorted(times)[len(times) // 2]:.0f} ms (median of {args.repeat}; largest"
                  f" {max(times):.0f} ms)")
