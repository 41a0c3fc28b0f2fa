"""Device, precision and DistributedDataParallel set-up in one place; the loop only asks "am I rank 0?"."""

from __future__ import annotations

import contextlib
import hashlib
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from model.typed_config import ConfigError
from training.train_config import RunConfig
from translate.model_dir import check_device
from translate.settings import MAX_THREADS


@dataclass(frozen=True)
class Env:
    device: torch.device
    rank: int
    world_size: int
    autocast_dtype: torch.dtype | None  # None = full fp32

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def autocast(self) -> contextlib.AbstractContextManager:
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)


def resolve_device(name: str = "auto") -> torch.device:
    """ "auto" picks CUDA, then Apple MPS, then CPU; anything else is passed to torch.device, once this machine is
    known to have it (``check_device``: ModelLoadError, one line)."""
    if name != "auto":
        check_device(name)
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def check_machine(run: RunConfig) -> None:
    """One line naming the setting, before any work, unless this machine has ``run.device`` ("auto" it always has)
    and ``run.threads`` is 0 (torch's default) or 1 … MAX_THREADS."""
    if run.threads > MAX_THREADS:
        most = f"1 … {MAX_THREADS} (twice this machine's cores)"
        raise ConfigError(f"run.threads must be 0 (torch's default) or {most}, got {run.threads}")
    if run.device != "auto":
        check_device(run.device, "run.device")


def launched_rank() -> int:
    """This process's rank as torchrun set it (0 when not launched by torchrun), before any set-up."""
    return int(os.environ.get("RANK", "0"))


def setup(run: RunConfig) -> Env:
    """Initialise the process group when launched by torchrun (NCCL on GPUs, gloo on CPU), then the CPU threads.
    Precision: bf16 autocast on CUDA with bf16 support; fp32 on CPU (bf16 measured slower there) unless asked."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    device = resolve_device(run.device)
    if world_size > 1:
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if device.type == "cuda":
            device = torch.device("cuda", local_rank)
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    if run.threads > 0:
        torch.set_num_threads(run.threads)
    cuda_bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported()
    bf16 = run.precision == "bf16" or (run.precision == "auto" and cuda_bf16)
    return Env(device, launched_rank(), world_size, torch.bfloat16 if bf16 else None)


def teardown(env: Env, wait_for_all: bool) -> None:
    """Leave the process group; ``wait_for_all`` (every process got here normally): meet at a barrier first. Without
    it a process that finished early (rank 1, while rank 0 still scores the test split) destroyed the group under its
    peer's feet, and gloo aborted it ("terminate called without an active exception"). After an exception the others
    may never arrive, so an error path leaves at once and torchrun stops the remaining processes."""
    if env.world_size > 1 and dist.is_initialized():
        if wait_for_all:
            dist.barrier()
        dist.destroy_process_group()


def all_reduce_sum(value: float, env: Env) -> float:
    """Sum a float over all processes (identity when alone)."""
    if env.world_size == 1:
        return value
    t = torch.tensor([value], dtype=torch.float64, device=env.device)
    dist.all_reduce(t)
    return float(t.item())


def any_rank(flag: bool, env: Env) -> bool:
    """True on every process if ``flag`` is True on any (e.g. one process ran out of time)."""
    return all_reduce_sum(float(flag), env) > 0


def all_gather(obj: Any, env: Env) -> list[Any]:
    """Every process's ``obj`` (picklable), in rank order; ``[obj]`` when alone."""
    if env.world_size == 1:
        return [obj]
    gathered: list[Any] = [None] * env.world_size
    dist.all_gather_object(gathered, obj)
    return gathered


def ranks_identical(module: torch.nn.Module, env: Env) -> tuple[bool, list[str]]:
    """Whether all processes hold bitwise-identical weights (DDP should guarantee it), with each one's digest: the
    SHA-256 of every parameter's bytes in name order."""
    digest = hashlib.sha256()
    for name, p in sorted(module.named_parameters()):
        digest.update(name.encode())
        digest.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    digests = all_gather(digest.hexdigest(), env)
    return len(set(digests)) == 1, digests
