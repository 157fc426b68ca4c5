"""--device cuda and --size large: the GPU sizes, the synchronized timing, the CLI's errors without a GPU,
and (on a machine with CuPy and a GPU) both libraries' losses on the GPU."""
from __future__ import annotations

import json

import numpy as np
import pytest

from seqlab import backend
from seqlab.bench import device, encoder_train, gpt_train, harness, runner
from seqlab.cli.main import main

gpu = pytest.mark.skipif(not backend.cuda_available(), reason="needs CuPy and a GPU")
SMALL_GPT = gpt_train.GPTTrainConfig(vocab_size=65, block_size=16, n_embd=32, n_layer=2, n_head=4, batch=3)
SMALL_ENCODER = encoder_train.EncoderTrainConfig(vocab_size=97, d_model=32, nhead=4, num_layers=2,
                                                 dim_feedforward=64, seq_len=12, batch=5,
                                                 dropout=0.0, min_len=4)  # dropout 0: no masks to differ


# ---- sizes ----------------------------------------------------------------------------------------------
def test_large_gpt_is_gpt2_small_with_nanogpts_vocabulary():
    c = gpt_train.SIZES["large"]
    assert (c.n_layer, c.n_head, c.n_embd, c.block_size, c.vocab_size) == (12, 12, 768, 1024, 50304)
    assert c.batch == 8
    # nanoGPT prints 123.69M for this model: it leaves out the 1024 × 768 position embeddings
    assert gpt_train.param_count(c) == 124_475_904
    assert gpt_train.param_count(c) - c.block_size * c.n_embd == 123_689_472


def test_param_count_is_the_built_models():
    from seqlab.models.gpt import GPT, GPTConfig

    c = SMALL_GPT
    model = GPT(GPTConfig(vocab_size=c.vocab_size, n_positions=c.block_size, n_embd=c.n_embd, n_layer=c.n_layer,
                          n_head=c.n_head))
    unique = {id(p): p for p in model.parameters()}  # the head is tied to wte: count it once
    assert gpt_train.param_count(c) == sum(p.numel() for p in unique.values())


def test_gpt_train_flops_is_nanogpts_estimate():
    c = gpt_train.SIZES["large"]
    N = gpt_train.param_count(c) - c.block_size * c.n_embd  # nanoGPT's N: no position embeddings
    nanogpt = (6 * N + 12 * c.n_layer * c.n_embd * c.block_size) * c.batch * c.block_size  # estimate_mfu
    assert gpt_train.train_flops(c) == pytest.approx(nanogpt, rel=1e-3)  # only biases and norms left out


def test_large_encoder_is_bert_base_shaped():
    c = encoder_train.SIZES["large"]
    assert (c.d_model, c.nhead, c.num_layers, c.dim_feedforward, c.seq_len, c.batch) == (768, 12, 12, 3072, 512, 16)
    assert c.min_len <= c.seq_len and c.d_model % c.nhead == 0
    assert encoder_train.train_flops(c) > 100 * encoder_train.train_flops(encoder_train.SIZES["default"])


@pytest.mark.parametrize("mod", [encoder_train, gpt_train], ids=["encoder-train", "gpt-train"])
def test_descriptions_name_the_size_and_device_but_the_default_cpu_one_is_unchanged(mod):
    assert mod.describe(mod.SIZES["default"]) == mod.DESCRIPTION
    large = mod.describe(mod.SIZES["large"], "large", "cuda")
    assert "size large" in large and "12 layers" in large and "CUDA" in large
    assert "size default" in mod.describe(mod.SIZES["default"], "default", "cuda")


# ---- synchronized timing ----------------------------------------------------------------------------------
def test_compare_synchronizes_after_every_call():
    calls = []
    t = harness.compare(lambda: calls.append("s"), lambda: calls.append("t"), rounds=3, warmup=1, min_time=0,
                        settle=0, wake=True, sync_seqlab=lambda: calls.append("S"),
                        sync_torch=lambda: calls.append("T"))
    assert len(t.seqlab_all) == 3
    pairs = [calls[i:i + 2] for i in range(0, len(calls), 2)]
    assert len(calls) % 2 == 0 and all(p in (["s", "S"], ["t", "T"]) for p in pairs)  # each call, then its sync
    assert calls.count("s") == calls.count("S") == 1 + 1 + 2 * 3  # warm-up, sizing, (wake + timed) per round


def test_cpu_runs_have_no_sync():
    assert device.syncs("cpu") == (None, None)
    fn = lambda: None  # noqa: E731
    assert harness.synced(fn, None) is fn
    backend.synchronize("cpu")  # a no-op, no GPU needed


def test_cuda_path_builds_on_the_device_and_syncs_every_timed_step(monkeypatch):
    """The --device cuda plumbing of the runner, with the GPU parts replaced by recorders."""
    calls, built = [], {}

    def fake_build(c, seed=0, dtype="float32", device="cpu"):
        built.update(config=c, device=device)
        return (lambda: calls.append("seqlab")), (lambda: calls.append("torch")), None, None

    monkeypatch.setattr(gpt_train, "build", fake_build)
    monkeypatch.setattr(runner, "syncs", lambda d: (lambda: calls.append("sync seqlab"),
                                                    lambda: calls.append("sync torch")))
    monkeypatch.setattr(device, "release", lambda: None)
    monkeypatch.setattr(device, "memory_peaks", lambda: {"seqlab_bytes": 2 ** 30, "torch_peak_bytes": 2 ** 31})
    r = runner.run("gpt-train", device="cuda", size="large", rounds=2)
    assert built == {"config": gpt_train.SIZES["large"], "device": "cuda"}
    assert calls and len(calls) % 2 == 0
    assert all(calls[i + 1] == f"sync {calls[i]}" for i in range(0, len(calls), 2))
    assert r.headers == runner.GPU_HEADERS and "size large" in r.description
    assert r.data["device"] == "cuda" and r.data["size"] == "large" and r.data["tokens_per_step"] == 8 * 1024
    assert r.data["seqlab_tokens_per_s"] == pytest.approx(8192 / r.data["seqlab_s"])
    assert r.rows[0][0] == "gpt-train" and len(r.rows[0]) == len(runner.GPU_HEADERS)
    assert any("TFLOP/s" in n for n in r.notes) and any("1.0 GiB" in n for n in r.notes)


def test_cpu_result_keeps_its_columns_and_gets_the_memory_line(monkeypatch):
    from seqlab.bench import memory

    monkeypatch.setattr(gpt_train, "SIZES", {**gpt_train.SIZES, "default": SMALL_GPT})
    asked = []
    fake = {"seqlab": {"step_peak_bytes": 3 << 20, "first_peak_bytes": 4 << 20},
            "torch": {"step_peak_bytes": 5 << 20, "first_peak_bytes": 6 << 20}}
    monkeypatch.setattr(memory, "compare", lambda name, threads, **kw: asked.append((name, threads)) or fake)
    r = runner.run("gpt-train", rounds=1, threads=1)
    assert r.headers == runner.HEADERS and r.description == gpt_train.describe(SMALL_GPT)
    assert r.data["device"] == "cpu" and r.data["size"] == "default" and "seqlab_cpu_s" in r.data
    assert asked == [("gpt-train", 1)] and r.data["memory"] is fake
    assert "seqlab 3.0 MiB, torch 5.0 MiB" in r.notes[-1]
    assert "memory" not in runner.run("gpt-train", rounds=1, measure_memory=False).data


def test_runner_refuses_what_has_no_gpu_or_large_path():
    with pytest.raises(ValueError, match="supports encoder-train and gpt-train only, not gpt-generate"):
        runner.run("gpt-generate", device="cuda")
    with pytest.raises(ValueError, match="--size large applies to encoder-train and gpt-train only"):
        runner.run("bert-infer", size="large")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        runner.run("gpt-train", device="tpu")


# ---- the command line -------------------------------------------------------------------------------------
@pytest.mark.skipif(backend.cuda_available(), reason="checks the error on a machine without a GPU")
def test_cli_device_cuda_without_cupy_is_one_line_and_exit_2(capsys):
    assert main(["bench", "gpt-train", "--device", "cuda"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --device cuda needs CuPy with a GPU")
    assert captured.out == ""


def test_cli_device_cuda_usage_errors(capsys):
    assert main(["bench", "gpt-generate", "--device", "cuda"]) == 2
    assert "supports encoder-train and gpt-train only, not gpt-generate" in capsys.readouterr().err
    assert main(["bench", "gpt-train", "--device", "cuda", "--threads", "2"]) == 2
    assert "--threads" in capsys.readouterr().err
    assert main(["bench", "gemm", "--size", "large"]) == 2
    assert "--size large applies to encoder-train and gpt-train only" in capsys.readouterr().err
    assert main(["bench", "gpt-train", "--device", "tpu"]) == 2  # argparse's choices


def _gpu_record(size: str) -> dict:
    from seqlab.bench.report import to_json
    from seqlab.bench.result import BenchResult

    r = BenchResult("gpt-train", gpt_train.describe(gpt_train.SIZES[size], size, "cuda"), runner.GPU_HEADERS,
                    [["gpt-train", "50.0", "25.0", "2.00", "163,840", "327,680"]], ["a GPU note"],
                    {"seqlab_s": 0.05, "torch_s": 0.025, "device": "cuda", "size": size})
    info = {**harness.machine_info(1), "device": "cuda", "gpu": "NVIDIA H200", "gpu_memory_gib": 139.8,
            "torch_cuda": "13.0", "cupy": "14.2.0", "cupy_cuda_runtime": "13.0", "cuda_driver": "13.0",
            "torch_matmul_fp32": "ieee", "cupy_tf32": "0"}
    return to_json({1: [r]}, info, f"seqlab bench gpt-train --device cuda --size {size}", "cuda", size)


def test_cli_folds_gpu_records_into_their_own_sections(tmp_path, capsys):
    from seqlab.bench.report import GPU_HEADING, HEADING

    md = tmp_path / "results.md"
    md.write_text(f"# Results\n\n## {HEADING}\n\nthe CPU tables\n\n## Later\n\nkept\n")
    for size in ("default", "large"):
        record = tmp_path / f"gpu-{size}.json"
        record.write_text(json.dumps(_gpu_record(size)))
        assert main(["bench", "--from-json", str(record), "--results", str(md)]) == 0
        assert main(["bench", "--from-json", str(record), "--results", str(md)]) == 0  # replaced, not appended
    capsys.readouterr()
    text = md.read_text()
    assert "the CPU tables" in text and "kept" in text
    for size in ("default", "large"):
        assert text.count(f"## {GPU_HEADING}, size {size}\n") == 1
    assert "NVIDIA H200 (139.8 GiB)" in text and "TF32 off" in text and "size large" in text
    assert "| gpt-train | 50.0 | 25.0 | 2.00 | 163,840 | 327,680 |" in text
    assert "Command: `seqlab bench gpt-train --device cuda --size large`" in text


def test_cpu_section_points_at_the_gpu_sections_once_they_exist(tmp_path, capsys):
    from seqlab.bench.report import GPU_HEADING, to_json
    from seqlab.bench.result import BenchResult
    from seqlab.cli.bench import GPU_NOTE, GPU_SEEN_NOTE

    r = BenchResult("gpt-train", "d", runner.HEADERS[:4], [["gpt-train", "9.0", "10.0", "0.90"]], [],
                    {"seqlab_s": 0.009, "torch_s": 0.01})
    record = tmp_path / "cpu.json"
    record.write_text(json.dumps(to_json({1: [r]}, harness.machine_info(1), "seqlab bench gpt-train")))
    md = tmp_path / "results.md"
    assert main(["bench", "--from-json", str(record), "--results", str(md)]) == 0
    assert GPU_NOTE in md.read_text()
    md.write_text(md.read_text() + f"\n## {GPU_HEADING}, size default\n\nGPU tables\n")
    assert main(["bench", "--from-json", str(record), "--results", str(md)]) == 0
    capsys.readouterr()
    text = md.read_text()
    assert GPU_SEEN_NOTE in text and GPU_NOTE not in text and "GPU tables" in text


# ---- on a GPU (skipped without CuPy and a GPU) ------------------------------------------------------------
def _torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@gpu
def test_gpt_train_cuda_step_matches_torch():  # pragma: no cover - needs a GPU
    _torch_cuda()
    fs, ft, model, twin = gpt_train.build(gpt_train.SIZES["default"], seed=0, device="cuda")
    assert all(p.device == "cuda" for p in model.parameters())
    assert all(p.is_cuda for p in twin.parameters())
    ls, lt = fs(), ft()  # one training step each, same weights and batch: the forward's loss
    np.testing.assert_allclose(ls, lt, rtol=1e-4)
    ls, lt = fs(), ft()  # after one AdamW update: the gradients and the update agree too
    np.testing.assert_allclose(ls, lt, rtol=2e-4)


@gpu
def test_encoder_train_cuda_steps_match_torch():  # pragma: no cover - needs a GPU
    _torch_cuda()
    fs, ft, model, _ = encoder_train.build(SMALL_ENCODER, seed=3, device="cuda")
    assert all(p.device == "cuda" for p in model.parameters())
    np.testing.assert_allclose([fs() for _ in range(3)], [ft() for _ in range(3)], rtol=2e-4)


@gpu
def test_cuda_benchmark_result(monkeypatch):  # pragma: no cover - needs a GPU
    _torch_cuda()
    monkeypatch.setattr(gpt_train, "SIZES", {**gpt_train.SIZES, "default": SMALL_GPT})
    r = runner.run("gpt-train", device="cuda", rounds=1)
    assert r.headers == runner.GPU_HEADERS and r.data["seqlab_s"] > 0 and r.data["torch_s"] > 0
    assert r.data["seqlab_bytes"] > 0 and r.data["torch_peak_bytes"] > 0
    assert "gpu" in device.gpu_info()


def test_large_sizes_on_the_cpu_say_what_they_cost_before_running(monkeypatch, capsys):
    from seqlab.bench.result import BenchResult
    from seqlab.cli.main import main

    ran = []
    monkeypatch.setattr(runner, "run", lambda name, **kw: ran.append((name, kw["size"])) or
                        BenchResult(name, "stub", ["benchmark"], [[name]]))
    assert main(["bench", "gpt-train", "--size", "large", "--threads", "1", "--no-memory"]) == 0
    err = capsys.readouterr().err
    assert err.index("note: --size large builds the GPU sizes") < err.index("running gpt-train")
    assert ran == [("gpt-train", "large")]
    assert "running gpt-train (size large, 1 thread, products on " in err  # which BLAS the run uses
