"""PyTorch facts the notebooks state, checked against PyTorch itself (2.x) where torch is installed.

The notebooks never import torch: it is not a dependency of this project, and these tests are skipped when it is
missing (as in CI). To run them, install a CPU build of torch next to the test requirements, e.g.

    python3 -m venv /tmp/torchvenv && /tmp/torchvenv/bin/pip install torch pytest nbformat numpy
    /tmp/torchvenv/bin/python -m pytest tests/test_torch_facts.py

Each test names the notebook section whose prose it backs. Where a notebook reproduces what the lecture's own code
prints (notebook 12 §1), the test runs that code under torch and compares with the committed notebook's output.
"""
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

NB_DIR = Path(__file__).resolve().parent.parent / "notebooks"


def stream_text(notebook, marker):
    """The printed text of the first code cell of a committed notebook whose output contains marker."""
    nbformat = pytest.importorskip("nbformat")
    nb = nbformat.read(NB_DIR / notebook, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            text = "".join(o.text for o in cell.outputs if o.output_type == "stream")
            if marker in text:
                return text
    raise AssertionError(f"no output with {marker!r} in {notebook}")


# ---------------------------------------------------------------- 02 §4: a second backward()

@pytest.mark.parametrize("expr, fails", [
    ("2*b", True), ("b/2", True), ("b+2*b", True), ("b*b", True), ("b.tanh()", True),  # nodes that save tensors
    ("b+b", False), ("b+1", False), ("b-3", False), ("-b", False),                      # nodes that save none
])
def test_second_backward_fails_exactly_when_a_node_saved_tensors(expr, fails):
    b = torch.tensor(3.0, requires_grad=True)
    y = eval(expr, {"b": b})
    y.backward()
    first = b.grad.item()
    if fails:
        with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
            y.backward()
    else:
        y.backward()
        assert b.grad.item() == 2 * first  # accumulated into the leaf, as Value does


def test_retain_graph_makes_the_second_backward_accumulate():
    a = torch.tensor(3.0, requires_grad=True)
    y = a * a + 2 * a
    y.backward(retain_graph=True)
    y.backward()
    assert a.grad.item() == 16.0  # notebook 02 §4: 8, then 16


# ------------------------------------ 11 §1-§2, 12 §1: the lecture's code, as it really prints

def test_the_l2_normalize_script_prints_mean_1_and_std_0():
    torch.manual_seed(0)
    normalized = F.normalize(torch.randn(32, 768), p=2, dim=-1, eps=1e-12)
    assert f"{normalized.norm(dim=-1).mean():.6f}" == "1.000000"
    assert f"{normalized.norm(dim=-1).std():.6f}" == "0.000000"
    assert 0 < normalized.norm(dim=-1).std().item() < 1e-6  # not 0: float32 rounding, hidden by 6 decimals


def lecture_fp16_lines():
    """The print lines of the lecture's 03_fp16_instability_demo.py up to the 'safe' line, under this torch."""
    very_small = torch.finfo(torch.float16).tiny / 1024
    small_fp16 = torch.full((3,), very_small, dtype=torch.float32).half()
    zero_fp16 = torch.zeros(3, dtype=torch.float16)
    return [f"入力 (float16): {small_fp16}",
            f"ノルム: {small_fp16.norm()}",
            f"Unsafe (epsなし): {small_fp16 / small_fp16.norm()}",
            f"ゼロ入力 (float16): {zero_fp16}, ノルム: {zero_fp16.norm()}",
            f"ゼロをepsなしで割る: {zero_fp16 / zero_fp16.norm()}"], small_fp16


def test_the_fp16_script_prints_what_notebook_12_reproduces():
    lines, _ = lecture_fp16_lines()
    printed = stream_text("12_lecture3_fp16_retraction.ipynb", "講義のスクリプトが PyTorch 2.x で表示するもの")
    block = printed.split("---\n", 1)[1].split("\n--- このあと", 1)[0].splitlines()
    assert block == lines


def test_the_fp16_scripts_safe_line_raises_index_error_and_dim_minus_1_works():
    _, small_fp16 = lecture_fp16_lines()
    with pytest.raises(IndexError):
        F.normalize(small_fp16.float(), eps=1e-12)  # the lecture's line: dim=1 by default, a 1-D tensor has only 0
    safe = F.normalize(small_fp16.float(), dim=-1, eps=1e-12).half()
    assert str(safe) == "tensor([0.5771, 0.5771, 0.5771], dtype=torch.float16)"
    assert str(small_fp16.norm()) == "tensor(1.1921e-07, dtype=torch.float16)"


def test_tensors_print_4_digits_after_the_decimal_point_not_4_significant_digits():
    assert str(torch.tensor([123.456789])) == "tensor([123.4568])"
    assert str(torch.tensor([0.5, 0.25])) == "tensor([0.5000, 0.2500])"
    assert str(torch.tensor([5.9605e-08, 1.0], dtype=torch.float16)).startswith("tensor([5.9605e-08, 1.0000e+00]")


def test_added_eps_gradient_is_32_5_and_the_clamp_gives_0():
    x = torch.tensor([1e-7, 1e-7, 1e-7], requires_grad=True)
    (x / (x.norm() + 1e-12)).sum().backward()
    assert str(x.grad) == "tensor([32.5000, 32.5000, 32.5000])"
    x2 = torch.tensor([1e-7, 1e-7, 1e-7], requires_grad=True)
    F.normalize(x2, dim=-1, eps=1e-12).sum().backward()
    assert torch.all(x2.grad.abs() < 1e-3 * 32.5)  # F.normalize clamps: (close to) no gradient, not 32.5


# ---------------------------------------------------------------- 03 発展: LayerNorm's gain and bias, RMSNorm's gain

def test_layernorm_has_a_gain_of_ones_and_a_bias_of_zeros_and_divides_by_the_std():
    ln = nn.LayerNorm(4)
    assert torch.equal(ln.weight, torch.ones(4)) and torch.equal(ln.bias, torch.zeros(4))
    assert ln.weight.requires_grad and ln.bias.requires_grad
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [101.0, 102.0, 103.0, 104.0]], dtype=torch.float64)
    want = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-5)
    assert torch.allclose(ln.double()(x), want)
    assert torch.allclose(ln.double()(x)[0], ln.double()(x)[1])  # shift invariant (03 発展's prediction)


def test_rmsnorm_has_a_gain_and_no_bias():
    norm = nn.RMSNorm(4)
    assert [name for name, _ in norm.named_parameters()] == ["weight"]


# ---------------------------------------------------------------- 05-07: Parameter, Module, Linear, init

def test_requires_grad_defaults():
    assert torch.rand(3).requires_grad is False
    assert torch.tensor([1.0]).requires_grad is False
    assert nn.Parameter(torch.rand(3)).requires_grad is True


def test_forward_records_the_graph_but_skips_the_hooks():
    model = nn.Linear(2, 1)
    calls = []
    model.register_forward_hook(lambda module, inp, out: calls.append(1))
    x = torch.ones(1, 2)
    model(x)
    assert calls == [1]
    out = model.forward(x)
    assert calls == [1] and out.grad_fn is not None  # no hook, but recorded for backward
    out.sum().backward()
    assert model.weight.grad is not None


def test_nested_modules_names_train_eval_and_to():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = nn.Linear(2, 2, bias=False)
            self.mlp = nn.Linear(2, 2, bias=False)
            self.drop = nn.Dropout(0.1)

    block = Block()
    assert [name for name, _ in block.named_parameters()] == ["attn.weight", "mlp.weight"]
    block.eval()
    assert not block.training and not block.attn.training and not block.drop.training
    assert block.to(torch.float64) is block and block.attn.weight.dtype == torch.float64  # modules: in place
    t = torch.ones(2)
    t64 = t.to(torch.float64)
    assert t64 is not t and t.dtype == torch.float32  # tensors: a new tensor, the original unchanged


def test_linear_default_init_is_uniform_within_1_over_sqrt_fan_in_and_kaiming_relu_within_sqrt_6_over_fan_in():
    torch.manual_seed(0)
    fan_in = 64
    w = nn.Linear(fan_in, 512).weight.detach()
    assert w.abs().max() <= 1 / math.sqrt(fan_in)
    assert w.abs().max() > 0.99 / math.sqrt(fan_in)  # the bound is reached: U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w2 = torch.empty(512, fan_in)
    nn.init.kaiming_uniform_(w2, nonlinearity="relu")  # 05 練習問題 1's answer: sqrt(6 / fan_in)
    assert 0.99 * math.sqrt(6 / fan_in) < w2.abs().max() <= math.sqrt(6 / fan_in)


def test_a_key_bias_does_not_change_attention_weights():
    torch.manual_seed(0)
    f64 = torch.float64
    q, k, b_k = torch.randn(8, dtype=f64), torch.randn(6, 8, dtype=f64), torch.randn(8, dtype=f64, requires_grad=True)
    w_plain = torch.softmax(k @ q / math.sqrt(8), dim=-1)
    w_bias = torch.softmax((k + b_k) @ q / math.sqrt(8), dim=-1)
    assert torch.allclose(w_plain, w_bias, atol=1e-15)
    (w_bias * torch.randn(6, dtype=torch.float64)).sum().backward()
    assert b_k.grad.abs().max() < 1e-15


# ---------------------------------------- 05-07, 11-12 発展: the notebooks' optional PyTorch cells

@pytest.mark.slow
@pytest.mark.parametrize("stem", ["05_pytorch_parameter_module", "06_pytorch_modules_linear",
                                  "07_pytorch_init_vanishing", "11_lecture3_intro_sphere",
                                  "12_lecture3_fp16_retraction"])
def test_the_notebooks_torch_cells_agree_with_what_the_notebook_built(stem):
    # executed where torch is installed, each optional cell agrees with the notebook's own results
    import re
    import sys
    sys.path.insert(0, str(NB_DIR))
    import build

    nb = build.execute(build.to_notebook(NB_DIR / "src" / f"{stem}.py"))
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                   and 'find_spec("torch")' in c.source for o in c.outputs)
    assert text and "torch は入っていません" not in text
    assert "不一致" not in text and "違う" not in text, text
    assert "一致" in text or "同じ" in text or "差の最大" in text, text   # it compared something
    differences = [float(x) for x in re.findall(r"差の最大 ([0-9.e+-]+)", text)]
    assert all(d < 1e-9 for d in differences), text
