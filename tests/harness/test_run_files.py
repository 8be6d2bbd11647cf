"""harness/run_files.py: atomic writes (a full disk keeps the last good file, only regular files are
replaced), the --out folder's lock (held by a live run, taken over from a killed one, never followed through a
symbolic link), and folders made for a run and left empty removed again."""
import errno
import os
import signal
import stat
import subprocess
import sys

import pytest
from cli_helpers import (
    LONG,
    ROOT,
    TINY,
    child,
    fail_fsync_after,
    one_clean_line,
    run,
    snapshot,
    start,
    wait_for_checkpoint,
    wait_for_training,
)

from harness import run_files
from harness.checkpoints import load_checkpoint
from harness.errors import EXIT_BAD_INPUT, EXIT_IO, EXIT_OK, InputError
from harness.run_files import LOCK_NAME


@pytest.mark.slow
def test_a_second_run_into_a_held_folder_is_refused_and_a_dead_runs_lock_is_taken_over(tmp_path, corpus, capsys):
    out = str(tmp_path / "run")
    first = start(LONG + ["--corpus", corpus, "--out", out])
    try:
        wait_for_training(first)
        wait_for_checkpoint(os.path.join(out, "checkpoint.npz"))
        code, stdout, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", out])
        assert code == EXIT_BAD_INPUT and "is in use by another run" in err and f"pid {first.pid}" in err
        assert err.count("\n") == 1 and "step" not in stdout
        code, _, err = run(capsys, ["--resume", "--out", out])  # resuming a running run is refused too
        assert code == EXIT_BAD_INPUT and "is in use by another run" in err
    finally:
        first.send_signal(signal.SIGKILL)  # leaves its lock file behind, but the kernel drops the lock
        first.communicate()
    assert os.path.exists(os.path.join(out, run_files.LOCK_NAME))
    code, stdout, err = run(capsys, ["--resume", "--out", out, "--steps", str(load_checkpoint(
        os.path.join(out, "checkpoint.npz")).step + 3)])
    assert code == EXIT_OK, err
    assert f"took over {os.path.join(out, run_files.LOCK_NAME)} from an earlier run that is no longer running " \
           f"(pid {first.pid}" in stdout
    assert not os.path.exists(os.path.join(out, run_files.LOCK_NAME))  # released on exit

def test_the_lock_is_released_and_reused_in_process(tmp_path):
    folder = str(tmp_path / "x")
    with run_files.RunLock(folder) as lock:
        assert lock.notice is None
        with pytest.raises(InputError, match="in use by another run"):
            run_files.RunLock(folder).__enter__()
    with run_files.RunLock(folder) as again:  # released: free for the next run, with no notice
        assert again.notice is None


def test_a_full_disk_while_saving_a_checkpoint_keeps_the_last_good_one(tmp_path, corpus, capsys, monkeypatch):
    out = tmp_path / "run"
    fail_fsync_after(monkeypatch, 2)  # the step-10 history and checkpoint are saved, the step-20 history fails
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "40", "--eval-every", "10",
                                       "--out", str(out)])
    assert code == EXIT_IO and err.count("\n") == 1
    assert f"cannot write {str(out / 'history.npz')!r}: No space left on device" in err
    assert f"the last good checkpoint is {str(out / 'checkpoint.npz')!r} (step 10)" in err
    assert load_checkpoint(str(out / "checkpoint.npz")).step == 10
    assert not [p for p in os.listdir(out) if p.startswith(run_files.TEMP_PREFIX)]

def test_a_full_disk_while_writing_the_plot_is_an_io_error(tmp_path, corpus, capsys, monkeypatch):
    fail_fsync_after(monkeypatch, 3)  # history and checkpoint at step 5, metrics.json at the end; not loss.png
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "5", "--out", str(tmp_path / "run")])
    assert code == EXIT_IO and "cannot write" in err and "loss.png" in err and "No space left" in err

def test_the_lock_file_is_never_followed_through_a_symlink(tmp_path, corpus, capsys):
    out = tmp_path / "o"
    out.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("IMPORTANT DATA")
    os.symlink(victim, out / run_files.LOCK_NAME)
    (out / ".tmp-mynotes.txt").write_text("mine")
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "2", "--out", str(out)])
    assert code == EXIT_BAD_INPUT and "symbolic link" in err
    assert victim.read_text() == "IMPORTANT DATA" and (out / ".tmp-mynotes.txt").read_text() == "mine"

def test_a_stale_lock_is_left_alone_when_the_run_is_refused(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == EXIT_OK
    (out / run_files.LOCK_NAME).write_text("pid 999999 on elsewhere, started yesterday\n")  # as kill -9 leaves it
    before = snapshot(out)
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])
    assert code == EXIT_BAD_INPUT and "holds an earlier run's checkpoint.npz" in err
    assert snapshot(out) == before  # the refusal changed nothing


@pytest.mark.slow
def test_deleting_the_lock_file_does_not_free_a_held_folder(tmp_path, corpus):
    out = tmp_path / "run"
    first = child(LONG + ["--corpus", corpus, "--out", str(out)])
    try:
        wait_for_training(first)
        os.remove(out / LOCK_NAME)
        second = subprocess.run([sys.executable, "microgpt.py", *LONG, "--corpus", corpus, "--out", str(out)],
                                cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert second.returncode == EXIT_BAD_INPUT and "is in use by another run" in second.stderr
    finally:
        first.kill()
        first.wait()

def test_an_out_of_3000_folder_levels_is_one_line(tmp_path, corpus, capsys):
    deep = str(tmp_path) + "/a" * 3000
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "1", "--out", deep])
    assert code == EXIT_BAD_INPUT and "too many folder levels" in err
    one_clean_line(err)
    assert os.listdir(tmp_path) == ["names.txt"]


def test_atomic_write_replaces_only_regular_files(tmp_path):
    from harness.errors import WriteError
    from harness.run_files import atomic_write
    fifo, link = tmp_path / "fifo", tmp_path / "link"
    os.mkfifo(fifo)
    os.symlink(tmp_path / "elsewhere", link)
    for path in (fifo, link):
        with pytest.raises(WriteError, match="not a regular file"):
            atomic_write(str(path), lambda f: f.write(b"x"))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.path.islink(link)
    assert not (tmp_path / "elsewhere").exists() and sorted(os.listdir(tmp_path)) == ["fifo", "link"]
    atomic_write(str(tmp_path / "plain"), lambda f: f.write(b"x"))  # a new file, or a regular one, as before
    atomic_write(str(tmp_path / "plain"), lambda f: f.write(b"y"))
    assert (tmp_path / "plain").read_bytes() == b"y"


def test_a_checkpoint_this_process_cannot_read_says_so(tmp_path, corpus, capsys, monkeypatch):
    """Permission denied is not 'corrupt': the user must not be told to delete a good file. (Root reads any file,
    so the refusal is simulated where the file is opened.)"""
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(tmp_path / "r")])[0] == 0
    path = str(tmp_path / "r" / "checkpoint.npz")
    real_open = open

    def no_permission(file, *args, **kwargs):
        if os.fspath(file) == path:
            raise PermissionError(errno.EACCES, "Permission denied", path)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", no_permission)
    code, _, err = run(capsys, ["--sample-only", "--checkpoint", path])
    assert code == 2 and err == f"microgpt: error: cannot read checkpoint {path!r}: Permission denied\n"


def test_a_refused_run_removes_every_folder_it_made(tmp_path, corpus, capsys):
    (tmp_path / "held").mkdir()
    out = tmp_path / "a" / "b" / "c"
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out), "--prompt", "Q"])
    assert code == 2 and not (tmp_path / "a").exists()  # (refused before the folder: nothing made)
    with run_files.RunLock(str(out)) as lock:  # made for the lock, then refused: a/b/c all go again
        assert out.is_dir() and lock.created == [str(out), str(out.parent), str(out.parent.parent)]
    assert not (tmp_path / "a").exists() and (tmp_path / "held").exists()


def test_a_temp_file_fits_wherever_its_target_fits(tmp_path):
    name = "x" * 246 + ".html"  # 251 characters: a name the file system takes (255 at most)
    run_files.atomic_write(str(tmp_path / name), lambda f: f.write(b"<html></html>"))
    assert (tmp_path / name).read_bytes() == b"<html></html>" and os.listdir(tmp_path) == [name]


@pytest.mark.slow
def test_a_run_whose_out_was_moved_stops_at_its_next_save_with_one_line(tmp_path, corpus):
    """mv X X.old && mkdir X while a run writes X: a second run may take the new X, and the first writes
    nothing more there (it would mix two runs' files and print a resume command for the wrong one)."""
    out = str(tmp_path / "run")
    first = start(LONG + ["--corpus", corpus, "--out", out])
    try:
        wait_for_checkpoint(os.path.join(out, "checkpoint.npz"))
        os.rename(out, out + ".old")
        os.mkdir(out)
        _, err = first.communicate(timeout=60)
    finally:
        first.kill()
    assert first.returncode == EXIT_IO and "--out was moved or replaced while the run was writing it" in err
    one_clean_line(err)
    assert os.listdir(out) == []


def test_a_retargeted_symlink_leaves_the_other_folders_lock_alone(tmp_path):
    """--out L, L -> a; then L -> b and a second run holds b: the first notices before a save, and its exit
    removes only its own lock file, from the folder it holds."""
    a, b, link = tmp_path / "a", tmp_path / "b", tmp_path / "L"
    a.mkdir(), b.mkdir(), link.symlink_to(a)
    first = run_files.RunLock(str(link)).__enter__()
    first.claim()
    link.unlink(), link.symlink_to(b)
    with run_files.RunLock(str(link)) as second:
        second.claim()
        with pytest.raises(OSError, match="--out was moved or replaced while the run was writing it"):
            first.check_held()
        first.__exit__()
        assert (b / LOCK_NAME).exists() and not (a / LOCK_NAME).exists()
        second.check_held()


def test_a_hard_link_as_the_lock_file_is_replaced_not_written_through(tmp_path):
    """A lock file that is a hard link (cp -al of a folder with a leftover lock) is unlinked and made anew: the
    other name keeps its content."""
    folder, precious = tmp_path / "x", tmp_path / "precious.txt"
    folder.mkdir()
    precious.write_text("keep me\n")
    os.link(precious, folder / LOCK_NAME)
    with run_files.RunLock(str(folder)) as lock:
        lock.claim()
        assert (folder / LOCK_NAME).read_text().startswith("pid ")
    assert precious.read_text() == "keep me\n"
