"""harness/shell.py: both programs run in one shell. A signal in any phase is one line and exit 130 with nothing
half written; a closed, full or broken standard output is exit 74 without a traceback; any text prints."""
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from cli_helpers import ROOT, TINY, run, write_corpus

import planetarium
from harness import run_files
from harness.errors import EXIT_INTERRUPTED, EXIT_IO, EXIT_OK
from harness.shell import Shell, _takeable


@pytest.fixture(scope="module")
def four_runs(tmp_path_factory):
    """Four finished runs (a page of four skies takes a moment to build and write)."""
    base = tmp_path_factory.mktemp("runs")
    corpus = write_corpus(str(base))
    folders = []
    for i, norm in enumerate(["rmsnorm", "sphere", "rmsnorm", "sphere"]):
        folder = str(base / f"run{i}")
        proc = subprocess.run([sys.executable, "microgpt.py", *TINY, "--corpus", corpus, "--norm", norm, "--seed",
                               str(i), "--steps", "30", "--out", folder], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        folders.append(folder)
    return folders


def planetarium_cli(args, **kwargs):
    return subprocess.run([sys.executable, os.path.join(ROOT, "planetarium.py"), *args], capture_output=True,
                          text=True, timeout=120, **kwargs)


def loading_numpy(proc, timeout=20):
    """Wait until the child maps NumPy's core library: it is importing NumPy, the slow part of starting up."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and os.path.exists(f"/proc/{proc.pid}/maps"):
        with open(f"/proc/{proc.pid}/maps") as f:
            if "_multiarray_umath" in f.read():
                return
        time.sleep(0.001)


def no_temp_files(folder):
    return not [name for name in os.listdir(folder) if name.startswith(run_files.TEMP_PREFIX)]


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_to_the_planetarium_in_any_phase_is_one_line_exit_130_and_nothing_half_written(four_runs, tmp_path,
                                                                                                 sig):
    rng = random.Random(sig)
    page = tmp_path / "page.html"
    codes = set()
    for _ in range(8):
        proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "planetarium.py"), *four_runs, "--html",
                                 str(page)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        loading_numpy(proc)  # (before that, Python itself is starting: no program can take a signal yet)
        time.sleep(rng.uniform(0.0, 1.0))  # while loading, building or writing the page
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        codes.add(proc.returncode)
        assert proc.returncode in (EXIT_OK, EXIT_INTERRUPTED), (proc.returncode, err)
        assert "Traceback" not in err and err.strip().count("\n") == 0, err
        if proc.returncode == EXIT_INTERRUPTED:
            assert err.strip().startswith("planetarium: interrupted"), err
        assert no_temp_files(tmp_path)
        if page.exists():
            assert page.read_bytes().rstrip().endswith(b"</html>")  # a page is whole, or not there
    assert EXIT_INTERRUPTED in codes


def test_an_interrupted_page_write_leaves_no_temp_file(four_runs, tmp_path, monkeypatch, capsys):
    """The shell turns a signal into KeyboardInterrupt wherever the program is: inside the page's write,
    atomic_write removes its temp file on the way out."""
    real = run_files.os.fsync

    def fsync(fd):
        os.kill(os.getpid(), signal.SIGTERM)  # arrives in the middle of the write
        real(fd)

    monkeypatch.setattr(run_files.os, "fsync", fsync)
    code = planetarium.main([four_runs[0], "--html", str(tmp_path / "p.html")])
    _, err = capsys.readouterr()
    assert code == EXIT_INTERRUPTED and err == "\nplanetarium: interrupted; nothing was written\n"
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("how", ["closed", "full", "pipe"])
def test_the_planetarium_on_a_closed_full_or_broken_stdout_is_exit_74(four_runs, tmp_path, how):
    page = str(tmp_path / "p.html")
    cmd = f"{sys.executable} {os.path.join(ROOT, 'planetarium.py')} {four_runs[0]} --html {page}"
    shell = {"closed": cmd + " >&-", "full": cmd + " > /dev/full", "pipe": cmd + " | true"}[how]
    proc = subprocess.run(["bash", "-c", "set -o pipefail; " + shell], capture_output=True, text=True, timeout=120)
    assert proc.returncode == EXIT_IO and "Traceback" not in proc.stderr, proc.stderr
    expected = {"closed": "planetarium: error: cannot write to standard output: it is closed\n",
                "full": "planetarium: error: cannot write to standard output: No space left on device\n",
                "pipe": ""}  # (the reader of a pipe left on purpose: quietly)
    assert proc.stderr == expected[how]
    assert no_temp_files(tmp_path)


def test_any_text_prints_on_an_ascii_terminal(four_runs, tmp_path):
    page = tmp_path / "ページ\udcff.html"  # a name with non-ASCII characters and an undecodable byte
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "planetarium.py"), four_runs[0], "--html",
                           os.fsencode(page)], capture_output=True, timeout=120,
                          env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert proc.returncode == EXIT_OK and proc.stderr == b"", proc.stderr
    assert proc.stdout.decode("ascii").strip().endswith(r"\u30da\u30fc\u30b8\udcff.html")
    assert os.path.exists(os.fsencode(page))


@pytest.mark.slow
def test_a_signal_just_after_the_run_wrote_its_files_is_exit_130_with_the_right_line(tmp_path):
    """The last milliseconds of a run: the files are written and the folder is being released. A signal then
    is never a traceback, nor 'interrupted while starting'."""
    corpus = write_corpus(str(tmp_path))
    rng = random.Random(1)
    for trial in range(12):
        proc = subprocess.Popen([sys.executable, "microgpt.py", *TINY, "--corpus", corpus, "--steps", "3",
                                 "--out", str(tmp_path / f"run{trial}")], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        for line in proc.stdout:
            if line.startswith("wrote"):
                break
        time.sleep(rng.uniform(0, 0.05))
        proc.send_signal(rng.choice([signal.SIGINT, signal.SIGTERM]))
        _, err = proc.communicate(timeout=60)
        assert proc.returncode in (EXIT_OK, EXIT_INTERRUPTED) and "Traceback" not in err, err
        assert "while starting" not in err and err.strip().count("\n") == 0, err
        assert not (tmp_path / f"run{trial}" / run_files.LOCK_NAME).exists()


def test_the_shell_restores_the_handlers_it_found_and_leaves_a_debuggers_ctrl_c_alone(capsys):
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with Shell("test") as shell:
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert shell.exit_code == EXIT_OK and {sig: signal.getsignal(sig) for sig in before} == before

    def debugger(signum, frame):  # a handler that is neither Python's nor ours: a debugger's (pdb after `c`)
        pass

    old = signal.signal(signal.SIGINT, debugger)
    try:
        assert not _takeable(signal.SIGINT) and _takeable(signal.SIGTERM)
    finally:
        signal.signal(signal.SIGINT, old)


def test_microgpt_and_the_planetarium_say_a_bad_flag_the_same_way(capsys, four_runs):
    code, _, err = run(capsys, ["--bogus"])
    assert code == 2 and err.startswith("microgpt: error: unrecognized arguments: --bogus")
    proc = planetarium_cli([four_runs[0], "--bogus"])
    assert proc.returncode == 2 and proc.stderr.startswith("planetarium: error: unrecognized arguments: --bogus")
    assert proc.stderr.count("\n") == 1 and "--help" in proc.stderr
