"""harness -- the machinery around chapter 22's script (microgpt.py) and its model's
layer, making a run safe and pleasant: the shell each program runs in (shell.py), the
command line (cli.py), its files and messages; each module's docstring says its part.
quiet_startup and leave live here: a program calls them before (and after) all else.
"""
import _signal  # (the C module: `import signal` first imports enum, time for a signal to come in)
import os
import sys

_late = {"prog": "microgpt", "message": "interrupted while starting; nothing was written"}


def _quiet_exit(signum, frame):
    os.write(2, f"\n{_late['prog']}: {_late['message']}\n".encode("utf-8", "backslashreplace"))
    os._exit(130)


# the import name of each package a program needs that pip knows by another name
PIP_NAMES = {"fontTools": "fonttools", "matplotlib_fontja": "matplotlib-fontja"}


def name_missing_packages(prog, how=None):
    """Run by a Python without this project's packages, the program says in one line
    which is missing and how to run it with them (exit 2), not an ImportError's
    traceback. how: that command, after dev.py's path."""
    previous = sys.excepthook

    def hook(kind, error, tb):
        name = (getattr(error, "name", None) or "").split(".")[0]
        if not issubclass(kind, ModuleNotFoundError) or name in ("", *sys.builtin_module_names):
            return previous(kind, error, tb)
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        dev = os.path.join(root, "dev.py")
        python = os.path.join(root, ".venv", "bin", "python")
        run = f"python3 {dev} " + (how or f"run --help (it installs them into .venv), then "
                                          f"{python} {sys.argv[0]}")
        os.write(2, (f"{prog}: error: the package {PIP_NAMES.get(name, name)!r} is not installed "
                     f"in this Python ({sys.executable}); run it with the project's packages: "
                     f"{run}; or install them here: pip install -r {root}/requirements.txt\n"
                     ).encode("utf-8", "replace"))
        os._exit(2)

    sys.excepthook = hook


def quiet_startup(prog, how=None):
    """Until the shell takes over, a signal ends the program in one line (exit 130),
    and so does a missing package (exit 2); nohup's and a debugger's signals stay."""
    name_missing_packages(prog, how)
    _late["prog"] = prog
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        sig = getattr(_signal, name, None)
        handler = sig and _signal.getsignal(sig)
        if sig is None or handler == _signal.SIG_IGN or name == "SIGINT" and (
                sys.gettrace() or handler not in (_signal.default_int_handler, _signal.SIG_DFL)):
            continue  # (a debugger's SIGINT handler or trace function: Ctrl-C is the debugger's)
        _signal.signal(sig, _quiet_exit)


def leave(code):
    """End the program with `code` once its output is flushed, without the teardown: a
    signal there would kill the process (exit 143), every file written. Under a debugger
    (bdb) the program ends the usual way, so the debugger keeps it."""
    if "bdb" in sys.modules:
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    os._exit(code)
