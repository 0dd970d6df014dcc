"""Each generated host function as a torch.library custom op and a checked callable.

The op `sketch::<kernel>_<build key>` takes the kernel's tensors and scalars
(the size symbols are read off the shapes), mutates the tensors the kernel
writes, and has a fake implementation, so torch.compile traces it without a
graph break. The callable `Module.<kernel>(...)` checks every argument in
Python first (names, dtypes, device, contiguity, shapes that must agree, the
host function's conditions, alignment) and raises an exception naming the
parameter; only then does it launch, through ctypes, on the current stream.
A call like an earlier one that passed (the same argument names, tensor shapes,
dtypes, devices, layouts, contiguity, scalar classes) reuses that call's
CallPlan: only the pointers' alignment and int scalars' range are checked again,
so a call costs a few microseconds more than the host function itself.
"""
import ctypes

import torch

from ._api import ArgumentError

DTYPES = {"f16": torch.float16, "bf16": torch.bfloat16, "f32": torch.float32}
CUDA_ERROR_INVALID_VALUE = 1
MAX_PLANS = 256  # checked calls remembered a kernel

_library = torch.library.Library("sketch", "FRAGMENT")
_defined = {}


def _schema_type(param):
    if param.is_tensor:
        return "Tensor"
    return "float" if param.dtype == "f32" else "int"


def _schema(sig):
    """`(Tensor X, Tensor W, Tensor(a0!) Y, float scale) -> ()` for a kernel."""
    items = []
    for index, p in enumerate(sig.params):
        alias = f"(a{index}!)" if p.is_tensor and p.access != "read" else ""
        items.append(f"{_schema_type(p)}{alias} {p.name}")
    return f"({', '.join(items)}) -> ()"


def _is_fake(t):
    return isinstance(t, torch._subclasses.fake_tensor.FakeTensor) or t.device.type == "meta"


class KernelOp:
    """One kernel of a loaded library: the ctypes function, its op, and the checks."""

    def __init__(self, sig, library, key):
        self.sig = sig
        self.function = getattr(library, sig.name)
        self.function.restype = ctypes.c_int
        self.function.argtypes = (
            [ctypes.c_void_p if p.is_tensor else
             (ctypes.c_float if p.dtype == "f32" else ctypes.c_int32) for p in sig.params]
            + [ctypes.c_int64] * len(sig.size_symbols) + [ctypes.c_void_p])
        self.op_name = f"{sig.name}_{key}"
        self.op = self._define()
        self._plans = {}  # _call_key -> CallPlan of calls whose checks passed

    def _define(self):
        qualified = f"sketch::{self.op_name}"
        if qualified not in _defined:
            _library.define(self.op_name + _schema(self.sig))
            _library.impl(self.op_name, self._launch_op, "CUDA")
            torch.library.register_fake(qualified, lambda *args: None)
            _defined[qualified] = getattr(torch.ops.sketch, self.op_name)
        return _defined[qualified]

    # -- checks ------------------------------------------------------------------------

    def check(self, values):
        """Checks the bound arguments; returns the size symbols' values."""
        sig = self.sig
        device = None
        for p in sig.params:
            value = values[p.name]
            if not p.is_tensor:
                self._check_scalar(p, value)
                continue
            if value is None:
                continue
            self._check_tensor(p, value)
            if device is None:
                device = value.device
            elif value.device != device:
                raise ArgumentError(f"{sig.name}: '{p.name}' is on {value.device}, the other "
                                    f"tensors on {device}: all must be on one CUDA device")
        sizes = sig.sizes({p.name: tuple(values[p.name].shape) for p in sig.tensors
                           if values[p.name] is not None})
        sig.check_requirements(sizes)
        return sizes, device

    def _check_scalar(self, p, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            if not (isinstance(value, torch.SymFloat) or isinstance(value, torch.SymInt)):
                raise TypeError(f"{self.sig.name}: '{p.name}' must be a Python "
                                f"{'float' if p.dtype == 'f32' else 'int'} ({p.describe()}), "
                                f"got {type(value).__name__}")
        if p.dtype == "i32" and not isinstance(value, (int, torch.SymInt)):
            raise TypeError(f"{self.sig.name}: '{p.name}' must be an int ({p.describe()}), "
                            f"got {type(value).__name__}")
        if p.dtype == "i32" and isinstance(value, int) and not -2**31 <= value < 2**31:
            raise ArgumentError(f"{self.sig.name}: '{p.name}' = {value} does not fit in int32")

    def _check_tensor(self, p, t):
        name = self.sig.name
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name}: '{p.name}' must be a torch.Tensor ({p.describe()}), "
                            f"got {type(t).__name__}")
        if t.dtype != DTYPES[p.dtype]:
            raise TypeError(f"{name}: '{p.name}' must be {DTYPES[p.dtype]} ({p.describe()}), "
                            f"got {t.dtype}")
        if t.device.type != "cuda" and not _is_fake(t):
            raise ArgumentError(f"{name}: '{p.name}' must be a CUDA tensor, got one on "
                                f"{t.device}")
        if t.layout != torch.strided:
            raise ArgumentError(f"{name}: '{p.name}' must be a dense (strided) tensor, got "
                                f"{t.layout}")
        if not t.is_contiguous():
            raise ArgumentError(f"{name}: '{p.name}' must be contiguous (row-major), got shape "
                                f"{tuple(t.shape)} with strides {t.stride()}; call "
                                f".contiguous() first")
        if t.requires_grad and torch.is_grad_enabled():
            raise ArgumentError(f"{name}: '{p.name}' requires grad; sketch kernels have no "
                                f"backward: call them under torch.no_grad() or detach")

    def check_alignment(self, tensors):
        for p in self.sig.tensors:
            t = tensors[p.name]
            if t.numel() and t.data_ptr() % p.alignment:
                raise ArgumentError(f"{self.sig.name}: '{p.name}' starts at an address that is "
                                    f"not a multiple of {p.alignment} bytes (a view at an "
                                    f"offset?); the kernel needs {p.alignment}-byte aligned "
                                    f"tensors: pass a copy (.clone())")

    # -- launching ---------------------------------------------------------------------

    def _launch_op(self, *args):
        """The op's CUDA implementation: checks everything again (or finds the checks of
        an earlier call with the same shapes), then launches."""
        key = self._call_key(args, {})
        plan = self._plans.get(key) if key is not None else None
        if plan is not None:
            self._run_plan(plan, args)
            return
        values = dict(zip((p.name for p in self.sig.params), args))
        sizes, device = self.check(values)
        self._launch(values, sizes, device)
        self._remember(key, plan_call(self.sig, len(args), (), sizes, device, set()))

    def _launch(self, values, sizes, device):
        """Checks the pointers' alignment, then calls the host function on the current stream."""
        self.check_alignment(values)
        arguments = [values[p.name].data_ptr() if p.is_tensor else values[p.name]
                     for p in self.sig.params]
        arguments += [sizes[s] for s in self.sig.size_symbols]
        self._call_host(arguments, device.index, sizes)

    def _call_host(self, arguments, device_index, sizes):
        """Calls the host function on the device's current stream; raises on its error."""
        if device_index is not None and device_index != _current_device():
            with torch.cuda.device(device_index):
                status = self.function(*arguments, _raw_stream(device_index))
        else:
            status = self.function(*arguments, _raw_stream(device_index))
        if status == CUDA_ERROR_INVALID_VALUE:
            raise ArgumentError(f"{self.sig.name}: the kernel's host function rejected these "
                                f"sizes or pointers (cudaErrorInvalidValue, nothing launched); "
                                f"sizes {sizes}")
        if status != 0:
            raise RuntimeError(f"{self.sig.name}: CUDA error {status} at launch")

    # -- calls seen before ---------------------------------------------------------------

    def _call_key(self, args, kwargs):
        """What the checks of a call depend on, but the pointers' alignment: the argument
        count and names, each tensor's class, shape, dtype, device, layout, contiguity and
        requires_grad, each scalar's class, and the grad mode. None for an argument that
        is neither (the full checks then run and raise)."""
        parts = [len(args), tuple(kwargs), torch.is_grad_enabled()]
        for value in (*args, *kwargs.values()):
            cls = type(value)
            if cls is torch.Tensor or cls is torch.nn.Parameter:
                if value.layout is not torch.strided:
                    return None
                parts.append((cls, value.shape, value.dtype, value.get_device(),
                              value.is_contiguous(), value.requires_grad))
            elif cls is float or cls is int or value is None:
                parts.append(cls)
            else:
                return None
        return tuple(parts)

    def _remember(self, key, plan):
        if key is None:
            return
        if len(self._plans) >= MAX_PLANS:  # shapes that keep changing: start over
            self._plans.clear()
        self._plans[key] = plan

    def _run_plan(self, plan, given):
        """Launches a call whose arguments passed the checks with these shapes before: only
        the pointers' alignment and the int scalars' range are checked again."""
        values = [given[s] if s >= 0 else None for s in plan.sources]
        for index, shape, dtype in plan.allocations:
            values[index] = torch.empty(shape, dtype=dtype, device=plan.device)
        arguments = [v.data_ptr() if tensor else v for v, tensor in zip(values, plan.tensors)]
        for index, alignment in plan.aligned:
            if arguments[index] % alignment:
                self.check_alignment(dict(zip((p.name for p in self.sig.params), values)))
        for index in plan.ints:
            if not -2**31 <= values[index] < 2**31:
                self._check_scalar(self.sig.params[index], values[index])
        self._call_host(arguments + plan.sizes, plan.device.index, plan.size_values)
        outputs = [values[i] for i in plan.outputs]
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def __call__(self, *args, **kwargs):
        compiling = torch.compiler.is_compiling()
        key = None if compiling else self._call_key(args, kwargs)
        plan = self._plans.get(key) if key is not None else None
        if plan is not None:
            return self._run_plan(plan, (*args, *kwargs.values()))
        sig = self.sig
        values = sig.bind(args, kwargs)
        sizes, device = self.check(values)
        if device is None:
            raise ArgumentError(f"{sig.name}: no tensor given")
        left_out = {p.name for p in sig.outputs if values[p.name] is None}
        outputs = []
        for p in sig.outputs:
            if values[p.name] is None:
                values[p.name] = torch.empty(sig.output_shape(p, sizes), dtype=DTYPES[p.dtype],
                                             device=device)
            outputs.append(values[p.name])
        if compiling:
            self.op(*(values[p.name] for p in sig.params))  # traced: the op checks at run time
        else:
            self._launch(values, sizes, device)  # checked above: straight to the launch
            self._remember(key, plan_call(sig, len(args), tuple(kwargs), sizes, device,
                                          left_out))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


class CallPlan:
    """What a call needs once its checks have passed: where each parameter comes from
    (an index into the positional then keyword arguments, or -1: allocated), the outputs
    to allocate, the pointers to check for alignment, the size symbols' values."""
    __slots__ = ("sources", "tensors", "allocations", "aligned", "ints", "sizes",
                 "size_values", "device", "outputs")


def plan_call(sig, positional, keywords, sizes, device, left_out):
    """The CallPlan of a checked call of `sig` with `positional` arguments and then the
    keyword arguments named `keywords` (in their order); the outputs named in `left_out`
    were not given (or None) and are allocated."""
    plan = CallPlan()
    names = [p.name for p in sig.params]
    plan.sources = [i if i < positional else -1 for i in range(len(names))]
    for offset, name in enumerate(keywords):
        plan.sources[names.index(name)] = positional + offset
    plan.sources = [-1 if names[i] in left_out else s for i, s in enumerate(plan.sources)]
    plan.tensors = [p.is_tensor for p in sig.params]
    plan.allocations = [(i, sig.output_shape(p, sizes), DTYPES[p.dtype])
                        for i, p in enumerate(sig.params) if plan.sources[i] < 0]
    plan.aligned = [(i, p.alignment) for i, p in enumerate(sig.params)
                    if p.is_tensor and p.alignment > 1]
    plan.ints = [i for i, p in enumerate(sig.params) if not p.is_tensor and p.dtype == "i32"]
    plan.sizes = [sizes[s] for s in sig.size_symbols]
    plan.size_values = sizes
    plan.device = device
    plan.outputs = [i for i, p in enumerate(sig.params) if p.is_tensor and p.access != "read"]
    return plan


def _current_device():
    getter = getattr(torch._C, "_cuda_getDevice", None)
    return getter() if getter is not None else torch.cuda.current_device()


def _raw_stream(device_index):
    """The current stream's handle on a device: what torch.cuda.current_stream(device)
    .cuda_stream gives, without building a Stream object where torch offers that."""
    if device_index is None:
        device_index = _current_device()
    getter = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if getter is not None:
        return getter(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream
