"""harness/history.py: the snapshots a run keeps for the planetarium, their schedule and size, a resumed run's
history, and histories that no run could have written refused in one line."""
import json
import os

import numpy as np
import pytest
from cli_helpers import (
    BROKEN,
    MB,
    STEPS,
    TINY,
    broken,
    edit_npz,
    interrupt_at,
    make_runs,
    one_clean_line,
    run,
    write_corpus,
)

import microgpt as mg
import planetarium
from harness.errors import EXIT_BAD_INPUT, EXIT_OK, InputError
from harness.history import HISTORY_NAME, MAX_CURVE, History, load_history, snapshot_steps
from harness.memory import SNAPSHOT_BUDGET
from model_config import n_params, unit_vector_count


@pytest.mark.slow
def test_a_history_planning_10_to_the_30_steps_is_one_line_or_a_note(tmp_path, corpus, capsys):
    import planetarium
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == EXIT_OK
    edit_npz(out / HISTORY_NAME, steps=10**30)
    assert planetarium.main([str(out), "--html", str(tmp_path / "p.html")]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "beyond 2**53" in err
    one_clean_line(err)
    code, out_text, err = run(capsys, ["--resume", "--out", str(out), "--steps", "6", "--corpus", corpus])
    assert code == EXIT_OK and "is not continued" in out_text and "beyond 2**53" in out_text, err
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", str(10**30)])
    assert code == EXIT_BAD_INPUT and "at most 2**53" in err

def test_a_history_claiming_a_deep_narrow_model_is_refused_before_it_is_taken_apart(tmp_path, corpus, capsys):
    """n_layer 10^5, n_embd 1: 1.2 M weights (small), but 600,000 arrays in each snapshot (was 7 s; 10^6 layers:
    72 s, 4 GB and a 122 MiB page)."""
    import planetarium
    from model_config import GPTConfig, n_params
    out = tmp_path / "run"
    assert run(capsys, TINY + ["--corpus", corpus, "--steps", "3", "--out", str(out)])[0] == EXIT_OK
    path = out / HISTORY_NAME
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays["meta"]))
    meta["config"].update(n_layer=10**5, n_embd=1, n_head=1)
    P = n_params(GPTConfig(**meta["config"]))
    arrays.update(meta=np.array(json.dumps(meta)), step=np.array([0, 3]), params=np.zeros((2, P)))
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)
    code = planetarium.main([str(out), "--html", str(tmp_path / "p.html")])
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT and "600,003 arrays would take" in err, err
    one_clean_line(err)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return make_runs(tmp_path_factory.mktemp("planetarium"))

@pytest.mark.slow
def test_the_history_is_what_the_run_recorded(runs):
    for norm in ("rmsnorm", "sphere"):
        loaded = runs[norm]["loaded"]
        assert loaded.step.tolist() == snapshot_steps(STEPS)
        final = loaded.params_at(len(loaded) - 1)  # the last snapshot is the checkpoint's weights, bit for bit
        for key, array in runs[norm]["params"].items():
            assert np.array_equal(final[key], array), key
        assert loaded.vocab == mg.build_vocab(mg.load_corpus("names")) and loaded.steps == STEPS
        assert loaded.val_loss.tolist() == [[float(s), v] for s, v in runs[norm]["val_loss"]]
        assert np.array_equal(loaded.train_loss[:, 1], runs[norm]["train_loss"])
    assert runs["rmsnorm"]["loaded"].drift is None and runs["rmsnorm"]["loaded"].scales is None

def test_drift_is_the_norm_before_the_retraction():
    """One Adam step by hand: the rows before the retraction are drift * the retracted rows, for every unit
    vector (wte rows first, as microgpt.retract lists them), and step 0 has no drift."""
    docs = ["anna", "bob", "eve", "otto"]
    vocab = mg.build_vocab(docs)
    cfg = mg.GPTConfig(len(vocab) + 1, n_embd=8, n_head=2, block_size=8, norm="sphere")
    params = mg.init_params(cfg)
    h = History(cfg, vocab, 5)
    h.record(0, params)
    flat = mg.flat_buffer(params)
    m, v = np.zeros_like(flat), np.zeros_like(flat)
    _, grads = mg.loss_and_grads(params, [mg.doc_tokens(d, vocab) for d in docs[:2]], cfg, "numpy")
    mg.adam_step(flat, mg.flat_buffer(grads), m, v, 0, 5, lr=0.05)
    before = {key: params[key].copy() for key in ("wte", "lm_head")}
    h.record(1, params, mg.retract(params, cfg))
    V, T = cfg.vocab_size, cfg.block_size
    assert h.drift.shape == (2, unit_vector_count(cfg)) and np.isnan(h.drift[0]).all()
    d = h.drift[1]
    assert np.abs(d[:V] - 1).max() > 1e-4  # the step really moved the stars off the sphere
    assert np.allclose(d[:V, None] * h.params_at(1)["wte"], before["wte"], rtol=0, atol=1e-14)
    assert np.allclose(d[V + T:2 * V + T, None] * h.params_at(1)["lm_head"], before["lm_head"], rtol=0, atol=1e-14)

def test_the_snapshot_schedule():
    for steps in (1, 10, 49, 50, 300, 1000, 12345, 10**6):
        s = snapshot_steps(steps)
        assert s[0] == 0 and s[-1] == steps and s == sorted(set(s))
        assert len(s) == min(50, steps + 1)
    s = snapshot_steps(1000)
    assert sum(x <= 100 for x in s) >= 15  # a tenth of the run holds a third of the snapshots: early is dense
    assert max(np.diff(s)) <= 2 * 1000 / 50  # and none of the later gaps is large

def test_the_file_stays_small_for_the_default_model_and_a_million_steps(runs, tmp_path):
    for norm in ("rmsnorm", "sphere"):
        size = os.path.getsize(os.path.join(runs[norm]["dir"], HISTORY_NAME))
        assert len(runs[norm]["loaded"]) == 50 and size < 5 * MB, (norm, size)
    # a million steps: 50 snapshots, and the loss curves are averaged down to MAX_CURVE points
    h0 = runs["sphere"]["loaded"]
    h = History(h0.cfg, h0.vocab, 10**6)
    params = h0.params_at(len(h0) - 1)
    for step in range(0, 10**6 + 1):
        if h.due(step):
            h.record(step, params, None if step == 0 else [np.ones(unit_vector_count(h0.cfg))])
    path = tmp_path / HISTORY_NAME
    train = np.random.default_rng(0).uniform(2, 3, 10**6)
    h.save(path, train, [(s, 2.5) for s in range(0, 10**6 + 1, 100)])
    loaded = load_history(path)
    assert len(loaded) == 50 and os.path.getsize(path) < 5 * MB
    assert len(loaded.train_loss) == len(loaded.val_loss) == MAX_CURVE
    assert abs(loaded.train_loss[:, 1].mean() - train.mean()) < 1e-9  # means of equal runs keep the mean

def test_a_big_model_keeps_fewer_snapshots():
    cfg = mg.GPTConfig(27, n_embd=128, n_head=4, n_layer=2)  # 400k parameters: 10 snapshots
    h = History(cfg, list("abcdefghijklmnopqrstuvwxyz"), 1000)
    assert 2 <= h.count < 50 and h.count * 8 * n_params(cfg) <= SNAPSHOT_BUDGET

@pytest.mark.slow
@pytest.mark.parametrize("norm", ["rmsnorm", "sphere"])
def test_an_interrupted_and_resumed_run_records_the_history_of_an_uninterrupted_one(tmp_path, capsys, monkeypatch,
                                                                                     norm):
    corpus = write_corpus(str(tmp_path))
    args = TINY + ["--corpus", corpus, "--norm", norm, "--steps", "120", "--eval-every", "20"]
    assert mg.main(args + ["--out", str(tmp_path / "whole")]) == 0
    with monkeypatch.context() as patch:
        interrupt_at(patch, 47)  # Ctrl-C during step 47: the step finishes, the checkpoint and history are saved
        assert mg.main(args + ["--out", str(tmp_path / "cut")]) == 130
    assert mg.main(["--resume", "--out", str(tmp_path / "cut"), "--num-samples", "3"]) == 0
    whole, cut = (load_history(tmp_path / name / HISTORY_NAME) for name in ("whole", "cut"))
    assert whole.step.tolist() == cut.step.tolist() == snapshot_steps(120)
    assert np.array_equal(whole.params, cut.params)  # bit for bit, like the resumed weights
    if norm == "sphere":
        assert np.array_equal(whole.drift, cut.drift, equal_nan=True)
    assert np.array_equal(whole.train_loss, cut.train_loss) and np.array_equal(whole.val_loss, cut.val_loss)
    capsys.readouterr()

def test_resume_keeps_the_snapshots_and_the_schedule(runs):
    h0 = runs["sphere"]["loaded"]
    cut = History(h0.cfg, h0.vocab, STEPS)  # a run stopped at step 100 ...
    for k, step in enumerate(h0.step):
        if step <= 100:
            cut.record(int(step), h0.params_at(k), None if step == 0 else [h0.drift[k]])
    resumed = History(h0.cfg, h0.vocab, STEPS, previous=cut)  # ... and resumed with the same plan
    for k, step in enumerate(h0.step):
        if step > 100:
            assert resumed.due(int(step))
            resumed.record(int(step), h0.params_at(k), [h0.drift[k]])
    assert resumed.step.tolist() == h0.step.tolist() and np.array_equal(resumed.params, h0.params)
    longer = History(h0.cfg, h0.vocab, 3 * STEPS, previous=h0)  # a longer plan: evenly spaced, count kept
    due = [s for s in range(STEPS + 1, 3 * STEPS + 1) if longer.due(s)]
    assert due[-1] == 3 * STEPS and len(h0) + len(due) <= h0.count + 2
    with pytest.raises(ValueError):
        History(runs["rmsnorm"]["loaded"].cfg, h0.vocab, STEPS, previous=h0)


@pytest.mark.parametrize("kind", BROKEN)
def test_a_broken_history_is_one_line_in_process(runs, tmp_path, kind):
    broken(kind, tmp_path / "run", os.path.join(runs["sphere"]["dir"], HISTORY_NAME))
    with pytest.raises(InputError) as e:
        planetarium.load_run(str(tmp_path / "run"))
    assert "\n" not in str(e.value) and "history" in str(e.value)
    if kind == "stars off the sphere":
        assert "not on the sphere (max | |v| - 1 | = 0.5)" in str(e.value)


def test_val_loss_points_at_steps_no_run_makes_are_dropped_when_read(runs, tmp_path):
    """A crafted history's val-loss points at a negative step, beyond the planned steps, or at a step before the
    last one: dropped as the file is read (the planetarium never draws them); the others stay as written."""
    src = os.path.join(runs["rmsnorm"]["dir"], HISTORY_NAME)
    h0 = load_history(src)
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    good = arrays["val_loss"]
    planned = h0.steps
    arrays["val_loss"] = np.concatenate([[[-5.0, 2.0]], good[:2], [[good[1, 0] - 1, 2.5]], good[2:],
                                         [[planned + 10, 1.0]], [[good[-1, 0], 1.5]]])
    path = tmp_path / HISTORY_NAME
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    h = load_history(str(path))
    assert np.array_equal(h.val_loss, good) and np.array_equal(h.train_loss, h0.train_loss)
