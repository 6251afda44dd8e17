"""Stream-ordered one-sided calls on torch streams: `axon run -n N python gpu_streams_torch.py`.

put_signal_on_stream + signal_wait_until_on_stream with the consumer kernel on the same stream,
get_on_stream, signal_op_on_stream, quiet/barrier on streams, and every form of stream argument
(torch.cuda.Stream, int handle, __cuda_stream__ object, None).
"""

import numpy as np
import torch

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
right, left = (me + 1) % n, (me - 1) % n
dev = torch.device("cuda", axon.gpu_device())
torch.cuda.set_device(dev)

data = axon.zeros(1024, np.float32)
sig = axon.zeros(2, np.uint64)
td = torch.from_dlpack(data)
s = torch.cuda.Stream(device=dev)

# Round 1, on a torch.cuda.Stream: the source is produced on s, sent on s, and the receiver's
# kernel on s runs only after the signal arrived, so it sees the data.
with torch.cuda.stream(s):
    src = torch.full((1024,), float(me + 1), device=dev)
    axon.put_signal_on_stream(data, src, sig, 1, "add", right, stream=s)
    axon.signal_wait_until_on_stream(sig, "ge", 1, stream=s)
    out = td * 2
s.synchronize()
assert torch.all(out == 2 * (left + 1)), out[:4]

# get_on_stream into a torch tensor, on the stream's int handle
back = torch.zeros(1024, device=dev)
axon.barrier_all_on_stream(s.cuda_stream)  # every PE has received before anyone reads
axon.get_on_stream(back, data, right, stream=s.cuda_stream)
s.synchronize()
assert torch.all(back == me + 1), back[:4]


# Round 2, through the CUDA stream protocol: signal_op alone, then the wait.
class ProtocolStream:
    def __init__(self, stream):
        self.stream = stream

    def __cuda_stream__(self):
        return (0, self.stream.cuda_stream)


p = ProtocolStream(s)
axon.signal_op_on_stream(sig[1:], 5, "set", right, stream=p)
axon.signal_wait_until_on_stream(sig[1:], "eq", 5, stream=p)
axon.quiet_on_stream(p)
axon.barrier_on_stream(axon.team_world(), p)
s.synchronize()
assert axon.signal_fetch(sig[1:]) == 5

# Round 3, on the legacy default stream (None).
src2 = torch.full((1024,), float(-me), device=dev)
torch.cuda.synchronize()
axon.put_on_stream(data, src2, right)
axon.quiet_on_stream()
axon.barrier_all_on_stream()
torch.cuda.synchronize()
assert torch.all(td == -left), td[:4]
axon.barrier_all()

# Signals on streams must be in the GPU heap; stream arguments must be streams.
host_sig = axon.zeros(1, np.uint64, device="host")
try:
    axon.signal_op_on_stream(host_sig, 1, "set", right, stream=s)
    raise SystemExit("a host heap signal on a stream did not raise")
except axon.InvalidArgumentError as e:
    assert "GPU heap" in str(e), e
try:
    axon.put_on_stream(data, src2, right, stream="s")
    raise SystemExit("a string stream did not raise")
except axon.InvalidArgumentError as e:
    assert "stream must be None, an int" in str(e), e

axon.barrier_all()
for a in (host_sig, sig, data):
    axon.free(a)
axon.finalize()
print(f"PE {me}: ok")
