#!/usr/bin/env bash
# GPU benchmarks: seqlab on CuPy against PyTorch CUDA eager, in one run on a lent GPU machine.
#
# Run it with the device tool, from the repository root (the dataset folder is not needed, and no .venv:
# the machine's python3 has numpy, cupy, torch with CUDA, transformers and pytest; PYTHONPATH=src stands
# in for an install):
#
#     run(command="bash benchmarks/gpu.sh", timeout_s=540)
#
# Everything it makes lands in $OUT, which the device tool brings back (files_at):
#     gpu.log            this script's whole output (nvidia-smi, versions, the GPU tests, the CUDA kernels'
#                        tests, both tables, tests/test_device_path.py on CuPy, then the kernel-by-kernel
#                        profile of the large steps (benchmarks/gpu_profile.py) in the time left)
#     gpu-default.json   seqlab bench encoder-train gpt-train --device cuda --size default
#     gpu-large.json     the same at --size large (GPT-2 small, batch 8 x 1024; encoder d 768, 12 layers,
#                        batch 16 x 512)
# The JSON is rewritten after each benchmark, so a run cut short keeps the benchmarks it finished.
# Each step has a time limit, all of them within DEADLINE (400 s) of the start, so the script ends in
# under 7 minutes even when a step hangs; expected on an H200: about 1 minute of tests (CuPy compiles
# its kernels on first use), well under a minute for the default sizes, 1-3 minutes for the large ones.
# The exit status is 0 only when every step passed.
#
# Then, on the development machine, keep the records and regenerate docs/results.md from them (the GPU
# tables are never edited by hand):
#
#     cp FILES_AT/gpu-default.json benchmarks/results/h200-YYYY-MM-DD-default.json
#     cp FILES_AT/gpu-large.json   benchmarks/results/h200-YYYY-MM-DD-large.json
#     seqlab bench --from-json benchmarks/results/h200-YYYY-MM-DD-default.json --results docs/results.md
#     seqlab bench --from-json benchmarks/results/h200-YYYY-MM-DD-large.json --results docs/results.md
#
# Each writes (or replaces) its own section, "Benchmarks: seqlab vs PyTorch on a GPU, size default" and
# "..., size large", and leaves the CPU section alone. The CPU section's closing line still says "GPU: not
# measured" until that section is rebuilt (`seqlab bench --from-json benchmarks/results/xeon-2026-12-01.json
# --results docs/results.md`, then check `git diff docs/results.md`): once a GPU section exists it points
# at it instead. Update the GPU sentence of README.md's "Speed: seqlab against PyTorch" too.
set -uo pipefail
export PYTHONPATH=src PYTHONUNBUFFERED=1
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
DEADLINE=400  # seconds from the start; every step's limit is cut to what is left of it

failed=()

# limited LIMIT NAME COMMAND...: run COMMAND under `timeout`, at most LIMIT seconds and never past DEADLINE
limited() {
    local limit=$1 name=$2
    shift 2
    local left=$((DEADLINE - SECONDS))
    if ((left < 20)); then
        echo "=== $name: skipped, ${left}s left of the ${DEADLINE}s budget"
        failed+=("$name (no time left)")
        return
    fi
    ((limit > left)) && limit=$left
    echo "=== $name (limit ${limit}s, at ${SECONDS}s) ==="
    timeout --kill-after=10 "$limit" "$@"
    local rc=$?
    if ((rc != 0)); then
        echo "=== $name: FAILED, exit $rc$( ((rc == 124 || rc == 137)) && echo ' (time limit)')"
        failed+=("$name (exit $rc)")
    fi
}

main() {
    local commit
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?')
    echo "=== seqlab GPU benchmarks, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $commit, OUT=$OUT"
    nvidia-smi || failed+=("nvidia-smi")
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv || true
    python3 - <<'EOF' || failed+=("versions")
import platform, numpy, torch
print("python", platform.python_version(), "| numpy", numpy.__version__, "| torch", torch.__version__,
      "CUDA", torch.version.cuda, "available:", torch.cuda.is_available())
try:
    import cupy
    print("cupy", cupy.__version__, "| CUDA runtime", cupy.cuda.runtime.runtimeGetVersion(),
          "| devices", cupy.cuda.runtime.getDeviceCount())
except Exception as e:  # printed, not fatal: the tests below say what it breaks
    print("cupy: not usable:", type(e).__name__, e)
from seqlab import backend
print("seqlab sees CUDA:", backend.cuda_available())
if backend.cuda_available() and torch.cuda.is_available():
    from seqlab.bench.device import gpu_info
    print("recorded with the results:", gpu_info())
EOF

    # the GPU tests first: seqlab's model on CuPy against torch on CUDA, same weights, same losses
    limited 120 "GPU tests" python3 -m pytest -q -rs --maxfail=3 -p no:cacheprovider \
        tests/test_backend.py tests/bench -k "gpu or cuda"

    # the CUDA kernels (seqlab.cuda_kernels), each against the composed CuPy formula it replaces
    limited 120 "CUDA kernels" python3 -m pytest -q -rs --maxfail=5 -p no:cacheprovider tests/test_cuda_kernels.py

    # tracebacks into the log (SEQLAB_DEBUG), without a --debug in the command the JSON records
    export SEQLAB_DEBUG=1
    limited 90 "bench, size default" python3 -m seqlab bench encoder-train gpt-train --device cuda \
        --size default --repeats 7 --json "$OUT/gpu-default.json"
    limited 180 "bench, size large" python3 -m seqlab bench encoder-train gpt-train --device cuda \
        --size large --repeats 5 --json "$OUT/gpu-large.json"

    # last, with the time that is left: every model family on CuPy against NumPy (test_device_path.py's
    # "cupy" cases; CuPy compiles each new kernel on first use, so this may be cut short)
    limited 150 "device path on CuPy" python3 -m pytest -q -rs --maxfail=5 -p no:cacheprovider \
        tests/test_device_path.py -k cupy

    # where the large steps' GPU time goes, kernel by kernel, seqlab's and torch's (CUPTI, through torch.profiler)
    limited 120 "kernel profile, size large" python3 benchmarks/gpu_profile.py --size large --top 25

    echo "=== done in ${SECONDS}s; files in $OUT:"
    ls -l "$OUT"
    if ((${#failed[@]})); then
        printf '=== FAILED: %s\n' "${failed[@]}"
        return 1
    fi
    echo "=== every step passed"
}

main 2>&1 | tee "$OUT/gpu.log"
