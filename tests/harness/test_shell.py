"""harness/shell.py: both programs run in one shell. A signal in any phase is one line and exit 130 with nothing
half written; a closed, full or broken standard output is exit 74 without a traceback; any text prints."""
import json
import os
import random
import signal
import subprocess
import sys
import time

import pytest
from cli_helpers import (
    LONG,
    ROOT,
    TINY,
    child,
    loading_numpy,
    one_clean_line,
    run,
    start,
    wait_for_training,
    write_corpus,
)

import microgpt as mg
import planetarium
from harness import cli, run_files
from harness.checkpoints import load_checkpoint
from harness.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_IO, EXIT_OK
from harness.history import HISTORY_NAME
from harness.run_files import LOCK_NAME
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_microgpt_and_the_planetarium_say_a_bad_flag_the_same_way(capsys, tmp_path):
    code, _, err = run(capsys, ["--bogus"])
    assert code == 2 and err.startswith("microgpt: error: unrecognized arguments: --bogus")
    proc = planetarium_cli([str(tmp_path), "--bogus"])  # (argparse refuses it before any folder is read)
    assert proc.returncode == 2 and proc.stderr.startswith("planetarium: error: unrecognized arguments: --bogus")
    assert proc.stderr.count("\n") == 1 and "--help" in proc.stderr


@pytest.mark.slow
def test_stdout_full_or_closed_is_an_io_error_without_a_traceback(corpus):
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "microgpt.py", *TINY, "--corpus", corpus, "--steps", "3"], cwd=ROOT,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert proc.returncode == EXIT_IO
    assert proc.stderr == "microgpt: error: cannot write to standard output: No space left on device\n"
    closed = subprocess.run(f"{sys.executable} microgpt.py --corpus {corpus} --steps 3 >&-", shell=True, cwd=ROOT,
                            stderr=subprocess.PIPE, text=True, timeout=60)
    assert closed.returncode == EXIT_IO
    assert closed.stderr == "microgpt: error: cannot write to standard output: it is closed\n"

@pytest.mark.slow
def test_sigterm_and_early_ctrl_c_stop_cleanly(tmp_path, corpus):
    proc = start(LONG + ["--corpus", corpus, "--out", str(tmp_path / "run")])
    wait_for_training(proc)
    proc.send_signal(signal.SIGTERM)  # like Ctrl-C: the step finishes, a checkpoint is saved, exit 130
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED and "checkpoint saved" in err and "Traceback" not in err
    assert load_checkpoint(str(tmp_path / "run" / "checkpoint.npz")).step >= 1


@pytest.mark.slow
def test_names_print_on_an_ascii_terminal(corpus):
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run([sys.executable, "microgpt.py", "--engine", "numpy", "--steps", "3", "--corpus", "jp-names",
                           "--num-samples", "2"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == EXIT_OK and "Traceback" not in proc.stderr
    assert "sample  1: \\u" in proc.stdout  # hiragana escaped, not a UnicodeEncodeError


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_sample_only_is_exit_130_with_a_message(tmp_path, corpus, capsys, sig):
    ckpt = tmp_path / "run" / "checkpoint.npz"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(tmp_path / "run")])[0] == 0
    proc = child(["--sample-only", "--checkpoint", str(ckpt), "--num-samples", "100000000", "--engine", "numpy"])
    proc.stdout.readline(), proc.stdout.readline()  # the names are coming
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED and "interrupted" in err and "Traceback" not in err, err

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
@pytest.mark.parametrize("delay", [0.0, 0.3, pytest.param(1.0, marks=pytest.mark.slow)])
def test_a_signal_while_starting_leaves_nothing(tmp_path, corpus, sig, delay):
    """microgpt.py's first lines are the chapter's imports: a signal while Python loads NumPy is Python's
    own (KeyboardInterrupt, or the signal's default). From main() on, the shell says it in one line,
    exit 130. Either way the --out folder is not left held, nor created for nothing."""
    out = tmp_path / "run"
    proc = child(LONG + ["--corpus", corpus, "--out", str(out)], cwd=tmp_path)
    if os.path.exists(f"/proc/{proc.pid}/maps"):
        loading_numpy(proc)
    time.sleep(delay)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    # (Python 3.10's C-level imports turn a KeyboardInterrupt inside NumPy's extension modules into an
    # ImportError, which NumPy reports as such: still Python's own answer, exit 1 with its traceback)
    py310 = sys.version_info < (3, 11) and sig == signal.SIGINT and "\nImportError: " in err
    assert proc.returncode in (EXIT_INTERRUPTED, -sig) or (py310 and proc.returncode == 1), (delay, err)
    if proc.returncode == EXIT_INTERRUPTED and "Traceback" not in err:
        assert "interrupted" in err and err.count("\n") <= 2, err
    assert not (out / LOCK_NAME).exists()
    assert not out.exists() or os.listdir(out)

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_training_saves_and_releases_the_folder(tmp_path, corpus, sig):
    out = tmp_path / "run"
    proc = child(LONG + ["--corpus", corpus, "--out", str(out)])
    wait_for_training(proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED and "checkpoint saved" in err and "Traceback" not in err
    assert not (out / LOCK_NAME).exists()
    assert (out / HISTORY_NAME).exists() and load_checkpoint(str(out / "checkpoint.npz")).step >= 20

def test_a_signal_during_the_final_writes_lets_them_finish(tmp_path, corpus, capsys, monkeypatch):
    real = run_files.write_json

    def write_json(path, obj):  # SIGTERM arrives while metrics.json is being written
        signal.raise_signal(signal.SIGTERM)
        real(path, obj)

    monkeypatch.setattr(cli, "write_json", write_json)
    out = tmp_path / "run"
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", str(out)])
    assert code == EXIT_INTERRUPTED and "all of them were written" in err
    assert sorted(os.listdir(out)) == ["checkpoint.npz", HISTORY_NAME, "loss.png", "metrics.json"]  # no lock left
    assert json.loads((out / "metrics.json").read_text())["steps"] == 5

def test_a_second_signal_after_the_run_stopped_says_what_was_kept(tmp_path, corpus, capsys, monkeypatch):
    def names(*args, **kwargs):  # Ctrl-C while the names are sampled, after training saved its last checkpoint
        raise KeyboardInterrupt
        yield

    monkeypatch.setattr(mg, "iter_samples", names)
    out = tmp_path / "run"
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", str(out)])
    assert code == EXIT_INTERRUPTED and "stopped without saving" not in err
    assert f"the last checkpoint is {str(out / 'checkpoint.npz')!r} (step 5)" in err

def test_an_allocation_that_fails_anyway_is_one_line(corpus, capsys, monkeypatch):
    def no_memory(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(mg, "alloc_params", no_memory)
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "3"])
    assert code == EXIT_BAD_INPUT and "not enough memory" in err
    one_clean_line(err)


def test_a_closed_pipe_stops_quietly(corpus):
    # `python microgpt.py | head -1`: the reader goes away; no BrokenPipeError traceback
    proc = subprocess.Popen([sys.executable, "microgpt.py", *TINY, "--corpus", corpus, "--steps", "2000"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) != 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err

def test_real_sigint_in_a_subprocess(tmp_path, corpus):
    proc = subprocess.Popen([sys.executable, "microgpt.py", *TINY, "--corpus", corpus, "--steps", "10000000",
                             "--eval-every", "50", "--out", str(tmp_path / "run")], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:  # wait until training is under way
        if line.startswith("step"):
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "checkpoint saved" in err
    assert load_checkpoint(str(tmp_path / "run" / "checkpoint.npz")).step >= 50

def test_ctrl_c_outside_training_exits_cleanly(corpus, capsys, monkeypatch):
    def interrupted(*args):
        raise KeyboardInterrupt
    monkeypatch.setattr(mg, "load_corpus", interrupted)
    code, _, err = run(capsys, TINY + ["--corpus", corpus])
    assert code == 130 and "interrupted" in err


@pytest.mark.parametrize("prog", ["microgpt.py", "planetarium.py"])
def test_a_deleted_working_folder_is_said_as_such(tmp_path, prog):
    """Started in a folder that was deleted: one line saying so (not "cannot write to standard output")."""
    gone = tmp_path / "gone"
    gone.mkdir()
    code = ("import os, subprocess, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
            "r = subprocess.run([sys.executable, sys.argv[2], *sys.argv[3:]], capture_output=True, text=True); "
            "print(r.returncode); print(r.stderr)")
    args = ["--steps", "2", "--engine", "numpy"] if prog == "microgpt.py" else ["run"]
    r = subprocess.run([sys.executable, "-c", code, str(gone), os.path.join(ROOT, prog), *args], capture_output=True,
                       text=True, timeout=120)
    returncode, err = r.stdout.split("\n", 1)
    assert int(returncode) == 2 and "the current folder no longer exists" in err, r.stdout + r.stderr
    assert "standard output" not in err and "Traceback" not in err


@pytest.mark.parametrize("script", ["microgpt.py", "planetarium.py", "experiments/repeat.py"])
def test_run_without_the_projects_packages_a_program_names_the_missing_one(script):
    """python -S has no site-packages (no NumPy): one line naming the package and the command that runs the program
    with the project's packages (dev.py), exit 2, never a ModuleNotFoundError traceback."""
    r = subprocess.run([sys.executable, "-S", os.path.join(ROOT, script), "--help"], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert r.returncode == 2 and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "the package 'numpy' is not installed" in r.stderr and f"python3 {os.path.join(ROOT, 'dev.py')} run" in r.stderr


FAKE_NUMPY = """import os, signal, time
try:  # NumPy's C import turns an error while it loads, KeyboardInterrupt too, into "check your installation"
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
except KeyboardInterrupt:
    raise ImportError("IMPORTANT: PLEASE READ THIS FOR ADVICE ON HOW TO SOLVE THIS ISSUE! check your installation")
"""


@pytest.mark.slow
def test_ctrl_c_while_numpy_loads_is_exit_130_not_numpys_import_error(tmp_path):
    """A NumPy that is being imported when Ctrl-C comes (as the real one does, it would report an ImportError):
    the signal ends microgpt.py at once, one line and exit 130."""
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text(FAKE_NUMPY)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "microgpt.py"), "--steps", "1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert proc.returncode == 130 and proc.stderr == "\nmicrogpt: interrupted while starting; nothing was written\n"
