"""dev.py -- set up and run the project with one command; needs only Python >= 3.10 and venv.

    python3 dev.py run [flags]     train and sample: python microgpt.py [flags] (see --help)
    python3 dev.py test [args]     the tests: python -m pytest [args]; --fast leaves out slow ones
    python3 dev.py lint            ruff check .
    python3 dev.py notebooks [NN]  rebuild and execute the notebooks (all, or those named *NN*)

The first call creates .venv and installs requirements.txt into it, then requirements-nodeps.txt
with --no-deps (packages used only for their data files); later calls reinstall only when either
file changes (their hash is kept in .venv). Commands run with that Python, in this folder (`run`:
in yours), so nothing is installed elsewhere. To manage your own environment, install both files
and run the commands on the right directly (README: "Setting up by hand").
"""
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import venv

ROOT = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(ROOT, ".venv")
REQUIREMENTS = os.path.join(ROOT, "requirements.txt")
REQUIREMENTS_NODEPS = os.path.join(ROOT, "requirements-nodeps.txt")  # installed with --no-deps
STAMP = os.path.join(VENV, ".requirements-sha256")
COMMANDS = {"run": ["microgpt.py"], "test": ["-m", "pytest"], "lint": ["-m", "ruff", "check", "."],
            "notebooks": ["notebooks/build.py"]}


def fail(message, code=2):
    print(f"dev.py: error: {message}", file=sys.stderr)
    sys.exit(code)


def venv_python():
    windows = os.name == "nt"
    return os.path.join(VENV, *(("Scripts", "python.exe") if windows else ("bin", "python")))


def requirements_hash():
    h = hashlib.sha256()
    for path in (REQUIREMENTS, REQUIREMENTS_NODEPS):
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()


def ensure_venv():
    """Create .venv and install the requirements into it, unless done for these files already."""
    python = venv_python()
    if not os.path.exists(python):
        if os.path.exists(VENV):
            fail(f"{VENV} exists but has no Python in it (an interrupted setup?); delete that "
                 "folder and run again")
        if not os.access(ROOT, os.W_OK):
            fail(f"cannot create .venv in {ROOT}: this folder is read-only for you; copy the "
                 "project to a folder you can write to, or set it up by hand (README: \"Setting "
                 "up by hand\")")
        print(f"dev.py: creating a virtual environment in {VENV} ...", file=sys.stderr, flush=True)
        try:
            venv.EnvBuilder(with_pip=True).create(VENV)
        except KeyboardInterrupt:
            shutil.rmtree(VENV, ignore_errors=True)
            fail("interrupted while creating .venv; the half-made folder was removed: run the "
                 "command again to set it up", 130)
        except subprocess.CalledProcessError as e:  # ensurepip missing: Debian's split venv
            fail(f"could not install pip into the virtual environment ({e}). On Debian/Ubuntu the "
                 "venv module is a separate package: sudo apt install python3-venv; then delete "
                 ".venv and run again")
        except OSError as e:
            shutil.rmtree(VENV, ignore_errors=True)
            fail(f"could not create the virtual environment {VENV}: {e.strerror or e}")
    wanted = requirements_hash()
    try:
        with open(STAMP, encoding="ascii") as f:
            if f.read().strip() == wanted:
                return python
    except OSError:
        pass  # no stamp yet: install
    print("dev.py: installing requirements.txt and requirements-nodeps.txt into .venv "
          "(first run: a minute or two) ...", file=sys.stderr, flush=True)
    for path, flags in ((REQUIREMENTS, []), (REQUIREMENTS_NODEPS, ["--no-deps"])):
        pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        try:
            result = subprocess.run([*pip, *flags, "-r", path], cwd=ROOT)
        except KeyboardInterrupt:  # (pip got the Ctrl-C too; the stamp is not written)
            fail("interrupted while installing the requirements; the next command installs them "
                 "again", 130)
        if result.returncode != 0:
            fail(f"pip could not install {os.path.basename(path)} (see its message above); fix "
                 "that and run again", result.returncode)
    with open(STAMP, "w", encoding="ascii") as f:
        f.write(wanted + "\n")
    return python


def main(argv):
    if sys.version_info < (3, 10):  # noqa: UP036  (must run, and say so, on an older Python)
        fail(f"this project needs Python >= 3.10; this is {sys.version.split()[0]}")
    if not argv or argv[0] not in COMMANDS:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    python = ensure_venv()
    args = argv[1:]
    if argv[0] == "test" and "--fast" in args:  # the quick subset: the tests not marked slow
        args = [a for a in args if a != "--fast"] + ["-m", "not slow"]
    command = [python, *COMMANDS[argv[0]], *args]
    if argv[0] == "run":  # in the user's folder, which --corpus and --out are relative to; the
        # resume command a stopped run prints names this launcher
        command[1] = os.path.join(ROOT, command[1])
        os.environ["MICROGPT_LAUNCHER"] = shlex.join([sys.executable, sys.argv[0], "run"])
    else:
        os.chdir(ROOT)  # pytest, ruff and the notebooks' build read the project's own configuration
    if os.name == "posix":  # become the command: its exit code, Ctrl-C and output are its own
        os.execv(python, command)
    try:
        return subprocess.call(command)
    except KeyboardInterrupt:  # the command got the Ctrl-C too, and reports it itself
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
