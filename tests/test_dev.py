"""dev.py: the two-command setup, `dev.py run` reading paths from the folder the user is in, `dev.py pdb` on every
Python, and `dev.py lab` installing JupyterLab on first use."""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from cli_helpers import ROOT

import dev


def became(seen, command, environ=()):
    """What dev.py's os.execv would have become: noted, and then this stops (as exec would)."""
    seen.update(environ, command=command, cwd=os.getcwd())
    raise SystemExit(0)


def test_dev_py_runs_microgpt_in_the_users_folder(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(dev.os, "environ", dict(os.environ))  # (dev.main sets variables for the run it starts)
    monkeypatch.setattr(dev, "ensure_venv", lambda: sys.executable)
    monkeypatch.setattr(dev.os, "execv", lambda python, command: became(seen, command, dev.os.environ))
    monkeypatch.setattr(dev.sys, "argv", ["../dev.py", "run"])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        dev.main(["run", "--steps", "3"])
    assert shlex.split(seen["MICROGPT_LAUNCHER"])[1:] == ["../dev.py", "run"]
    assert seen["cwd"] == str(tmp_path) and seen["command"][1:] == [os.path.join(ROOT, "microgpt.py"), "--steps", "3"]


def test_dev_py_test_fast_leaves_out_the_slow_tests(monkeypatch):
    seen = {}
    monkeypatch.setattr(dev, "ensure_venv", lambda: sys.executable)
    monkeypatch.setattr(dev, "check_installed", lambda python, module, requirements: None)  # (no probe process)
    monkeypatch.setattr(dev.os, "execv", lambda python, command: became(seen, command))
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit):
        dev.main(["test", "--fast", "-x"])
    assert seen["command"][1:] == ["-m", "pytest", "-x", "-m", "not slow"] and seen["cwd"] == ROOT


@pytest.mark.parametrize("name, expected", [("python", ["x.py", "--a"]), ("pdb", ["-c", dev.PDB_MAIN, "--", "x.py", "--a"])])
def test_dev_py_python_and_pdb_run_in_the_users_folder(monkeypatch, tmp_path, name, expected):
    seen = {}
    monkeypatch.setattr(dev, "ensure_venv", lambda: sys.executable)
    monkeypatch.setattr(dev.os, "execv", lambda python, command: became(seen, command))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        dev.main([name, "x.py", "--a"])
    assert seen["command"] == [sys.executable, *expected] and seen["cwd"] == str(tmp_path)


def test_dev_py_lab_installs_its_own_file_and_opens_the_notebooks_folder(monkeypatch, tmp_path):
    seen, installed = {}, []
    monkeypatch.setattr(dev, "ensure_venv", lambda: sys.executable)
    monkeypatch.setattr(dev, "install", lambda python, files, stamp: installed.append((files, stamp)))
    monkeypatch.setattr(dev, "check_installed", lambda python, module, requirements: None)
    monkeypatch.setattr(dev.os, "geteuid", lambda: 1000, raising=False)
    monkeypatch.setattr(dev.os, "execv", lambda python, command: became(seen, command))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        dev.main(["lab", "--no-browser"])
    assert installed == [(((dev.REQUIREMENTS_LAB, []),), dev.STAMP_LAB)]
    assert seen["command"] == [sys.executable, "-m", "jupyterlab", "--no-browser"]
    assert seen["cwd"] == os.path.join(ROOT, "notebooks")


def test_dev_py_says_first_time_only_on_a_first_install(monkeypatch, tmp_path, capsys):
    """"(first time: a minute or two)" without a stamp; with a stamp of other files, that they changed."""
    monkeypatch.setattr(dev.subprocess, "run", lambda *args, **kwargs: subprocess.CompletedProcess(args, 0))
    requirements, stamp = tmp_path / "r.txt", str(tmp_path / "stamp")
    requirements.write_text("numpy\n")
    dev.install(sys.executable, ((str(requirements), []),), stamp)
    assert "installing r.txt into .venv (first time: a minute or two)" in capsys.readouterr().err
    dev.install(sys.executable, ((str(requirements), []),), stamp)
    assert capsys.readouterr().err == ""  # installed already: nothing to do
    requirements.write_text("numpy>=2\n")
    dev.install(sys.executable, ((str(requirements), []),), stamp)
    assert "installing r.txt into .venv (they changed since the last install)" in capsys.readouterr().err


def venv_ready():
    """dev.py's own environment exists and is up to date (so `dev.py run` starts at once, installing nothing)."""
    stamp = os.path.join(dev.VENV, ".requirements-sha256")
    return os.path.exists(dev.venv_python()) and os.path.exists(stamp) and \
        open(stamp, encoding="ascii").read().strip() == dev.requirements_hash()


@pytest.mark.slow
@pytest.mark.skipif(not venv_ready(), reason="needs dev.py's .venv (python3 dev.py test makes it)")
@pytest.mark.parametrize("where", ["notebooks", "elsewhere"])
def test_paths_are_read_from_where_you_are_and_the_printed_command_continues_the_run(tmp_path, where):
    """`python3 dev.py run` from notebooks/ or from anywhere else: --corpus and --out are read from there, and
    the resume command a Ctrl-C prints, pasted there, continues the run."""
    here = {"notebooks": os.path.join(ROOT, "notebooks"), "elsewhere": str(tmp_path)}[where]
    name = f"dev test {os.getpid()} o u't"  # (spaces and a quote: the command must quote them)
    corpus = os.path.join(here, name + ".txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("anna\nbob\ncarla\ndave\neve\nfrank\n")
    out = os.path.join(here, name)
    launcher = os.path.relpath(os.path.join(ROOT, "dev.py"), here)
    try:
        proc = subprocess.Popen([sys.executable, launcher, "run", "--engine", "numpy", "--steps", "100000",
                                 "--eval-every", "50", "--corpus", os.path.basename(corpus), "--out",
                                 os.path.basename(out)], cwd=here, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        for line in proc.stdout:
            if line.startswith("step"):
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        command = err.split("continue with: ", 1)[1].strip()
        assert os.path.exists(os.path.join(out, "checkpoint.npz")) and not os.path.exists(os.path.join(ROOT, name))
        step = int(re.search(r"interrupted at step (\d+)/", err).group(1))
        words = shlex.split(command)
        assert words[:3] == [sys.executable, launcher, "run"] and words[-2:] == ["--out", os.path.basename(out)]
        resumed = subprocess.run(words + ["--steps", str(step + 5)], cwd=here, capture_output=True, text=True,
                                 timeout=120)  # (the command as printed; --steps only makes it end soon)
        assert resumed.returncode == 0, resumed.stderr
        assert f"resuming from step {step} of {step + 5}" in resumed.stdout
    finally:
        shutil.rmtree(out, ignore_errors=True)
        os.remove(corpus)


def fresh_venv(monkeypatch, tmp_path, create):
    """dev.py's setup pointed at an empty folder, with venv's create() replaced."""
    monkeypatch.setattr(dev, "VENV", str(tmp_path / ".venv"))
    monkeypatch.setattr(dev.venv.EnvBuilder, "create", create)


def test_a_read_only_checkout_is_said_as_such_not_as_a_missing_python3_venv(monkeypatch, tmp_path, capsys):
    fresh_venv(monkeypatch, tmp_path, lambda self, path: pytest.fail("nothing may be created"))
    real = os.access
    monkeypatch.setattr(dev.os, "access", lambda path, mode: False if path == dev.ROOT else real(path, mode))
    with pytest.raises(SystemExit) as e:
        dev.ensure_venv()
    err = capsys.readouterr().err
    assert e.value.code == 2 and "is read-only for you" in err and "python3-venv" not in err


def test_a_permission_error_while_creating_names_it_and_leaves_no_half_made_venv(monkeypatch, tmp_path, capsys):
    def create(self, path):
        os.makedirs(path)
        raise PermissionError(13, "Permission denied")
    fresh_venv(monkeypatch, tmp_path, create)
    with pytest.raises(SystemExit):
        dev.ensure_venv()
    err = capsys.readouterr().err
    assert "Permission denied" in err and "python3-venv" not in err and not (tmp_path / ".venv").exists()


def test_ctrl_c_during_the_first_setup_removes_the_half_made_venv(monkeypatch, tmp_path, capsys):
    def create(self, path):
        os.makedirs(os.path.join(path, "bin"))
        raise KeyboardInterrupt
    fresh_venv(monkeypatch, tmp_path, create)
    with pytest.raises(SystemExit) as e:
        dev.ensure_venv()
    err = capsys.readouterr().err
    assert e.value.code == 130 and "Traceback" not in err and "the half-made folder was removed" in err
    assert not (tmp_path / ".venv").exists()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_dev_py_lab_installs_jupyterlab_on_first_use_and_serves_the_notebooks(tmp_path):
    """`python3 dev.py lab` in a fresh clone: JupyterLab is installed into .venv from requirements-lab.txt, the
    server starts on notebooks/, and a notebook comes back over HTTP. (The clone's .venv sees this Python's
    packages through a .pth file and holds dev.py's stamp, so requirements-lab.txt is the only install.)"""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", ROOT, str(clone)], check=True)
    subprocess.run([sys.executable, "-m", "venv", str(clone / ".venv")], check=True)
    python = str(clone / ".venv" / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(purelib, "project-packages.pth"), "w", encoding="utf-8") as f:
        f.write("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    with open(clone / ".venv" / ".requirements-sha256", "w", encoding="ascii") as f:
        f.write(dev.requirements_hash([str(clone / "requirements.txt"), str(clone / "requirements-nodeps.txt")]))
    port, token = free_port(), f"t{os.getpid()}"
    log = open(tmp_path / "lab.log", "w+", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(clone / "dev.py"), "lab", "--no-browser", "--ip=127.0.0.1",
                             f"--port={port}", f"--IdentityProvider.token={token}",
                             *(["--allow-root"] if os.geteuid() == 0 else [])], cwd=str(tmp_path),
                            stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "JUPYTER_PLATFORM_DIRS": "1",
                                                                       "HOME": str(tmp_path)})
    try:
        url = f"http://127.0.0.1:{port}/api/contents/01_autograd_build.ipynb?token={token}"
        deadline, notebook = time.monotonic() + 300, None
        while notebook is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    notebook = json.load(response)
            except OSError:
                time.sleep(1)
        log.seek(0)
        output = log.read()
        if notebook is None and "pip could not install requirements-lab.txt" in output:
            pytest.skip(f"JupyterLab could not be installed (offline?): {output[-500:]}")
        assert notebook is not None, output[-3000:]
        assert "dev.py: installing requirements-lab.txt into .venv (first time" in output
        assert notebook["type"] == "notebook" and notebook["content"]["cells"]
        assert os.path.exists(clone / ".venv" / ".requirements-lab-sha256")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        log.close()


@pytest.mark.parametrize("args, expected", [
    (["-c", "continue", "microgpt.py", "--steps", "3"], ["-c", "continue", "--", "microgpt.py", "--steps", "3"]),
    (["--command", "b 10", "-c", "c", "x.py"], ["--command", "b 10", "-c", "c", "--", "x.py"]),
    (["-m", "microgpt", "--steps", "3"], ["-m", "microgpt", "--steps", "3"]),
])
def test_dev_py_pdb_passes_pdbs_own_options(args, expected):
    """pdb's -c and -m are pdb's; `--` goes before the script, whose flags then stay its own."""
    assert dev.command_for("pdb", "py", args) == ["py", "-c", dev.PDB_MAIN, *expected]


def test_dev_py_lab_as_root_says_it_needs_allow_root(monkeypatch, capsys):
    """JupyterLab refuses root without --allow-root: dev.py says so before it installs anything."""
    monkeypatch.setattr(dev, "ensure_venv", lambda: sys.executable)
    monkeypatch.setattr(dev, "install", lambda *args: pytest.fail("nothing is installed for a refused command"))
    monkeypatch.setattr(dev.os, "geteuid", lambda: 0, raising=False)
    with pytest.raises(SystemExit) as e:
        dev.main(["lab"])
    assert e.value.code == 2 and capsys.readouterr().err == (
        "dev.py: error: JupyterLab runs as root only when told to: python3 dev.py lab --allow-root (or run it as "
        "another user)\n")


def test_a_missing_package_is_named_with_the_command_that_installs_it(monkeypatch, capsys):
    """The stamp matches but pytest was uninstalled since: one line with the pip command, not 'No module named'."""
    monkeypatch.setattr(dev, "ensure_venv", lambda: "/venv/bin/python")
    monkeypatch.setattr(dev.subprocess, "run", lambda command: subprocess.CompletedProcess(command, 1))
    monkeypatch.setattr(dev.os, "execv", lambda *args: pytest.fail("a command without its package is not run"))
    with pytest.raises(SystemExit) as e:
        dev.main(["test"])
    assert e.value.code == 2 and capsys.readouterr().err == (
        "dev.py: error: the package 'pytest' is not installed in .venv; install it with: /venv/bin/python -m pip "
        f"install -r {dev.REQUIREMENTS}\n")


@pytest.mark.slow
def test_the_package_probe_runs_in_the_venvs_python(capsys):
    dev.check_installed(sys.executable, "pytest", dev.REQUIREMENTS)  # there: nothing said
    with pytest.raises(SystemExit):
        dev.check_installed(sys.executable, "no_such_module_anywhere", dev.REQUIREMENTS)
    assert "'no_such_module_anywhere' is not installed" in capsys.readouterr().err


def test_a_python_in_venv_that_cannot_run_is_one_line(monkeypatch, tmp_path, capsys):
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("not a program")  # (mode 644: not executable)
    monkeypatch.setattr(dev, "VENV", str(tmp_path / ".venv"))
    with pytest.raises(SystemExit) as e:
        dev.ensure_venv()
    assert e.value.code == 2 and capsys.readouterr().err == (
        f"dev.py: error: {tmp_path}/.venv/bin/python is not executable (a damaged .venv?); delete {tmp_path}/.venv "
        "and run again\n")
    monkeypatch.setattr(dev, "ensure_venv", lambda: "/venv/bin/python")
    monkeypatch.setattr(dev.os, "execv", lambda *args: (_ for _ in ()).throw(PermissionError(13, "Permission denied")))
    with pytest.raises(SystemExit) as e:
        dev.main(["python", "x.py"])
    assert e.value.code == 2 and capsys.readouterr().err.startswith(
        "dev.py: error: cannot run /venv/bin/python (Permission denied); delete ")


def test_a_missing_requirements_file_and_a_stamp_that_is_not_ascii_are_no_traceback(monkeypatch, tmp_path, capsys):
    ran = []
    monkeypatch.setattr(dev.subprocess, "run", lambda *args, **kwargs: ran.append(args) or
                        subprocess.CompletedProcess(args, 0))
    with pytest.raises(SystemExit) as e:
        dev.install(sys.executable, ((str(tmp_path / "requirements-nodeps.txt"), ["--no-deps"]),), "stamp")
    assert e.value.code == 2 and capsys.readouterr().err == (
        f"dev.py: error: cannot read {tmp_path}/requirements-nodeps.txt (No such file or directory); it comes with "
        "the project: restore it (git checkout -- requirements-nodeps.txt) and run again\n")
    requirements, stamp = tmp_path / "r.txt", tmp_path / "stamp"
    requirements.write_text("numpy\n")
    stamp.write_bytes("ハッシュ\n".encode())  # (not what dev.py writes: reinstalled, not a UnicodeDecodeError)
    dev.install(sys.executable, ((str(requirements), []),), str(stamp))
    assert len(ran) == 1 and "they changed since the last install" in capsys.readouterr().err
    assert stamp.read_text(encoding="ascii").strip() == dev.requirements_hash([str(requirements)])
