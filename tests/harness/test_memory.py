"""harness/memory.py: the memory a run will need, estimated from its config before anything is allocated;
the estimate is an upper bound, and a run or a checkpoint beyond --max-memory or the machine is one line."""
import re
import tracemalloc

import pytest
from cli_helpers import TINY, one_clean_line, run, write_corpus

import microgpt as mg
from harness.errors import EXIT_BAD_INPUT, EXIT_OK, InputError
from harness.memory import machine_memory, step_memory
from model_config import CHUNK_BYTES


def test_a_huge_model_is_refused_before_anything_is_allocated(tmp_path, corpus, capsys):
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--n-embd", "100000", "--n-head", "4",
                                       "--out", str(tmp_path / "o")])
    assert code == EXIT_BAD_INPUT and "would need about" in err and "GB" in err and "--max-memory" in err
    assert not (tmp_path / "o").exists()
    # the same model in the value engine: its graph is far larger than its weights
    code, _, err = run(capsys, ["--corpus", corpus, "--n-embd", "256", "--steps", "1", "--batch-size", "8"])
    assert code == EXIT_BAD_INPUT and "engine value" in err
    # a raised limit lets a mid-size run through
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--n-embd", "64", "--steps", "2", "--max-memory", "1"])
    assert code == EXIT_OK, err

@pytest.mark.slow
def test_many_samples_run_in_bounded_chunks():
    cfg = mg.GPTConfig(vocab_size=27)
    params = mg.init_params(cfg)
    vocab = [chr(ord("a") + i) for i in range(26)]
    tracemalloc.start()
    names = mg.sample(params, cfg, vocab, num_samples=8_000, temperature=1.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert len(names) == 8_000
    assert peak < 120 * 2**20  # one chunk (CHUNK_BYTES, 64 MiB) and the names, not 8,000 caches (~640 MB) at once

@pytest.mark.parametrize("engine, batch, kw", [("numpy", 1, {}), ("numpy", 16, {}), ("numpy", 8, dict(n_embd=64,
                         n_layer=2, norm="sphere")), ("value", 1, {}), ("value", 2, dict(norm="sphere"))])
@pytest.mark.slow
def test_the_memory_estimate_is_an_upper_bound(engine, batch, kw):
    cfg = mg.GPTConfig(vocab_size=27, **kw)
    params = mg.init_params(cfg)
    docs = [[26] + [i % 26 for i in range(cfg.block_size)]] * batch  # full-length docs: the worst case
    tracemalloc.start()
    mg.loss_and_grads(params, docs, cfg, engine)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    estimate = step_memory(cfg, batch, engine)
    assert peak <= estimate <= 20 * max(peak, CHUNK_BYTES), (peak, estimate)  # an upper bound, not a wild one

def test_the_corpus_counts_in_the_memory_estimate(tmp_path, capsys):
    from harness.memory import check_memory
    cfg = mg.GPTConfig(vocab_size=27, n_embd=8, n_head=2)
    check_memory(cfg, 1, "numpy", 4.0, corpus=(100_000, 600_000))  # names.txt-like: fine
    with pytest.raises(InputError, match="16,000,000 documents"):
        check_memory(cfg, 1, "numpy", 4.0, corpus=(16_000_000, 48_000_000))  # a 64 MiB file of 3-letter lines
    path = write_corpus(str(tmp_path), "\n".join(f"n{i}" for i in range(50_000)))
    code, _, err = run(capsys, TINY + ["--corpus", path, "--max-memory", "0.05"])
    assert code == EXIT_BAD_INPUT and "50,000 documents" in err


@pytest.mark.parametrize("flags", [["--max-memory", "1e6", "--n-embd", "200000", "--n-head", "1"],
                                   ["--max-memory", "1e6", "--n-embd", "4611686018427387904", "--n-head", "1"]])
def test_a_model_larger_than_the_machine_is_refused_in_one_line(corpus, capsys, flags):
    code, _, err = run(capsys, TINY + ["--corpus", corpus] + flags)
    assert code == EXIT_BAD_INPUT and "this machine has" in err and "GB" in err
    one_clean_line(err)

def test_the_steps_history_counts_in_the_memory_estimate(corpus, capsys):
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "1000000000"])
    assert code == EXIT_BAD_INPUT and "1,000,000,000 steps" in err

def test_the_machine_memory_is_known_here():
    assert machine_memory() > 2**30

def test_the_estimate_counts_the_bigram_table_of_a_big_vocabulary(tmp_path, capsys):
    from harness.memory import check_memory
    from model_config import GPTConfig
    with pytest.raises(InputError, match="vocab_size 30,001"):  # 7.2 GB of bigram counts for a tiny model
        check_memory(GPTConfig(30_001, n_embd=16, n_head=4), 1, "numpy", max_gb=4)
    chars = "".join(chr(0x4E00 + i) for i in range(12_000))  # 12,000 distinct CJK characters: a 1.15 GB table
    corpus = write_corpus(str(tmp_path), "\n".join(chars[i:i + 8] for i in range(0, len(chars), 8)) + "\n")
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--steps", "1", "--max-memory", "1"])
    assert code == EXIT_BAD_INPUT and "vocab_size 12,001" in err
    one_clean_line(err)

def test_the_estimate_counts_the_python_objects_of_every_layer(corpus, capsys):
    from harness.memory import check_memory
    from model_config import GPTConfig
    deep = GPTConfig(27, n_embd=1, n_head=1, n_layer=1_000_000, block_size=1)  # 12 M weights, ~10 GB of objects
    with pytest.raises(InputError, match="n_layer 1000000"):
        check_memory(deep, 1, "numpy", max_gb=4)
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--n-layer", "1000000", "--n-embd", "1", "--n-head", "1",
                                       "--block-size", "1", "--steps", "1"])
    assert code == EXIT_BAD_INPUT and "n_layer 1000000" in err
    one_clean_line(err)


def test_a_tiny_limit_is_said_in_megabytes_not_as_0_0_gb(corpus, capsys):
    code, _, err = run(capsys, TINY + ["--corpus", corpus, "--max-memory", "1e-9"])
    assert code == 2 and "0.0 GB" not in err and re.search(r"would need about [\d.]+ MB of memory", err), err


@pytest.mark.slow
@pytest.mark.parametrize("flags", [["--engine", "numpy", "--block-size", "4096", "--batch-size", "32"],
                                   ["--engine", "numpy", "--block-size", "16384", "--batch-size", "64"],
                                   ["--engine", "value", "--block-size", "2048", "--batch-size", "4"]])
def test_a_large_block_size_on_short_names_is_estimated_within_2x_of_the_measured_peak(flags, capsys):
    """A step computes only a document's own positions: short names under a large block_size cost what short
    names cost. The estimate (from the longest document) is within 2x of the measured peak (resident memory);
    it once asked for 70 GB where the run peaks at 56 MB."""
    from cli_helpers import peak_rss_mb

    import corpora
    from harness import memory
    docs = corpora.load_corpus("names")
    cfg = mg.GPTConfig(len(mg.build_vocab(docs)) + 1, block_size=int(flags[3]))
    estimate = (memory.step_memory(cfg, int(flags[5]), flags[1], 8, max(map(len, docs)) + 1)
                + memory.baseline_memory(cfg) + memory.corpus_memory(len(docs), sum(map(len, docs)))
                + memory.history_memory(cfg, 20)) / 2**20
    code, err, peak = peak_rss_mb(flags + ["--steps", "20", "--num-samples", "2"])
    assert code == EXIT_OK, err
    assert peak / 2 <= estimate <= 2 * peak, (estimate, peak)
