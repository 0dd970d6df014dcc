"""The few torch names sketch._torch_ops uses, without torch or a GPU (test_call_plans.py).

Tensors have a shape, dtype, device index, contiguity, layout and a made-up address;
torch.empty records what it allocates. Nothing here launches anything.
"""
import itertools
import types

strided = "strided"


class dtype:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


float16, bfloat16, float32 = dtype("torch.float16"), dtype("torch.bfloat16"), dtype("torch.float32")


class device:
    def __init__(self, kind, index=None):
        self.type, self.index = kind, index

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)

    def __repr__(self):
        return f"{self.type}:{self.index}"


_addresses = itertools.count(1 << 20, 4096)


class Tensor:
    def __init__(self, shape, dt=float16, index=0, contiguous=True, address=None):
        self.shape, self.dtype, self._index, self._contiguous = tuple(shape), dt, index, contiguous
        self._address = next(_addresses) if address is None else address
        self.requires_grad, self.layout = False, strided
        self.device = device("cuda", index) if index >= 0 else device("cpu")

    def get_device(self):
        return self._index

    def is_contiguous(self):
        return self._contiguous

    def data_ptr(self):
        return self._address

    def numel(self):
        count = 1
        for size in self.shape:
            count *= size
        return count

    def stride(self):
        return ()


nn = types.SimpleNamespace(Parameter=type("Parameter", (Tensor,), {}))
grad_enabled = [True]
allocated = []


def is_grad_enabled():
    return grad_enabled[0]


def empty(shape, dtype=None, device=None):
    tensor = Tensor(shape, dtype, device.index)
    allocated.append(tensor)
    return tensor


compiler = types.SimpleNamespace(is_compiling=lambda: False)
_C = types.SimpleNamespace(_cuda_getDevice=lambda: 0, _cuda_getCurrentRawStream=lambda index: 77)
SymFloat, SymInt = type("SymFloat", (), {}), type("SymInt", (), {})


class _Library:
    def __init__(self, *args):
        pass

    def define(self, *args):
        pass

    def impl(self, *args):
        pass


library = types.SimpleNamespace(Library=_Library, register_fake=lambda *args: None)


class _Ops:
    def __getattr__(self, name):
        return name


ops = types.SimpleNamespace(sketch=_Ops())
_subclasses = types.SimpleNamespace(
    fake_tensor=types.SimpleNamespace(FakeTensor=type("FakeTensor", (), {})))
cuda = types.SimpleNamespace(current_device=lambda: 0)
