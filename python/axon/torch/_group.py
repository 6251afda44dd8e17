"""AxonProcessGroup: torch.distributed's calls on one group, carried out by axon on its team.

torch translates global ranks to group ranks before it calls a process group, so every rank here
(root, src, dst) is a group rank, which is the index in the group's axon team (torch orders a
group's ranks as new_group sorts them, and the team is made in that order).

Two objects of torch's carry a group: the ProcessGroup that dist.all_reduce and the other eager
calls reach (AxonProcessGroup), and, where torch lets Python subclass its c10d Backend, the
Backend registered in it for CPU and CUDA tensors (AxonBackend), which holds the group's name in
torch's C++ and which torch's dispatcher may reach (functional collectives, torch.compile). The
Backend forwards to the group, so both share one state (the team, its place on the CUDA streams).
"""

from __future__ import annotations

import atexit
import functools
import os
import weakref
import zlib
from datetime import timedelta
from typing import Optional

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import Backend

import axon

from ..errors import InvalidArgumentError
from . import _alltoallv
from ._call import GroupCalls
from ._reduce_ops import reduction
from ._tensors import byte_view, describe
from ._work import AxonWork, done

_SUM = dist.ReduceOp.SUM

# The tag torch never passes (axon.MAX_TAG): the messages of all_to_all with uneven splits use it,
# so that they never match a user's send or receive on the same team.
INTERNAL_TAG = axon.MAX_TAG


def _op(name: str):
    """Runs a ProcessGroup method, turning axon's failures into torch's terms: a dead peer or a
    timeout becomes DistBackendError naming the op, this rank and the tensor."""

    def wrap(method):
        @functools.wraps(method)
        def run(self, *args, **kwargs):
            if self._calls.team is None:
                # Shut down (destroy_process_group): its team is gone, and axon's calls would take
                # team=None for the world team.
                raise axon.NotInitializedError(f"axon.torch: {name} on group {self._group_name!r}, which was "
                                               f"destroyed (destroy_process_group)")
            try:
                return method(self, *args, **kwargs)
            except (axon.PeerDeadError, axon.TimeoutError, axon.BootstrapError, axon.CollectiveMismatchError) as e:
                raise dist.DistBackendError(self._where(name, args) + f": {e}") from e
            except axon.Error as e:
                if str(e).startswith("axon.torch:"):
                    raise  # raised here, already naming the call
                raise type(e)(self._where(name, args) + f": {e}") from e
        return run

    return wrap


def _first_tensor(obj) -> Optional[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return obj
    if isinstance(obj, (list, tuple)):
        for x in obj:
            t = _first_tensor(x)
            if t is not None:
                return t
    return None


def _bytes(t: torch.Tensor) -> torch.Tensor:
    """The contiguous tensor `t` as a flat tensor of bytes, on its device."""
    return t.reshape(-1).view(torch.uint8)


def _one(tensors: list, api: str):
    if len(tensors) != 1:
        raise InvalidArgumentError(f"axon.torch: {api} takes one tensor per call, got {len(tensors)}")
    return tensors[0]


class AxonProcessGroup(dist.ProcessGroup):
    """A torch process group whose collectives and messages run on an axon team."""

    def __init__(self, team: axon.Team, rank: int, size: int, group_name: str, timeout: timedelta,
                 store: Optional[dist.Store] = None):
        super().__init__(rank, size)
        self._rank = rank
        self._size = size
        self._group_name = group_name
        self._timeout = timeout
        self._store = store
        self._calls = GroupCalls(team)
        _LIVE.add(self)
        # torch names the ProcessGroups it makes and registers their backends; a group a backend
        # creator returns is used as is, so this one registers its Backend itself and names
        # itself (the name lives in the registered backends).
        if PYTHON_BACKENDS:
            backend = AxonBackend(self)
            for device in ("cpu", "cuda"):
                self._register_backend(torch.device(device), dist.ProcessGroup.BackendType.CUSTOM, backend)
            self._set_default_backend(dist.ProcessGroup.BackendType.CUSTOM)
            self._set_group_name(group_name)

    # -- identity --------------------------------------------------------------------------------

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank

    def getBackendName(self) -> str:
        return "axon"

    def name(self) -> str:
        return "axon"

    @property
    def group_name(self) -> str:
        """torch's name of the group (DeviceMesh, DTensor, FSDP2 and the functional collectives
        find a group by it). torch keeps a group's name in its registered backends; without one
        (a torch with no Python c10d Backend) this is where it is."""
        return self._group_name

    def _forget_team(self) -> None:
        """At shutdown: drops the team, which torch's objects (a DeviceMesh, FSDP's state) may
        keep this group alive past, up to the interpreter's exit, where the extension would
        report the team's object as leaked."""
        self._calls.team = None

    @property
    def team(self) -> Optional[axon.Team]:
        """The axon team the group runs on (its ranks are the group's); None once destroyed."""
        return self._calls.team

    _team = team

    def get_group_store(self) -> Optional[dist.Store]:
        """torch's store of the group (torch's split_group registers a split's)."""
        return self._store

    def __repr__(self) -> str:
        return f"AxonProcessGroup(rank {self._rank} of {self._size}, group {self._group_name!r})"

    def _where(self, op: str, args) -> str:
        t = _first_tensor(args)
        what = f", {describe(t)}" if t is not None else ""
        return (f"axon.torch: {op} on rank {self._rank} of group {self._group_name!r} ({self._size} ranks; "
                f"global rank {axon.my_pe()}){what}")

    def _check_blocks(self, tensors, like, api: str, what: str, rule: str) -> None:
        """A list of one block per rank, each of `like`'s size and dtype; else a clear error."""
        if len(tensors) != self._size:
            raise InvalidArgumentError(f"axon.torch: {api} needs {self._size} {what}, got {len(tensors)}")
        for t in tensors:
            if t.numel() != like.numel() or t.dtype != like.dtype:
                raise InvalidArgumentError(f"axon.torch: {api}: {rule} ({describe(like)}); got a {describe(t)}")

    # -- collectives -----------------------------------------------------------------------------

    @_op("all_reduce")
    def allreduce(self, tensors, opts=None):
        # The path of every small all_reduce (DDP's, a training loop's): few calls.
        t = tensors[0] if len(tensors) == 1 else _one(tensors, "all_reduce")
        red = reduction(opts.reduceOp if opts is not None else _SUM, t, "all_reduce")
        call = self._calls.start(t, "all_reduce")
        c = t.contiguous()  # t itself when contiguous
        call.run("allreduce", c if red.factor is None else red.scaled(c), c, red)
        if red.divide:
            c.div_(self._size)
        if c is not t:
            t.copy_(c)
        return call.work(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        work = done(tensors)
        for t in tensors:
            opts1 = dist.AllreduceOptions()
            if opts is not None:
                opts1.reduceOp = opts.reduceOp
            work = self.allreduce([t], opts1)
        return self._coalesced(work, tensors)

    # -- coalesced calls ----------------------------------------------------------------------------
    # torch's _coalescing_manager hands the calls made inside it to one *_coalesced call, which
    # runs them in order; given a device, it brackets that call with _start/_end_coalescing and
    # takes the Work from the end.

    _coalescing = False
    _coalesced_work: Optional[AxonWork] = None

    def _coalesced(self, work, tensors: list):
        """The Work of a coalesced call: its last collective's, which completes after the others
        (one stream, one team, in order), with the whole list as its result."""
        work._tensors = tensors
        if self._coalescing:  # kept for _end_coalescing only: it holds the tensors
            self._coalesced_work = work
        return work

    def _start_coalescing(self, device) -> None:
        self._coalescing, self._coalesced_work = True, None

    def _end_coalescing(self, device):
        work, self._coalescing, self._coalesced_work = self._coalesced_work, False, None
        return work if work is not None else done([])

    @_op("reduce")
    def reduce(self, tensors, opts=None):
        opts = opts if opts is not None else dist.ReduceOptions()
        t = _one(tensors, "reduce")
        red = reduction(opts.reduceOp, t, "reduce")
        root = opts.rootRank
        call = self._calls.start(t, "reduce")
        c = t.contiguous()
        call.run("reduce", red.scaled(c), c, red, root=root)
        if red.divide and self._rank == root:
            c.div_(self._size)
        if c is not t:
            t.copy_(c)
        return call.work(tensors)

    @_op("broadcast")
    def broadcast(self, tensors, opts=None):
        opts = opts if opts is not None else dist.BroadcastOptions()
        t = _one(tensors, "broadcast")
        call = self._calls.start(t, "broadcast")
        c = t.contiguous()
        call.run("broadcast", c, c, root=opts.rootRank)
        if c is not t:
            t.copy_(c)
        return call.work(tensors)

    @_op("all_gather")
    def allgather(self, output_tensors, input_tensors, opts=None):
        outs = _one(output_tensors, "all_gather")
        inp = _one(input_tensors, "all_gather")
        self._check_blocks(outs, inp, "all_gather", "output tensors", "every output tensor must match the input")
        flat = torch.empty((self._size,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)
        call = self._calls.start(inp, "all_gather")
        call.run("allgather", inp.contiguous(), flat)
        for i, o in enumerate(outs):
            o.copy_(flat[i].view_as(o))
        return call.work(output_tensors)

    @_op("all_gather_into_tensor")
    def _allgather_base(self, output, input, opts=None):
        if output.numel() != self._size * input.numel() or output.dtype != input.dtype:
            raise InvalidArgumentError(
                f"axon.torch: all_gather_into_tensor: the output ({describe(output)}) must hold {self._size} x "
                f"the input ({describe(input)})")
        call = self._calls.start(input, "all_gather_into_tensor")
        o = output.contiguous()
        call.run("allgather", input.contiguous(), o)
        if o is not output:
            output.copy_(o)
        return call.work([output])

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        work = done(outputs)
        for o, i in zip(outputs, inputs):
            work = self._allgather_base(o, i, opts)
        return self._coalesced(work, outputs)

    @_op("reduce_scatter")
    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        out = _one(output_tensors, "reduce_scatter")
        ins = _one(input_tensors, "reduce_scatter")
        self._check_blocks(ins, out, "reduce_scatter", "input tensors", "every input tensor must match the output")
        flat = torch.cat([t.reshape(-1) for t in ins])
        return self._reduce_scatter_flat(out, flat, opts.reduceOp, "reduce_scatter", output_tensors)

    @_op("reduce_scatter_tensor")
    def _reduce_scatter_base(self, output, input, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        if input.numel() != self._size * output.numel() or output.dtype != input.dtype:
            raise InvalidArgumentError(
                f"axon.torch: reduce_scatter_tensor: the input ({describe(input)}) must hold {self._size} x the "
                f"output ({describe(output)})")
        return self._reduce_scatter_flat(output, input.reshape(-1), opts.reduceOp, "reduce_scatter_tensor", [output])

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        work = done(outputs)
        for o, i in zip(outputs, inputs):
            work = self._reduce_scatter_base(o, i, opts)
        return self._coalesced(work, outputs)

    def _reduce_scatter_flat(self, out, flat, op, api, result):
        red = reduction(op, out, api)
        call = self._calls.start(out, api)
        o = out.contiguous()
        call.run("reduce_scatter", red.scaled(flat.contiguous()), o, red)
        if red.divide:
            o.div_(self._size)
        if o is not out:
            out.copy_(o)
        return call.work(result)

    @_op("all_to_all_single")
    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        rows_out, rows_in = output.shape[0] if output.dim() else 1, input.shape[0] if input.dim() else 1
        out_rows = _alltoallv.splits(output_split_sizes, rows_out, self._size, "output_split_sizes")
        in_rows = _alltoallv.splits(input_split_sizes, rows_in, self._size, "input_split_sizes")
        row_out = output.numel() // max(rows_out, 1) * output.element_size()
        row_in = input.numel() // max(rows_in, 1) * input.element_size()
        if output.dtype != input.dtype or (row_out != row_in and rows_out and rows_in):
            raise InvalidArgumentError(
                f"axon.torch: all_to_all_single: input ({describe(input)}) and output ({describe(output)}) must "
                f"have the same dtype and row size")
        row = row_in or row_out
        even = len(set(in_rows)) == 1 and len(set(out_rows)) == 1 and in_rows[0] == out_rows[0]
        call = self._calls.start(input, "all_to_all_single", stream_path=even)
        i, o = input.contiguous(), output.contiguous()
        if even:
            call.run("alltoall", i, o)
        else:
            _alltoallv.exchange(byte_view(i), [r * row for r in in_rows], byte_view(o), [r * row for r in out_rows],
                                self._team, INTERNAL_TAG)
        if o is not output:
            output.copy_(o)
        return call.work([output])

    @_op("all_to_all")
    def alltoall(self, output_tensors, input_tensors, opts=None):
        if len(output_tensors) != self._size or len(input_tensors) != self._size:
            raise InvalidArgumentError(
                f"axon.torch: all_to_all needs {self._size} input and output tensors, got {len(input_tensors)} "
                f"and {len(output_tensors)}")
        self._calls.start(input_tensors[0], "all_to_all", stream_path=False)
        src = torch.cat([x.contiguous().reshape(-1).view(torch.uint8) for x in input_tensors])
        sizes_out = [t.numel() * t.element_size() for t in output_tensors]
        dst = torch.empty(sum(sizes_out), dtype=torch.uint8, device=output_tensors[0].device)
        sizes_in = [t.numel() * t.element_size() for t in input_tensors]
        _alltoallv.exchange(byte_view(src), sizes_in, byte_view(dst), sizes_out, self._team, INTERNAL_TAG)
        at = 0
        for t, n in zip(output_tensors, sizes_out):
            # A copy of the bytes starts at offset 0: viewing them as t's dtype needs no alignment.
            t.copy_(dst[at:at + n].clone().view(t.dtype).view(t.shape))
            at += n
        return done(output_tensors)

    # gather and scatter: two-sided messages between the root and each rank, on the tag no user
    # passes (INTERNAL_TAG), in call order like every collective here.

    def _gather_bytes(self, src: torch.Tensor, dst: torch.Tensor, root: int, api: str) -> None:
        """Root: dst (n blocks of src's size) gets every rank's src, in rank order; others send.
        Contiguous tensors, on any device each."""
        self._calls.order.drain()
        if self._rank != root:
            axon.send(byte_view(src), dest=root, tag=INTERNAL_TAG, team=self._team)
            return
        nb = src.numel() * src.element_size()
        blocks = _bytes(dst)
        recvs = [(i, axon.irecv(byte_view(blocks[i * nb:(i + 1) * nb]), source=i, tag=INTERNAL_TAG, team=self._team))
                 for i in range(self._size) if i != root]
        blocks[root * nb:(root + 1) * nb].copy_(_bytes(src))
        axon.wait_all([r for _, r in recvs])
        for i, r in recvs:
            if r.status.nbytes != nb:
                raise InvalidArgumentError(f"axon.torch: {api}: rank {i} sent {r.status.nbytes} bytes, the root "
                                           f"expected {nb}")

    @_op("gather")
    def gather(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else dist.GatherOptions()
        root = self._peer(opts.rootRank, "gather")
        inp = _one(input_tensors, "gather")
        outs = _one(output_tensors, "gather") if self._rank == root else []
        if self._rank == root:
            self._check_blocks(outs, inp, "gather", "tensors on the root", "every tensor of the root's list must match")
        flat = torch.empty((self._size if self._rank == root else 0,) + tuple(inp.shape), dtype=inp.dtype,
                           device=inp.device)
        self._gather_bytes(inp.contiguous(), flat, root, "gather")
        for i, o in enumerate(outs):
            o.copy_(flat[i].view_as(o))
        return done(output_tensors)

    @_op("gather")
    def gather_single(self, output, input, opts=None):
        opts = opts if opts is not None else dist.GatherOptions()
        root = self._peer(opts.rootRank, "gather")
        if self._rank == root and (output.numel() != self._size * input.numel() or output.dtype != input.dtype):
            raise InvalidArgumentError(f"axon.torch: gather: the root's output ({describe(output)}) must hold "
                                       f"{self._size} x the input ({describe(input)})")
        o = output.contiguous()
        self._gather_bytes(input.contiguous(), o, root, "gather")
        if o is not output and self._rank == root:
            output.copy_(o)
        return done([output])

    @_op("scatter")
    def scatter(self, output_tensors, input_tensors, opts=None):
        opts = opts if opts is not None else dist.ScatterOptions()
        root = self._peer(opts.rootRank, "scatter")
        out = _one(output_tensors, "scatter")
        self._calls.start(out, "scatter", stream_path=False)
        c = out.contiguous()
        dst = byte_view(c)
        if self._rank == root:
            ins = _one(input_tensors, "scatter")
            self._check_blocks(ins, out, "scatter", "tensors on the root", "every tensor of the root's list must match")
            blocks = [t.contiguous() for t in ins]  # alive until every send is done
            sends = [axon.isend(byte_view(blocks[j]), dest=j, tag=INTERNAL_TAG, team=self._team)
                     for j in range(self._size) if j != root]
            _bytes(c).copy_(_bytes(blocks[root]))  # the root's block may be on another device
            axon.wait_all(sends)
        else:
            st = axon.recv(dst, source=root, tag=INTERNAL_TAG, team=self._team)
            if st.nbytes != len(dst):
                raise InvalidArgumentError(f"axon.torch: scatter: the root sent {st.nbytes} bytes for a "
                                           f"{describe(out)} ({len(dst)} bytes)")
        if c is not out:
            out.copy_(c)
        return done(output_tensors)

    @_op("barrier")
    def barrier(self, opts=None):
        # As ProcessGroupNCCL's: the host returns once every rank got here and the group's
        # earlier collectives have finished on this GPU.
        self._calls.order.drain()
        axon.barrier(self._team)
        return done([])

    # -- groups ------------------------------------------------------------------------------------

    @_op("split_group")
    def split_group(self, new_ranks, timeout=None, opts=None, group_name=None, group_desc=None, device_types=None):
        """torch.distributed.split_group's call on its parent, collective over this group: the ranks
        `new_ranks` (this group's ranks, in the new group's order) form a group on a team split
        from this group's; a rank not listed gets None. Ranks that pass different lists get an
        error on every rank concerned, not a group."""
        ranks = [int(r) for r in new_ranks]
        self._calls.order.drain()
        parent = self._calls.team
        if not ranks or len(set(ranks)) != len(ranks) or not all(0 <= r < self._size for r in ranks):
            # The split is collective over the parent: this rank still takes part (in no new
            # team), so that ranks given a valid list get their group instead of waiting for it.
            parent.split(-1, 0)
            raise InvalidArgumentError(f"axon.torch: split_group: ranks {ranks} must be distinct ranks of this "
                                       f"group, in [0, {self._size})")
        member = self._rank in ranks
        # The colour names the list itself: ranks that pass different lists land in different
        # teams, whose size or order then differs from what each of them asked for. (Two lists
        # of one colour, a crc32 collision, make one team larger than either list: its members
        # all see a mismatch too.)
        colour = zlib.crc32(repr(ranks).encode()) & 0x7FFFFFFF if member else -1
        team = parent.split(colour, ranks.index(self._rank) if member else 0)
        if team is None:
            return None
        got = [team.translate(i, parent) for i in range(team.n_pes())]
        if got != ranks:
            team.destroy()  # every member of this team sees a mismatch (above)
            raise InvalidArgumentError(
                f"axon.torch: split_group: this rank asked for the group of ranks {ranks}, but the ranks that "
                f"asked for the same list are {got}; every rank of the group must pass the same split")
        bound_by_timeout(team, timeout)
        name = group_name or f"{self._group_name}:split:{colour}"
        store = dist.PrefixStore(f"axon/split/{name}/", self._store) if self._store is not None else None
        return SubGroup(team, team.my_pe(), team.n_pes(), name, timeout or self._timeout, store)

    def eager_connect_single_device(self, device) -> None:
        """init_process_group(device_id=...) connects a backend that splits at once: axon's team
        is connected when the group is made. The device must be axon's GPU, else every CUDA call
        would be refused later."""
        if device is None or torch.device(device).type != "cuda":
            return
        try:
            gpu = axon.gpu_device()
        except axon.UnsupportedError:
            return  # the host backend: CUDA tensors take the blocking calls, from any GPU
        index = torch.device(device).index
        if index is not None and index != gpu:
            raise InvalidArgumentError(
                f"axon.torch: init_process_group(device_id={device}) but axon runs this rank on cuda:{gpu} "
                f"(AXON_DEVICE, else the local rank); pass device_id=torch.device('cuda', {gpu})")

    # -- messages ----------------------------------------------------------------------------------

    def _tag(self, tag: int, api: str) -> int:
        if not 0 <= tag < INTERNAL_TAG:
            raise InvalidArgumentError(f"axon.torch: {api}: tag {tag} is outside [0, {INTERNAL_TAG})")
        return tag

    def _peer(self, peer: int, api: str) -> int:
        if not 0 <= peer < self._size:
            raise InvalidArgumentError(f"axon.torch: {api}: rank {peer} is outside the group's [0, {self._size})")
        return peer

    @_op("send")
    def send(self, tensors, dst, tag=0):
        t = _one(tensors, "send")
        self._calls.order.drain()  # the team's stream calls first, whatever stream they went on
        req = axon.isend(byte_view(t.contiguous()), dest=self._peer(dst, "send"), tag=self._tag(tag, "send"),
                         team=self._team)
        return AxonWork(tensors, finish=self._checked(req.wait, "send", t), test=req.test)

    @_op("recv")
    def recv(self, tensors, src, tag=0):
        return self._recv(tensors, self._peer(src, "recv"), tag, "recv")

    @_op("recv")
    def recv_anysource(self, tensors, tag=0):
        return self._recv(tensors, axon.ANY_SOURCE, tag, "recv")

    def _recv(self, tensors, src, tag, api):
        t = _one(tensors, api)
        self._calls.order.drain()
        c = t.contiguous()
        req = axon.irecv(byte_view(c), source=src, tag=self._tag(tag, api), team=self._team)
        want = c.numel() * c.element_size()

        def finish():
            st = req.wait()
            if st.nbytes != want:
                raise InvalidArgumentError(f"axon.torch: recv: rank {st.source} sent {st.nbytes} bytes for a "
                                           f"{describe(t)} ({want} bytes)")
            if c is not t:
                t.copy_(c)

        return AxonWork(tensors, finish=self._checked(finish, api, t), test=req.test,
                        source=lambda: req.status.source if req.status is not None else -1)

    def _checked(self, fn, api, t):
        """`fn` (a wait) with axon's failures in torch's terms, as _op does for the calls."""

        def run():
            try:
                return fn()
            except (axon.PeerDeadError, axon.TimeoutError, axon.BootstrapError) as e:
                raise dist.DistBackendError(self._where(api, [t]) + f": {e}") from e

        return run

    # torch 2.15 calls some of these by new names (dist.all_gather_single, ...); same arguments.
    all_gather_single = _allgather_base
    all_gather_single_coalesced = allgather_into_tensor_coalesced
    reduce_scatter_single = _reduce_scatter_base
    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced
    all_to_all_single = alltoall_base

    def _get_backend(self, device=None):
        """torch asks a group for its backend of a device (whether it coalesces, splits, ...): this
        group is its own backend on every device, and does neither."""
        return self

    supports_coalescing = False
    supports_splitting = True  # split_group, above


class SubGroup(AxonProcessGroup):
    """A group on a team of its own (new_group, split_group): its shutdown destroys the team."""

    def shutdown(self) -> None:
        # Collective over the group's ranks, as destroy_process_group is.
        if self._team is not None and self._team.valid:
            self._team.destroy()
        self._forget_team()


# What torch's dispatcher calls on a group's Backend; each is the group's method of that name.
_FORWARDED = ("allreduce", "allreduce_coalesced", "reduce", "broadcast", "allgather", "_allgather_base",
              "allgather_into_tensor_coalesced", "reduce_scatter", "_reduce_scatter_base",
              "reduce_scatter_tensor_coalesced", "alltoall_base", "alltoall", "gather", "scatter", "barrier",
              "send", "recv", "recv_anysource", "all_gather_single", "all_gather_single_coalesced",
              "reduce_scatter_single", "reduce_scatter_single_coalesced", "all_to_all_single", "gather_single")


class AxonBackend(Backend):
    """The c10d Backend of an AxonProcessGroup, registered in it for CPU and CUDA tensors."""

    def __init__(self, group: AxonProcessGroup):
        super().__init__(group.rank(), group.size())
        # Weak: the group holds this backend (through torch's registration), and a cycle through
        # C++ would never be collected.
        self._group = weakref.ref(group)

    def group(self) -> AxonProcessGroup:
        g = self._group()
        if g is None:
            raise axon.NotInitializedError("axon.torch: the process group of this backend was destroyed")
        return g

    def getBackendName(self) -> str:
        return "axon"


def _forward(name: str):
    def call(self, *args, **kwargs):
        return getattr(self.group(), name)(*args, **kwargs)
    call.__name__ = name
    call.__doc__ = f"The group's {name}."
    return call


for _name in _FORWARDED:
    setattr(AxonBackend, _name, _forward(_name))


def bound_by_timeout(team: axon.Team, timeout: Optional[timedelta]) -> None:
    """A subgroup's timeout (new_group's, split_group's) becomes its team's bound on every wait,
    as the default group's becomes AXON_TIMEOUT when the backend starts axon; AXON_TIMEOUT, when
    the user set it, bounds every wait instead."""
    if timeout is not None and "AXON_TIMEOUT" not in os.environ:
        team.set_timeout(max(timeout.total_seconds(), 0.001))


# Every group not yet collected: at the interpreter's exit a script that never called
# destroy_process_group still has them, and their teams would be reported by the extension as
# leaked objects (a page of nanobind's warnings after the script's own output).
_LIVE: "weakref.WeakSet[AxonProcessGroup]" = weakref.WeakSet()


@atexit.register
def _drop_teams() -> None:
    for group in list(_LIVE):
        group._forget_team()


def _python_backends() -> bool:
    """Whether this torch lets Python subclass c10d's Backend (its PyBackend trampoline, in torch
    2.15; torch 2.11 has none). Without it a group registers no backend: torch's dispatcher then
    calls the group's own methods, and finds its name through the group_name property."""
    try:
        Backend(0, 1)
        return True
    except TypeError:
        return False


#: Whether groups register an AxonBackend (torch has Python c10d Backends). Tests set it to False
#: before init_process_group to run the other way on a torch that has them.
PYTHON_BACKENDS = _python_backends()
