"""The CUDA kernels' source compiles, on any machine: NVRTC (the `nvidia-cuda-nvrtc` wheel, a test dependency
on Linux x86-64) compiles `seqlab.cuda_kernels.SOURCE` for the H100/H200 (compute_90) without a GPU, and every
kernel the Python side launches is an entry point of the result. What the kernels compute is held on a GPU
(tests/test_cuda_kernels.py); this catches a kernel that would not build, or a launch by a wrong name, in CI.
"""
import ctypes
import glob
import re
import site
import sysconfig
from pathlib import Path

import pytest

from seqlab import cuda_kernels


def _nvrtc():
    folders = set(site.getsitepackages()) | {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    for folder in sorted(folders):
        for path in sorted(glob.glob(str(Path(folder) / "nvidia" / "**" / "libnvrtc.so*"), recursive=True)):
            if "builtins" not in path:
                return ctypes.CDLL(path)
    pytest.skip("NVRTC (pip install nvidia-cuda-nvrtc) is not installed here")


def compile_ptx(source: str, arch: str = "compute_90") -> tuple[int, str, str]:
    """(NVRTC's result code, its log, the PTX) for `source`, as CuPy compiles it (C++17)."""
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    assert lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"seqlab.cu", 0, None, None) == 0
    opts = [f"-arch={arch}".encode(), b"-std=c++17"]
    try:
        rc = lib.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        ptx = b""
        if rc == 0:
            lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
            buf = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetPTX(prog, buf)
            ptx = buf.value
        return rc, log.value.decode(errors="replace"), ptx.decode(errors="replace")
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def launched_kernels() -> set[str]:
    """The kernel names cuda_kernels.py launches (`_kernel("name")`)."""
    return set(re.findall(r'_kernel\("(\w+)"\)', Path(cuda_kernels.__file__).read_text()))


def test_the_source_compiles_and_has_every_kernel_the_python_side_launches():
    rc, log, ptx = compile_ptx(cuda_kernels.SOURCE)
    assert rc == 0, log
    entries = set(re.findall(r"\.entry\s+(\w+)\(", ptx))
    names = launched_kernels()
    defined = set(re.findall(r'extern "C" __global__ void (\w+)\(', cuda_kernels.SOURCE))
    assert len(defined) == 11 and names == defined, (sorted(defined), sorted(names))  # none unused, none missing
    assert names <= entries, f"launched but not built: {sorted(names - entries)}"


def test_a_broken_kernel_fails_to_compile():
    """The check above can fail: a typo in the source is a compile error with a log that names it."""
    broken = cuda_kernels.SOURCE.replace("warp_sum(d);", "warp_summ(d);", 1)
    assert broken != cuda_kernels.SOURCE
    rc, log, _ = compile_ptx(broken)
    assert rc != 0 and "warp_summ" in log
