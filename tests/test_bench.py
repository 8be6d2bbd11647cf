"""benchmarks/bench.py's issue-13 table, in a smoke version (a few rounds; nothing here judges a time)."""
import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import bench  # noqa: E402

import microgpt as mg  # noqa: E402


def test_the_before_after_table_states_each_target_as_the_speed_up_it_asked_for():
    docs = mg.load_corpus("names")[:300]
    vocab = mg.build_vocab(docs)
    tokens = [mg.doc_tokens(d, vocab) for d in docs]
    rows = bench.before_after_table(tokens, len(vocab) + 1, argparse.Namespace(quick=True), lambda *a: None)
    body = [r for r in rows[2:] if r.startswith("| ")]
    assert [r.split(" | ")[:2] for r in body] == [["| rmsnorm", v] for v in ("before", "after", "after f32")] + \
        [["| sphere", v] for v in ("before", "after", "after f32")]
    for norm, (target, before_then) in bench.TARGETS.items():
        after = next(r for r in body if r.startswith(f"| {norm} | after |"))
        assert re.search(rf"\| [\d.]+x \| {target:.2f} ms = {before_then / target:.2f}x: (met|not met) \|$", after)
