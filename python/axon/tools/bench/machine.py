"""The machine a run was measured on, as the --json document records it."""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpus() -> list[dict] | None:
    """GPUs as nvidia-smi lists them, or None where there is no nvidia-smi or it sees none."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4:
            gpus.append({"index": int(parts[0]) if parts[0].isdigit() else parts[0], "name": parts[1],
                         "memory": parts[2], "driver": parts[3]})
    return gpus or None


def machine_info() -> dict:
    return {"hostname": socket.gethostname(), "cpu": _cpu_model(), "cpus": os.cpu_count(),
            "os": platform.platform(), "python": platform.python_version(), "gpu": _gpus()}
