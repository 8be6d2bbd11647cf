"""experiments/arguments.py -- what the experiment scripts' command lines share: the one-line parser error, --quick's
defaults, the argument types."""
import argparse
import math
import sys


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse would print the whole usage first)
        print(f"{self.prog}: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def parse(parser, argv, quick):
    """The options; with --quick, the sizes in `quick` become the defaults (flags given explicitly still win)."""
    opts = parser.parse_args(argv)
    if opts.quick:
        parser.set_defaults(**quick)
        opts = parser.parse_args(argv)
    return opts


def float_list(text):
    """"0.001,0.01" -> [0.001, 0.01]: positive finite numbers."""
    try:
        xs = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not xs or not all(math.isfinite(x) and x > 0 for x in xs):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return xs


def float_list_or_empty(text):
    """float_list, or [] for "" and "none" (an axis switched off)."""
    return [] if text.strip().lower() in ("", "none") else float_list(text)


def int_list(text):
    """"64,128" -> [64, 128]: positive integers."""
    try:
        xs = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not xs or min(xs) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return xs


def _int_at_least(text, low, what):
    try:
        x = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if x < low:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return x


def pos_int(text):
    return _int_at_least(text, 1, "a positive integer")


def nonneg_int(text):
    return _int_at_least(text, 0, "an integer >= 0")
