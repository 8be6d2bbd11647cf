"""notebooks/exercises.py's grading itself: a check never calls an answer right that is not a real
number (complex, text, objects), reads a learner's iterator only as far as the answer goes, and shows
an exception from the learner's code by its type and message even when the message itself fails.
(Each notebook's checks: tests/test_exercises_NN.py; a forgotten return: tests/test_worked_solutions.py.)"""
import itertools
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import value

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))
import exercises  # noqa: E402


def right_count(cfg):
    return exercises._08_size(cfg)


@pytest.mark.parametrize("wrong, why", [
    (lambda cfg: right_count(cfg) + 1000j, "複素数が返りました（虚部 1e+03）"),
    (lambda cfg: np.array([right_count(cfg)]) + 1000j, "複素数が返りました（虚部 1e+03）"),
    (lambda cfg: [complex(right_count(cfg), 1e-9)], "複素数が返りました（虚部 1e-09）"),
    (lambda cfg: str(right_count(cfg)), "数ではなく文字列が返りました"),
    (lambda cfg: [str(right_count(cfg))], "数ではなく文字列が返りました"),
    (lambda cfg: value.Value(right_count(cfg)), "数ではない値が返りました（Value）"),
    (lambda cfg: [right_count(cfg), None], "数ではない値が返りました（NoneType）"),
    (lambda cfg: (n for n in [right_count(cfg)]), "数ではない値が返りました（generator）"),
])
def test_an_answer_that_is_not_real_numbers_is_wrong_with_one_line_why(wrong, why, capsys):
    assert exercises.check_08_count_params(wrong) is False
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  V=")]
    assert len(rows) == 3 and all(why in row for row in rows), rows


def test_real_numbers_of_any_type_are_numbers(capsys):
    assert exercises.check_08_count_params(lambda cfg: Fraction(right_count(cfg))) is True
    assert exercises.check_08_count_params(lambda cfg: np.int32(right_count(cfg))) is True


def test_an_endless_iterator_is_read_one_node_past_the_graph(capsys):
    reads = []

    def endless(root):
        for v in itertools.cycle(value.topological_order(root)):
            reads.append(v)
            assert len(reads) < 10_000, "read on and on"  # (rather than hang)
            yield v
    assert exercises.check_01_topological_order(endless) is False
    assert len(reads) <= sum(len(value.topological_order(root)) + 1 for _, (root,) in exercises._graphs_01())


def test_an_exception_whose_message_fails_is_shown_by_its_type(capsys):
    class Stubborn(Exception):
        def __str__(self):
            raise RuntimeError("no message")

    def fails(cfg):
        raise Stubborn
    assert exercises.check_08_count_params(fails) is False
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  V=")]
    assert len(rows) == 3 and all("Stubborn: （メッセージを文字列にできませんでした）" in row for row in rows)
