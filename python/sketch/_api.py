"""A kernel's host API as `sketchc --emit=api` describes it, and the checks of a call.

Everything here is plain Python (no torch): a tensor is anything with `.shape`;
the torch-specific checks (dtype, device, layout, alignment) live in _torch_ops.py.
"""
import ast
import operator

# C operators of `sketchc --emit=api` conditions and derived sizes, as Python evaluates them.
_BINARY = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Mod: lambda a, b: a - b * int(a / b),            # C: the sign of the dividend
    ast.Div: lambda a, b: int(a / b), ast.FloorDiv: lambda a, b: int(a / b),  # C: toward zero
}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt,
    ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
}


class ArgumentError(ValueError):
    """A call's argument the kernel cannot take (raised before anything is launched)."""


def evaluate(expression, symbols):
    """The integer value of a C expression over size symbols (`H - R + 3`, `H % HK == 0`)."""
    return compile_expression(expression)(symbols)


_compiled = {}


def compile_expression(expression):
    """A function of {symbol: value} that evaluates a C expression over size symbols
    (+ - * / %, comparisons, && ||, with C's integer division), built once: the calls
    evaluate closures, which torch.compile traces without a graph break."""
    if expression not in _compiled:
        text = expression.replace("&&", " and ").replace("||", " or ")
        _compiled[expression] = _closure(ast.parse(text, mode="eval").body, expression)
    return _compiled[expression]


def _closure(node, expression):
    if isinstance(node, ast.Constant) and type(node.value) is int:
        value = node.value
        return lambda symbols: value
    if isinstance(node, ast.Name):
        name = node.id
        return lambda symbols: symbols[name]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        operand = _closure(node.operand, expression)
        return lambda symbols: -operand(symbols)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _closure(node.left, expression), _closure(node.right, expression)
        apply = _BINARY[type(node.op)]
        divides = isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod))

        def binary(symbols):
            b = right(symbols)
            if divides and b == 0:
                raise ValueError(f"'{expression}' divides by zero")
            return apply(left(symbols), b)
        return binary
    if isinstance(node, ast.BoolOp):  # short-circuit, as in C: `HK > 0 && H % HK == 0`
        values = [_closure(v, expression) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda symbols: int(all(bool(v(symbols)) for v in values))
        return lambda symbols: int(any(bool(v(symbols)) for v in values))
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        left, right = _closure(node.left, expression), _closure(node.comparators[0], expression)
        compare = _COMPARE[type(node.ops[0])]
        return lambda symbols: int(compare(left(symbols), right(symbols)))
    raise ValueError(f"cannot evaluate '{expression}'")


class Param:
    """One parameter of a host function, as --emit=api lists it."""

    def __init__(self, entry):
        self.name = entry["name"]
        self.kind = entry["kind"]            # "tensor" or "scalar"
        self.dtype = entry["dtype"]          # f16 bf16 f32 (tensors), f32 i32 (scalars)
        self.dims = list(entry.get("dims", []))
        self.layout = entry.get("layout")
        self.access = entry.get("access", "read")  # read, write, readwrite
        self.alignment = entry.get("alignment", 1)

    @property
    def is_tensor(self):
        return self.kind == "tensor"

    @property
    def output_only(self):
        """Written and never read: the caller may leave it out and get it allocated."""
        return self.access == "write"

    def describe(self):
        if not self.is_tensor:
            return f"{self.name}: {self.dtype}"
        layout = f" {self.layout}" if self.layout else ""
        return f"{self.name}: {self.dtype}[{', '.join(self.dims)}]{layout}"


class Signature:
    """A kernel's host function: parameters, size symbols, bound and derived sizes."""

    def __init__(self, entry):
        self.name = entry["name"]
        self.params = [Param(p) for p in entry["params"]]
        self.size_symbols = list(entry["size_symbols"])
        self.bound = dict(entry.get("bound", {}))
        self.derived = dict(entry.get("derived", {}))
        self.requires = list(entry.get("requires", []))
        for text in list(self.derived.values()) + [r["condition"] for r in self.requires]:
            compile_expression(text)  # a malformed expression fails when the API is read

    @property
    def tensors(self):
        return [p for p in self.params if p.is_tensor]

    @property
    def outputs(self):
        return [p for p in self.params if p.is_tensor and p.access != "read"]

    def describe(self):
        return f"{self.name}({', '.join(p.describe() for p in self.params)})"

    def bind(self, args, kwargs):
        """Maps positional and keyword arguments to parameter names (TypeError when they
        do not fit). Output-only tensors may be left out (None)."""
        names = [p.name for p in self.params]
        if len(args) > len(names):
            raise TypeError(f"{self.name}() takes {len(names)} arguments "
                            f"({', '.join(names)}), got {len(args)}")
        bound = dict(zip(names, args))
        for key, value in kwargs.items():
            if key not in names:
                raise TypeError(f"{self.name}() got an unexpected argument '{key}'; "
                                f"its parameters are {', '.join(names)}")
            if key in bound:
                raise TypeError(f"{self.name}() got '{key}' both by position and by name")
            bound[key] = value
        for p in self.params:
            value = bound.get(p.name)
            if value is None and not (p.is_tensor and p.output_only):
                raise TypeError(f"{self.name}() is missing '{p.name}' ({p.describe()})")
            bound.setdefault(p.name, None)
        return bound

    def sizes(self, shapes):
        """The size symbols' values from the tensors' shapes ({name: tuple} of the tensors
        given), after checking that every shape agrees with the declared dimensions.
        Returns ({symbol: value} for every symbol, bound and derived ones included)."""
        values = dict(self.bound)
        origin = {}
        for p in self.tensors:
            shape = shapes.get(p.name)
            if shape is None:
                continue
            if len(shape) != len(p.dims):
                raise ArgumentError(f"{self.name}: '{p.name}' must have {len(p.dims)} dimensions "
                                    f"[{', '.join(p.dims)}], got shape {tuple(shape)}")
            for axis, (dim, size) in enumerate(zip(p.dims, shape)):
                size = int(size)
                if dim in self.derived:
                    continue
                expected = int(dim) if dim.lstrip("-").isdigit() else values.get(dim)
                if expected is None:
                    values[dim], origin[dim] = size, (p.name, axis)
                elif expected != size:
                    raise ArgumentError(self._mismatch(p, axis, dim, size, expected, origin))
        for symbol, formula in self.derived.items():
            try:
                values[symbol] = evaluate(formula, values)
            except KeyError as missing:
                raise ArgumentError(f"{self.name}: no tensor gives '{missing.args[0]}', "
                                    f"needed for {symbol} = {formula}") from None
            if values[symbol] < 1:
                raise ArgumentError(f"{self.name}: {symbol} = {formula} would be "
                                    f"{values[symbol]}: the window does not fit the input")
        for p in self.tensors:
            shape = shapes.get(p.name)
            for axis, dim in enumerate(p.dims):
                if dim in self.derived and shape is not None and int(shape[axis]) != values[dim]:
                    raise ArgumentError(f"{self.name}: '{p.name}' dimension {axis} ({dim}) must "
                                        f"be {dim} = {self.derived[dim]} = {values[dim]}, got "
                                        f"{int(shape[axis])}")
        return values

    def _mismatch(self, param, axis, dim, size, expected, origin):
        if dim not in origin and dim not in self.bound:  # a literal (or a -D binding)
            return (f"{self.name}: '{param.name}' dimension {axis} must be {dim}, got {size}; "
                    f"the kernel is {self.describe()}")
        where = (f"as '{origin[dim][0]}' dimension {origin[dim][1]} says" if dim in origin
                 else "fixed when the kernel was compiled")
        return (f"{self.name}: '{param.name}' dimension {axis} ({dim}) is {size}, but {dim} is "
                f"{expected} ({where}); the kernel is {self.describe()}")

    def check_requirements(self, values):
        """Raises ArgumentError for a condition of the host function that the sizes break."""
        for requirement in self.requires:
            if not evaluate(requirement["condition"], values):
                raise ArgumentError(f"{self.name}: {requirement['reason']} "
                                    f"({requirement['condition']} does not hold)")

    def output_shape(self, param, values):
        """The shape of a tensor from the symbols' values (for outputs left out)."""
        shape = []
        for dim in param.dims:
            if dim.lstrip("-").isdigit():
                shape.append(int(dim))
            elif dim in values:
                shape.append(values[dim])
            else:
                raise ArgumentError(f"{self.name}: '{param.name}' was left out, but no other "
                                    f"tensor gives its dimension {dim}: pass '{param.name}'")
        return tuple(shape)


def read_api(document):
    """The signatures of every kernel in a --emit=api document (a dict)."""
    return [Signature(entry) for entry in document["kernels"]]
