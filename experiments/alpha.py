"""Is alpha the lever? The copy task of repeat.py with alpha set for this model's depth.

Pre-registered in experiments/README.md before any run: the arms alpha-L (the sphere
with alpha_init = 1/n_layer, the paper's rule) and alpha25 (0.25) against rmsnorm, at
T = 64 and 256; each arm's lr swept on two tuning seeds (an lr ranks by its worse
seed), then 10 paired seeds. The reading: the median r at 1.0 nat with a bootstrap
interval, the sign test, and the paired change of log r from T = 64 to 256. The task is
copytask.py's; training, resume, --deadline and the files are grid.py's.

    python experiments/alpha.py                        # the grid, about 10 CPU-hours
    python experiments/alpha.py --contexts 64 --deadline 05:10   # a part; goes on later
    python experiments/alpha.py --quick --out /tmp/a   # smoke test, seconds
    python experiments/alpha.py --from-json experiments/results/alpha/results.json
"""
import os
import sys

if __name__ == "__main__":  # a Ctrl-C while NumPy loads ends quietly (no traceback from an import)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from harness import quiet_startup
    quiet_startup("alpha.py")

import math
from dataclasses import dataclass

import common
import grid
import numpy as np
import repeat

# ---- the pre-registration (experiments/README.md quotes RULES; a test compares them)
ARMS = ("alpha-L", "alpha25")
TARGET = repeat.GATE_COPY2  # r: rmsnorm steps / the arm's steps to copy-2 <= 1.0 nat
CONFIDENCE, RESAMPLES, BOOTSTRAP_SEED = 0.95, 10_000, 0
RULES = {
    "faster": "the interval of the median r lies above 1",
    "slower": "the interval of the median r lies below 1",
    "as fast": "the interval of the median r holds 1",
    "rises": "the interval of the mean paired change of ln r from the shortest T to the "
             "longest lies above 0",
    "falls": "that interval lies below 0",
    "no trend": "that interval holds 0",
    "closes": "alpha-L is not slower at any gated T",
    "supports": "alpha-L is faster at the longest T and rises",
    "T=512": "runs only if an arm is faster at T = 256",
}


def ratios(row, arm, seeds):
    """seed -> r of the arm against rmsnorm/default at the row's T (censored: its bound,
    which is never on the wrong side of 1), for the paired seeds where either got to
    TARGET: the row's arms_r, which repeat.summarize reads at TARGET."""
    return {s: r[1] for s, r in row.arms_r.get(arm, {}).items() if r is not None and s in seeds}


def interval(values, statistic):
    """(statistic, its CONFIDENCE percentile interval over RESAMPLES resamples of the
    values with replacement)."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    draws = statistic(x[rng.integers(0, len(x), size=(RESAMPLES, len(x)))], axis=1)
    tail = (1 - CONFIDENCE) / 2
    low, high = np.quantile(draws, [tail, 1 - tail])
    return float(statistic(x)), float(low), float(high)


def sign_test(n_above, n):
    """The two-sided p of n_above of n seeds with r > 1, were either side as likely."""
    k = min(n_above, n - n_above)
    return min(1.0, 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n)


def call(low, high, one):
    """faster / slower / as fast (RULES), or rises / falls / no trend with one = 0."""
    names = ("faster", "slower", "as fast") if one == 1 else ("rises", "falls", "no trend")
    return names[0] if low > one else names[1] if high < one else names[2]


def reading(opts, summary):
    """Per arm: at each T, the median r, its interval, the count above 1 and the call;
    across T, the mean paired change of ln r; and the verdict (RULES), all from the
    records' repeat.summarize (its gates, paired seeds and each arm's r)."""
    seeds = summary.seeds
    rows = {row.T: row for row in summary.rows}
    gated = sorted(T for T, row in rows.items() if row.gate["passed"])
    decided = all(T in rows and rows[T].gate["seeds_run"] == len(seeds)
                  for T in opts.contexts)  # every T's gate is passed or failed, not pending
    out = {}
    for arm in ARMS:
        per_T, by_T = {}, {T: ratios(rows[T], arm, seeds) for T in gated}
        for T, rs in by_T.items():
            if rs:
                median, low, high = interval(list(rs.values()), np.median)
                above = sum(r > 1 for r in rs.values())
                ran = set(rows[T].arms_r.get(arm, {}))  # (the seeds the arm ran, r or not)
                per_T[T] = {"n": len(rs), "median": median, "low": low, "high": high,
                            "above": above, "p": sign_test(above, len(rs)),
                            "call": call(low, high, 1), "all_seeds": set(seeds) <= ran}
        trend = None
        if len(gated) >= 2:
            both = [s for s in by_T[gated[0]] if s in by_T[gated[-1]]]
            change = [math.log(by_T[gated[-1]][s] / by_T[gated[0]][s]) for s in both]
            if len(change) >= 2:
                mean, low, high = interval(change, np.mean)
                trend = {"n": len(change), "mean": mean, "low": low, "high": high,
                         "call": call(low, high, 0)}
        out[arm] = {"T": per_T, "trend": trend,
                    "verdict": verdict(arm, per_T, trend, gated if decided else [])}
    faster_at_256 = [arm for arm, a in out.items() if a["T"].get(256, {}).get("call") == "faster"]
    due = decided and 256 in gated and 512 not in opts.contexts and faster_at_256  # rule T=512
    return {"gated": gated, "arms": out, "t512_due": faster_at_256 if due else []}


def verdict(arm, per_T, trend, gated):
    """The pre-registered sentence for one arm (RULES)."""
    if not gated or any(T not in per_T or not per_T[T]["all_seeds"] for T in gated):
        return ("no verdict: a T of the grid has not run all its seeds, or none passed its "
                "gate")
    calls = "; ".join(f"T = {T}: {per_T[T]['call']}" for T in gated)
    across = f"; across T: {trend['call']}" if trend else ""
    if arm != "alpha-L":
        return calls + across
    closes = "closes" if all(per_T[T]["call"] != "slower" for T in gated) else "does not close"
    supports = per_T[gated[-1]]["call"] == "faster" and trend and trend["call"] == "rises"
    return (f"{closes} the sphere's deficit ({calls}{across})"
            + ("; supports the anchors' direction" if supports else ""))


@dataclass(frozen=True)
class Summary(repeat.Summary):
    """repeat.py's summary and the pre-registered reading."""
    alpha: dict


def report(records, opts, info, complete):
    base = repeat.summarize(records, opts)
    summary = Summary(**vars(base), alpha=reading(opts, base))
    md = (["# Is alpha the lever? The copy task with alpha set for this depth", ""]
          + repeat._header(opts, info, records)[2:]
          + repeat._status(summary, opts, records, complete, parser)
          + _reading_md(summary.alpha) + repeat._arms(records, summary))
    return summary, "\n".join(md)


def _reading_md(result):
    L = ["## The pre-registered reading", "",
         f"r = rmsnorm steps / the arm's steps to copy-2 ≤ {TARGET} nat per paired seed "
         "(censored at its bound); the median over seeds with its "
         f"{CONFIDENCE:.0%} bootstrap interval ({RESAMPLES:,} resamples); the seeds with "
         "r > 1 and the sign test's two-sided p. Rules: "
         + "; ".join(f"*{name}*: {text}" for name, text in RULES.items()) + ".", "",
         "| arm | T | seeds with r | median r | interval | r > 1 | sign test p | call |",
         "|---|---|---|---|---|---|---|---|"]
    for arm, a in result["arms"].items():
        for T, x in a["T"].items():
            L.append(f"| {arm} | {T} | {x['n']} | {x['median']:.2f} | [{x['low']:.2f}, "
                     f"{x['high']:.2f}] | {x['above']} of {x['n']} | {x['p']:.3f} | "
                     f"{x['call']} |")
    L.append("")
    for arm, a in result["arms"].items():
        t = a["trend"]
        if t:
            L.append(f"- {arm}, mean change of ln r over T: {t['mean']:+.2f} "
                     f"[{t['low']:+.2f}, {t['high']:+.2f}] over {t['n']} seeds: {t['call']}.")
        L.append(f"- **{arm}: {a['verdict']}**")
    if result["t512_due"]:
        L.append(f"- By the rule *T=512*, T = 512 runs next ({', '.join(result['t512_due'])} "
                 "faster at T = 256); the verdict above is the one at the T that have run.")
    return L + [""]


QUICK = dict(repeat.QUICK, variants=list(ARMS), seeds=3, tune_seeds=1)


def parser():
    return grid.parser("alpha", __doc__, variants=list(ARMS), sphere_default=False,
                         tune_seeds=2, seeds=10, contexts=[64, 256])


ALPHA = grid.Study("alpha", parser, QUICK, report, repeat.plots)


@common.cli
def main(argv):
    return grid.run_study(ALPHA, argv)


if __name__ == "__main__":
    from harness import leave
    leave(main())
