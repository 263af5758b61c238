"""Importing onnxruntime without its ORTModule probe, in this process and in child processes.

This module imports nothing from proofkit, so that a child process (a witness that ONNX Runtime terminates) can load
it by path, without the package and what the package imports: see `child_command`.
"""

from __future__ import annotations

import importlib.abc
import sys
from pathlib import Path


class _NoOrtModuleProbe(importlib.abc.MetaPathFinder):
    """Importing onnxruntime runs a build check (onnxruntime_validation.validate_build_package_info) that imports
    ORTModule, ONNX Runtime training's PyTorch front end, only to learn whether this is a training build that needs a
    CUDA check. With the PyTorch this book pins, that import fails (ORTModule asks torch.onnx for a module it no
    longer has) and the check concludes "no ORTModule", after about 0.2 s spent importing PyTorch's TorchScript
    exporter in every kernel that imports onnxruntime. This finder gives the probe, and only it, that same answer at
    once; the book uses neither ORTModule nor CUDA (its builders and sessions are the C++ ones in onnxruntime.capi).
    tests/test_schema_and_run.py asserts that the unprobed import still fails, so a pin under which ORTModule
    loads shows up there. The probe's import of the onnxruntime.training package, which imports PyTorch in a
    process that has not (a child process), is skipped with it. Any other import of either is left alone."""

    def find_spec(self, name, path=None, target=None):
        if name in ("onnxruntime.training", "onnxruntime.training.ortmodule"):  # the probe imports the package first
            frame = sys._getframe(1)
            while frame is not None:
                if (frame.f_code.co_name == "validate_build_package_info"
                        and frame.f_code.co_filename.endswith("onnxruntime_validation.py")):
                    raise ModuleNotFoundError("ORTModule is not probed by proofkit", name=name)
                frame = frame.f_back
        return None


def install_probe_answer() -> None:
    """Put the finder in front of sys.meta_path, once; it acts only while onnxruntime's build check runs."""
    if not any(type(f).__name__ == "_NoOrtModuleProbe" for f in sys.meta_path):
        sys.meta_path.insert(0, _NoOrtModuleProbe())


#: The first line of a child process's code: this file loaded by path, its finder installed.
PRELUDE = ("import importlib.util as _u; "
           f"_s = _u.spec_from_file_location('_proofkit_ortimport', {str(Path(__file__))!r}); "
           "_m = _u.module_from_spec(_s); _s.loader.exec_module(_m); _m.install_probe_answer(); del _u, _s, _m\n")


def child_command(code: str) -> list[str]:
    """The command of a child Python process that runs `code` (which may import onnxruntime) with the probe answered,
    for subprocess.run: a process ONNX Runtime terminates cannot take the chapter's kernel with it."""
    return [sys.executable, "-c", PRELUDE + code]
