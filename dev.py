"""dev.py -- set up and run the project in one command; needs only Python >= 3.10, venv.

    python3 dev.py run [flags]       train and sample: python microgpt.py [flags]
    python3 dev.py python FILE ...   a script with the project's Python: python FILE ...
    python3 dev.py pdb FILE [flags]  in the debugger: python -m pdb -- FILE [flags]
    python3 dev.py test [args]       python -m pytest [args]; --fast: not the slow ones
    python3 dev.py lint              ruff check .
    python3 dev.py notebooks [NN]    rebuild and run the notebooks (all, or *NN*)
    python3 dev.py lab [args]        JupyterLab on notebooks/ (installed on first use)

The first call creates .venv and installs requirements.txt into it, then
requirements-nodeps.txt with --no-deps (packages used only for their data files); later
calls reinstall only when either file changes (their hash is kept in .venv). `lab`
installs requirements-lab.txt the same way, on its first use only: the runtime stays
light. Commands run with that Python, in this folder (`run`, `python`, `pdb`: in yours,
which their paths are read from). A broken .venv, a missing requirements file or
package is one line that says what to do (README: "Setting up by hand" does it all).
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
REQUIREMENTS_LAB = os.path.join(ROOT, "requirements-lab.txt")  # `lab` only
STAMP = os.path.join(VENV, ".requirements-sha256")
STAMP_LAB = os.path.join(VENV, ".requirements-lab-sha256")
COMMANDS = {"run": [os.path.join(ROOT, "microgpt.py")], "python": [], "pdb": [],  # (command_for)
            "test": ["-m", "pytest"], "lint": ["-m", "ruff", "check", "."],
            "notebooks": ["notebooks/build.py"], "lab": ["-m", "jupyterlab"]}
IN_USERS_FOLDER = ("run", "python", "pdb")  # their paths are read from where the user is
NEEDS = {"test": ("pytest", REQUIREMENTS), "lint": ("ruff", REQUIREMENTS),  # (module, installed by)
         "notebooks": ("nbformat", REQUIREMENTS), "lab": ("jupyterlab", REQUIREMENTS_LAB)}
# pdb as `python -m pdb` starts it. Python 3.13.0's pdb cannot set `b module.function`
# on a function with default arguments (it takes the compiled `def`'s first constant for
# its code; fixed in 3.13.1): there, its lookup is given the function's code first.
PDB_MAIN = """import pdb, sys, types
def fix_find_function(pdb, find, code_type):
    def compile_code_first(*args, **kwargs):  # (pdb runs the script in this module's globals:
        code = compile(*args, **kwargs)       # everything here is bound in a closure)
        functions = tuple(c for c in code.co_consts if isinstance(c, code_type))
        return code.replace(co_consts=functions + code.co_consts)
    def find_function(funcname, filename):
        pdb.compile = compile_code_first
        try:
            return find(funcname, filename)
        finally:
            del pdb.compile
    return find_function
if sys.version_info[:3] == (3, 13, 0):
    pdb.find_function = fix_find_function(pdb, pdb.find_function, types.CodeType)
sys.argv[0] = pdb.__file__
pdb.main()
"""


def fail(message, code=2):
    print(f"dev.py: error: {message}", file=sys.stderr)
    sys.exit(code)


def venv_python():
    windows = os.name == "nt"
    return os.path.join(VENV, *(("Scripts", "python.exe") if windows else ("bin", "python")))


def requirements_hash(paths=(REQUIREMENTS, REQUIREMENTS_NODEPS)):
    h = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        except OSError as e:
            fail(f"cannot read {path} ({e.strerror or e}); it comes with the project: restore it "
                 f"(git checkout -- {os.path.basename(path)}) and run again")
    return h.hexdigest()


def ensure_venv():
    """Create .venv and install the requirements, unless done for these files before."""
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
    if not os.access(python, os.X_OK):
        fail(f"{python} is not executable (a damaged .venv?); delete {VENV} and run again")
    install(python, ((REQUIREMENTS, []), (REQUIREMENTS_NODEPS, ["--no-deps"])), STAMP)
    return python


def install(python, files, stamp):
    """pip install each (path, flags) into .venv, unless the stamp holds their hash."""
    wanted = requirements_hash([path for path, _ in files])
    try:
        with open(stamp, "rb") as f:  # (bytes: a stamp that is not ASCII is simply not this hash)
            if f.read().strip() == wanted.encode():
                return
    except OSError:
        first = True  # no stamp yet: a first install
    else:
        first = False  # installed before, from files that have changed since
    names = " and ".join(os.path.basename(path) for path, _ in files)
    why = "first time: a minute or two" if first else "they changed since the last install"
    print(f"dev.py: installing {names} into .venv ({why}) ...", file=sys.stderr, flush=True)
    for path, flags in files:
        pip = [python, "-m", "pip", "install", "--disable-pip-version-check", "-q"]
        try:
            result = subprocess.run([*pip, *flags, "-r", path], cwd=ROOT)
        except KeyboardInterrupt:  # (pip got the Ctrl-C too; the stamp is not written)
            fail("interrupted while installing the requirements; the next command installs them "
                 "again", 130)
        if result.returncode != 0:
            fail(f"pip could not install {os.path.basename(path)} (see its message above); fix "
                 "that and run again", result.returncode)
    with open(stamp, "w", encoding="ascii") as f:
        f.write(wanted + "\n")


def check_installed(python, module, requirements):
    """One line naming the missing package and the command that installs it, when the
    stamp says the requirements are in but `module` is not (a pip uninstall since)."""
    probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec(sys.argv[1]) is None)"
    if subprocess.run([python, "-c", probe, module]).returncode == 1:
        fail(f"the package {module!r} is not installed in .venv; install it with: "
             f"{shlex.join([python, '-m', 'pip', 'install', '-r', requirements])}")


def command_for(name, python, args):
    """The command line `dev.py NAME ARGS` runs, with this Python."""
    if name == "pdb":  # its options (-c CMD, -m MODULE), then `--` (3.13.0's pdb needs it)
        i = 0
        while i < len(args) and args[i] in ("-c", "--command"):
            i += 2
        return [python, "-c", PDB_MAIN, *args[:i],
                *([] if args[i:i + 1] == ["-m"] else ["--"]), *args[i:]]
    return [python, *COMMANDS[name], *args]


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
    if argv[0] == "lab" and getattr(os, "geteuid", lambda: 1)() == 0 and "--allow-root" not in args:
        fail("JupyterLab runs as root only when told to: python3 dev.py lab --allow-root (or run "
             "it as another user)")
    if argv[0] == "lab":
        install(python, ((REQUIREMENTS_LAB, []),), STAMP_LAB)
    if argv[0] in NEEDS:
        check_installed(python, *NEEDS[argv[0]])
    command = command_for(argv[0], python, args)
    if argv[0] == "run":  # the resume command a stopped run prints names this launcher
        os.environ["MICROGPT_LAUNCHER"] = shlex.join([sys.executable, sys.argv[0], "run"])
    if argv[0] not in IN_USERS_FOLDER:  # pytest, ruff, the notebooks' build and JupyterLab read
        os.chdir(os.path.join(ROOT, "notebooks") if argv[0] == "lab" else ROOT)  # the project's
    try:
        if os.name == "posix":  # become the command: its exit code, Ctrl-C and output are its own
            os.execv(python, command)
        return subprocess.call(command)
    except KeyboardInterrupt:  # the command got the Ctrl-C too, and reports it itself
        return 130
    except OSError as e:
        fail(f"cannot run {python} ({e.strerror or e}); delete {VENV} and run again")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
