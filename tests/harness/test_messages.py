"""harness/messages.py: what a run prints: losses that never become 300-digit numbers, what a stopped run
kept, and a resume command that works when pasted where the run was started."""
import os
import shlex
import sys

from cli_helpers import ROOT, TINY, fail_fsync_after, interrupt_at, run

from harness import cli, messages
from harness.checkpoints import load_checkpoint
from harness.errors import EXIT_IO


def test_ctrl_c_on_a_full_disk_says_what_was_kept(tmp_path, corpus, capsys, monkeypatch):
    interrupt_at(monkeypatch, 15)
    fail_fsync_after(monkeypatch, 2)  # the step-10 checkpoint and history; not the one Ctrl-C saves
    out = tmp_path / "run"
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "40", "--eval-every", "10", "--out", str(out)])
    assert code == EXIT_IO
    assert "interrupted at step 15/40, but cannot write" in err and "No space left on device" in err
    assert "the last good checkpoint is" in err and "(step 10)" in err
    assert load_checkpoint(str(out / "checkpoint.npz")).step == 10


def test_a_huge_loss_is_never_printed_as_a_300_digit_number():
    assert messages.fmt_loss(1e300) == "1.000e+300" and messages.fmt_loss(2.34567) == "2.3457"

def test_the_printed_resume_command_names_the_interpreter_or_the_launcher(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    args = cli.build_parser().parse_args([])
    words = shlex.split(messages.resume_command(os.path.join("out", "run-1"), args))
    assert words[0] == sys.executable and words[1] == os.path.join(ROOT, "microgpt.py")  # (far away: absolute)
    assert words[2:] == ["--resume", "--out", os.path.join("out", "run-1")]  # (the folder it claimed, from here)
    # started by `python3 dev.py run`: dev.py says so, and the command is the user's own, with their --out
    monkeypatch.setenv("MICROGPT_LAUNCHER", shlex.join(["/usr/bin/python3", "../dev.py", "run"]))
    args = cli.build_parser().parse_args(["--out", "/tmp/dev test/o u't", "--temperature", "0.7"])
    assert shlex.split(messages.resume_command("/tmp/dev test/o u't", args)) == [
        "/usr/bin/python3", "../dev.py", "run", "--resume", "--out", "/tmp/dev test/o u't", "--temperature", "0.7"]


def test_a_printed_command_passes_a_value_starting_with_a_dash_as_flag_value(tmp_path, monkeypatch):
    """--prompt -x or --out -x would be read as flags of their own: the command writes --prompt=-x, and
    argparse reads it back as the value it was."""
    monkeypatch.chdir(tmp_path)
    args = cli.build_parser().parse_args(["--out=-x", "--prompt=-y z", "--temperature", "0.7"])
    words = shlex.split(messages.resume_command("-x", args))
    assert words[2:] == ["--resume", "--out=-x", "--temperature", "0.7", "--prompt=-y z"]
    again = cli.build_parser().parse_args(words[2:])
    assert (again.out, again.prompt, again.resume) == ("-x", "-y z", True)
    assert messages.flag_words("--out", "runs/a") == ["--out", "runs/a"]


def test_the_resume_command_keeps_the_console_language(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MICROGPT_LAUNCHER", raising=False)
    args = cli.build_parser().parse_args(["--out", "o", "--lang", "ja"])
    assert shlex.split(messages.resume_command("o", args))[2:] == ["--resume", "--out", "o", "--lang", "ja"]
