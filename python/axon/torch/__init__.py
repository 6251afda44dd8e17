"""axon as a torch.distributed backend. One import, one word:

    import axon.torch                          # registers the backend "axon"
    import torch.distributed as dist
    dist.init_process_group("axon")            # under `axon run -n N` or torchrun

The default group runs on axon's world team and every new_group on a team of its ranks; the
operations (all_reduce, broadcast, reduce, all_gather(_into_tensor), reduce_scatter(_tensor),
all_to_all(_single), send, recv, batch_isend_irecv, barrier and what torch builds on them) run on
axon's host paths for CPU tensors. docs/pytorch.md says what is supported and what is not.

Nothing here is imported by `import axon`: axon works without torch installed.
"""

from __future__ import annotations

import os

import torch.distributed as dist

import axon

from . import _launch
from ._group import PYTHON_BACKENDS, AxonBackend, AxonProcessGroup, SubGroup, bound_by_timeout
from ._work import AxonWork

__all__ = ["AxonBackend", "AxonProcessGroup", "AxonWork", "BACKEND", "PYTHON_BACKENDS", "create_process_group"]

#: The name to pass to torch.distributed.init_process_group and new_group.
BACKEND = "axon"


class _WorldGroup(AxonProcessGroup):
    """The default group: axon's world team. Its shutdown (destroy_process_group) finalizes axon
    when this backend started it."""

    def __init__(self, *args, started_axon: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self._started_axon = started_axon

    def shutdown(self) -> None:
        self._forget_team()
        if self._started_axon and axon.is_initialized():
            self._started_axon = False
            axon.finalize()


def create_process_group(opts, backend_options=None) -> AxonProcessGroup:
    """torch's creator (extended API): the default group on axon's world, a subgroup on a team of
    its global ranks (made by those ranks alone, as torch calls only them)."""
    rank, size, timeout = opts.group_rank, opts.group_size, opts.timeout
    ranks = list(opts.global_ranks_in_group)
    default = not axon.is_initialized() or not ranks
    if not ranks:
        started = not axon.is_initialized()
        _launch.ensure_axon(opts.store, rank, size, timeout)
        return _WorldGroup(axon.team_world(), rank, size, opts.group_id, timeout, opts.store, started_axon=started)
    if default:
        raise axon.NotInitializedError("axon.torch: a subgroup before the default group: call "
                                       "dist.init_process_group('axon') first")
    team = axon.Team.of_world_pes(ranks)
    bound_by_timeout(team, timeout)
    return SubGroup(team, rank, size, opts.group_id, timeout, opts.store)


def _register() -> None:
    if BACKEND not in dist.Backend.backend_list:
        dist.Backend.register_backend(BACKEND, create_process_group, extended_api=True, devices=["cpu", "cuda"])
    # `axon run` sets torch's variables; PEs given only axon's get the ranks derived from them.
    os.environ.update(_launch.torch_vars_from_axon())


_register()
