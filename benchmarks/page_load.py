"""Page load times in headless Chromium from file://: size, median and largest time from
navigation start to the load event's end (the first screen is drawn before it), a fresh
tab each load; --frames N: the median of N planetarium frames while the camera turns,
each up to a one-pixel read of every canvas. Needs Playwright and Chromium.
"""
import argparse
import os

from playwright.sync_api import sync_playwright

PAGES = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", name)
         for name in ("step_player.html", "planetarium.html")]
FRAMES = """n => { const P = window.__planetarium, cs = document.querySelectorAll('canvas'), t = [];
    for (let i = 0; i < n; i++) { P.turn(0.05, 0); const t0 = performance.now(); P.drawFrame();
        for (const c of cs) c.getContext('2d').getImageData(0, 0, 1, 1);
        t.push(performance.now() - t0); } return t.sort((a, b) => a - b)[n >> 1]; }"""

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pages", nargs="*", default=PAGES)
    parser.add_argument("--repeat", type=int, default=9, help="loads per page (default 9)")
    parser.add_argument("--frames", type=int, default=0, help="planetarium frames to time")
    args = parser.parse_args()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=os.environ.get(
            "PLANETARIUM_CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox", "--disable-gpu"])
        for path in args.pages:
            times, frame = [], ""
            for i in range(args.repeat):
                tab = browser.new_page(viewport={"width": 1440, "height": 900})
                tab.goto("file://" + os.path.abspath(path), wait_until="load")
                times.append(tab.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
                if i == 0 and args.frames and tab.evaluate("!!window.__planetarium"):
                    frame = f"; a frame while turning: {tab.evaluate(FRAMES, args.frames):.1f} ms"
                tab.close()
            print(f"{os.path.basename(path)}: {os.path.getsize(path) / 1e6:.2f} MB, loaded in"
                  f" {sorted(times)[len(times) // 2]:.0f} ms (median of {args.repeat}; largest"
                  f" {max(times):.0f} ms){frame}")
