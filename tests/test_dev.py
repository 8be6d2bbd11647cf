"""dev.py: the two-command setup, and `dev.py run` reading paths from the folder the user is in."""
import os
import shlex
import sys

import pytest
from cli_helpers import ROOT

import dev


@pytest.mark.slow
def test_dev_py_runs_microgpt_in_the_users_folder(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(dev.os, "environ", dict(os.environ))  # (dev.main sets variables for the run it starts)
    monkeypatch.setattr(dev, "ensure_venv", lambda: sys.executable)
    monkeypatch.setattr(dev.os, "execv", lambda python, command: seen.update(dev.os.environ, command=command,
                                                                            cwd=os.getcwd()))
    monkeypatch.setattr(dev.sys, "argv", ["../dev.py", "run"])
    monkeypatch.chdir(tmp_path)
    dev.main(["run", "--steps", "3"])
    assert shlex.split(seen["MICROGPT_LAUNCHER"])[1:] == ["../dev.py", "run"]
    assert seen["cwd"] == str(tmp_path) and seen["command"][1:] == [os.path.join(ROOT, "microgpt.py"), "--steps", "3"]
