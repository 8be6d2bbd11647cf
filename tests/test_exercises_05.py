"""Notebook 05's build checks (Module.__setattr__, no_grad) and exercise checks (state_dict,
sgd_step): each says True on a right answer, False on a wrong one and None while unanswered.

The checks take the notebook's own classes (Tensor, Parameter, Module): they are taken from the
notebook's source, so these tests judge the classes the learner builds on.
"""
import sys
from contextlib import contextmanager
from pathlib import Path

NB = Path(__file__).resolve().parent.parent / "notebooks"
sys.path.insert(0, str(NB))
import exercises  # noqa: E402
from build import parse_cells  # noqa: E402


def notebook_classes():
    """Tensor, Parameter and Module as notebook 05 defines them (the cells that define them run)."""
    namespace = {"contextmanager": contextmanager}
    for kind, code in parse_cells((NB / "src" / "05_pytorch_parameter_module.py").read_text()):
        if kind == "code" and code.startswith(("class Tensor", "class Parameter")):
            exec(code, namespace)
    return namespace["Tensor"], namespace["Parameter"], namespace["Module"]


Tensor, Parameter, Module = notebook_classes()


def stub(*args):
    raise NotImplementedError


# -- build 1: Module.__setattr__


def module_setattr(self, name, value):
    if isinstance(value, Parameter):
        self._parameters[name] = value
    elif isinstance(value, Module):
        self._modules[name] = value
    object.__setattr__(self, name, value)


def test_setattr():
    assert exercises.check_05_setattr(module_setattr, Module, Parameter, Tensor) is True
    assert exercises.check_05_setattr(stub, Module, Parameter, Tensor) is None


def test_setattr_wrong_answers(capsys):
    def registers_only(self, name, value):  # the attribute itself is lost: model.w raises
        if isinstance(value, Parameter):
            self._parameters[name] = value

    def every_tensor(self, name, value):  # a plain tensor registered as a parameter
        if isinstance(value, Tensor):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def no_children(self, name, value):  # child modules not registered
        if isinstance(value, Parameter):
            self._parameters[name] = value
        object.__setattr__(self, name, value)

    for wrong in (registers_only, every_tensor, no_children):
        assert exercises.check_05_setattr(wrong, Module, Parameter, Tensor) is False, wrong
    assert "一致しない点があります" in capsys.readouterr().out


# -- build 2: no_grad


@contextmanager
def no_grad():
    before, Tensor.grad_enabled = Tensor.grad_enabled, False
    try:
        yield
    finally:
        Tensor.grad_enabled = before


class NoGrad:  # the same as a class with __enter__ / __exit__
    def __enter__(self):
        self.before, Tensor.grad_enabled = Tensor.grad_enabled, False

    def __exit__(self, *exc):
        Tensor.grad_enabled = self.before


def test_no_grad():
    assert exercises.check_05_no_grad(no_grad, Tensor) is True
    assert exercises.check_05_no_grad(NoGrad, Tensor) is True
    assert exercises.check_05_no_grad(stub, Tensor) is None
    assert Tensor.grad_enabled is True


def test_no_grad_wrong_answers():
    @contextmanager
    def back_to_true():  # nested: the outer block is switched on too early
        Tensor.grad_enabled = False
        try:
            yield
        finally:
            Tensor.grad_enabled = True

    @contextmanager
    def no_finally():  # an exception inside leaves recording off
        before, Tensor.grad_enabled = Tensor.grad_enabled, False
        yield
        Tensor.grad_enabled = before

    @contextmanager
    def does_nothing():
        yield

    for wrong in (back_to_true, no_finally, does_nothing):
        assert exercises.check_05_no_grad(wrong, Tensor) is False, wrong
    assert Tensor.grad_enabled is True


# -- 05-1: state_dict


def state_dict(module, prefix=""):
    out = {prefix + name: p.data for name, p in module._parameters.items()}
    for name, child in module._modules.items():
        out.update(state_dict(child, prefix + name + "."))
    return out


def test_state_dict():
    assert exercises.check_05_state_dict(state_dict, Module, Parameter, Tensor) is True
    assert exercises.check_05_state_dict(stub, Module, Parameter, Tensor) is None


def test_state_dict_wrong_answers():
    def own_only(module):
        return {name: p.data for name, p in module._parameters.items()}

    def no_dots(module, prefix=""):
        out = {prefix + name: p.data for name, p in module._parameters.items()}
        for name, child in module._modules.items():
            out.update(no_dots(child, prefix + name))
        return out

    def one_level(module):
        out = own_only(module)
        for name, child in module._modules.items():
            out.update({f"{name}.{k}": v for k, v in own_only(child).items()})
        return out

    for wrong in (own_only, no_dots, one_level):
        assert exercises.check_05_state_dict(wrong, Module, Parameter, Tensor) is False, wrong


# -- 05-2: sgd_step


def sgd_step(params, lr):
    for p in params:
        if p.requires_grad and p.grad is not None:
            p.data -= lr * p.grad


def test_sgd_step():
    assert exercises.check_05_sgd_step(sgd_step, Parameter) is True
    assert exercises.check_05_sgd_step(stub, Parameter) is None


def test_sgd_step_wrong_answers():
    def grad_only(params, lr):  # a frozen parameter with a stale grad is updated
        for p in params:
            if p.grad is not None:
                p.data -= lr * p.grad

    def plus(params, lr):
        for p in params:
            if p.requires_grad and p.grad is not None:
                p.data += lr * p.grad

    assert exercises.check_05_sgd_step(grad_only, Parameter) is False
    assert exercises.check_05_sgd_step(plus, Parameter) is False
