"""Custom kernels written in StableHLO (the role Pallas plays for JAX).

    rms_norm = torch_tpu.custom_kernel(
        "mylib::rms_norm",
        forward=FORWARD_TEXT,            # func.func @main(%x, %w) -> tensor<...>
        backward=BACKWARD_TEXT,          # (%x, %w, %grad_y) -> (grad_x, grad_w)
        example_inputs=(torch.randn(4, 64), torch.randn(64)),
    )
    y = rms_norm(x, w)                   # or torch.ops.mylib.rms_norm(x, w)

The kernel becomes a `torch.library` custom op. On tpu tensors it runs the
user's StableHLO function inside the program being built (csrc/ops/
custom_kernel.c: a private function and a `func.call`), so it works in every
eager mode, fused into regions like any op, and in `torch.compile`, where it
appears in the FX graph as `torch.ops.mylib.rms_norm`. The text is checked
and compiled once at registration on the example inputs: a malformed kernel
raises `CustomKernelError` there, with the plugin's diagnostic. The user guide
is docs/custom-kernels.md.
"""
import inspect
import re
import threading

import torch

from . import _C

__all__ = ["custom_kernel", "CustomKernel", "CustomKernelError"]

_DEFAULT_NAMESPACE = "torch_tpu_user"

_ELEMENT_TYPES = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "ui8", torch.bool: "i1",
}
_DTYPES = {v: k for k, v in _ELEMENT_TYPES.items()}

_lock = threading.Lock()
_libraries = {}  # namespace -> torch.library.Library (kept alive: it owns the definitions)
_kernels = {}    # "ns::name" -> CustomKernel


class CustomKernelError(ValueError):
    """A kernel that cannot be registered or called: malformed StableHLO (with
    the plugin's diagnostic), a signature that does not match the arguments,
    or a meta function that disagrees with the kernel's result types."""


def _qualname(name):
    ns, sep, op = name.rpartition("::")
    ns = ns if sep else _DEFAULT_NAMESPACE
    ident = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
    if not ident.match(ns) or not ident.match(op):
        raise CustomKernelError(f"custom_kernel: {name!r} is not a valid op name "
                                "('name' or 'namespace::name', identifiers)")
    if ns == "aten":
        raise CustomKernelError("custom_kernel: the aten namespace belongs to PyTorch")
    return ns, op


def _spec(t):
    """(element type, dims) of a tensor or (shape, dtype) pair."""
    shape, dtype = (t.shape, t.dtype) if isinstance(t, torch.Tensor) else t
    if dtype not in _ELEMENT_TYPES:
        raise CustomKernelError(f"custom_kernel: dtype {dtype} is not supported")
    return (_ELEMENT_TYPES[dtype], [int(d) for d in shape])


def _describe(specs):
    return ", ".join(f"{str(_DTYPES[e]).replace('torch.', '')}{list(d)}" for e, d in specs)


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _kernel_results(qualname, text, specs, what):
    try:
        return _C._custom_kernel_module(qualname, text, specs)
    except ValueError as e:
        raise CustomKernelError(f"{e} ({what})") from None


def _compile_check(qualname, text, specs, what):
    """Compiles the kernel on arguments `specs` with the loaded plugin; returns
    its result specs. A diagnostic's line numbers are the kernel text's own."""
    module, first_line, results = _kernel_results(qualname, text, specs, what)
    try:
        _C._compile_stablehlo(module)
    except RuntimeError as e:
        diag = re.sub(r"-:(\d+):(\d+)",
                      lambda m: f"kernel line {int(m.group(1)) - first_line + 1}, column {m.group(2)}",
                      str(e))
        raise CustomKernelError(
            f"custom kernel {qualname}: the {what} StableHLO does not compile for arguments "
            f"({_describe(specs)}): {diag}") from None
    return results


def _check_meta(qualname, text, meta, specs):
    """Raises CustomKernelError when the kernel does not fit arguments
    `specs`, or when meta's results for them differ from its result types."""
    _, _, results = _kernel_results(qualname, text, specs, "forward")
    if meta is None:
        return
    fakes = [torch.empty(d, dtype=_DTYPES[e], device="meta") for e, d in specs]
    got_specs = [_spec(t) for t in _as_tuple(meta(*fakes))]
    if [(e, tuple(d)) for e, d in got_specs] != [(e, tuple(d)) for e, d in results]:
        raise CustomKernelError(
            f"custom kernel {qualname}: the meta function and the kernel disagree for "
            f"arguments ({_describe(specs)}): meta gives ({_describe(got_specs)}), the "
            f"StableHLO returns ({_describe(results)})")


class CustomKernel:
    """A registered kernel: call it like a function (tpu tensors in, tpu
    tensors out), or through `torch.ops.<namespace>.<name>` (which is what
    `op` is). `register_fake` replaces the meta (shape) function."""

    def __init__(self, qualname, forward, backward, meta, n_args, n_results, arg_names):
        self.name = qualname
        self.forward_text = forward
        self.backward_text = backward
        self.n_args, self.n_results = n_args, n_results
        self._meta = meta
        self._arg_names = arg_names
        self._checked = set()  # argument specs whose meta and kernel results agreed
        ns, op = qualname.split("::")
        self.op = getattr(getattr(torch.ops, ns), op).default
        self.backward_op = (getattr(getattr(torch.ops, ns), op + "_backward").default
                            if backward else None)

    def __repr__(self):
        return (f"CustomKernel({self.name!r}, {self.n_args} tensors -> {self.n_results}, "
                f"backward={'yes' if self.backward_text else 'no'})")

    # ---------------------------------------------------------- shapes
    def _fake(self, *args):
        if self._meta is not None:
            return self._meta(*args)
        specs = [_spec(a) for a in args]
        _, _, results = _kernel_results(self.name, self.forward_text, specs, "forward")
        outs = tuple(torch.empty(d, dtype=_DTYPES[e], device=args[0].device) for e, d in results)
        return outs[0] if self.n_results == 1 else outs

    def _check_meta(self, specs, meta=None):
        _check_meta(self.name, self.forward_text, meta or self._meta, specs)

    def register_fake(self, fn):
        """Decorator: `fn(*tensors)` returns empty tensors shaped like the
        kernel's results (it sees meta/fake tensors). Checked against the
        kernel on every argument shape seen so far."""
        for specs in sorted(self._checked):
            self._check_meta([(e, list(d)) for e, d in specs], fn)
        self._meta = fn
        return fn

    # ---------------------------------------------------------- calls
    def __call__(self, *args, **kwargs):
        if kwargs:  # by the schema's names (the meta function's parameters)
            rest = self._arg_names[len(args):]
            unknown = sorted(set(kwargs) - set(rest))
            if unknown:
                raise TypeError(f"{self.name}() got unexpected keyword argument(s) {unknown}")
            args = args + tuple(kwargs[n] for n in rest if n in kwargs)
        if len(args) != self.n_args:
            raise TypeError(f"{self.name}() takes {self.n_args} tensors "
                            f"({', '.join(self._arg_names)}), got {len(args)}")
        if not torch.compiler.is_compiling() and all(isinstance(a, torch.Tensor) for a in args):
            key = tuple((_ELEMENT_TYPES.get(a.dtype), tuple(a.shape)) for a in args)
            if key not in self._checked and args and args[0].device.type == "tpu":
                self._check_meta([_spec(a) for a in args])
                self._checked.add(key)
        return self.op(*args)


def custom_kernel(name, forward, *, meta=None, backward=None, example_inputs=None,
                  reference=None):
    """Registers a StableHLO kernel as the custom op `name` and returns it.

    name: "namespace::op", or "op" (namespace "torch_tpu_user").
    forward: MLIR text (pretty syntax) of `func.func @main(%a: tensor<...>, ...)
        -> tensor<...>` (optionally inside `module { }`, with helper
        functions). Dimensions may be symbols, `tensor<${N}x${D}xf32>`, bound
        by the arguments' shapes; every `${NAME}` in the text is replaced by
        its value, so one text serves every shape.
    meta: optional `fn(*tensors) -> tensor or tuple` giving the results'
        shapes and dtypes on fake tensors (torch.compile); by default they
        are read from the kernel's result types. `register_fake` sets it too.
    backward: optional MLIR text of the gradient: it takes the forward's
        arguments then one gradient per result, and returns one gradient per
        argument (shaped like it). Registered with
        torch.library.register_autograd.
    example_inputs: tensors (any device) or (shape, dtype) pairs the kernel is
        compiled for at registration; required when the signature uses
        symbols, else the signature's own shapes are used.
    reference: optional plain-PyTorch implementation, registered for CPU
        tensors (so the op also runs off tpu).

    A kernel that does not parse or compile raises CustomKernelError naming
    it, with the plugin's diagnostic (line numbers of your text)."""
    ns, op = _qualname(name)
    qualname = f"{ns}::{op}"
    if not isinstance(forward, str) or (backward is not None and not isinstance(backward, str)):
        raise CustomKernelError(f"custom kernel {qualname}: forward and backward are StableHLO text")
    with _lock:
        old = _kernels.get(qualname)
        if old is not None:
            if old.forward_text == forward and old.backward_text == backward:
                return old
            raise CustomKernelError(f"custom kernel {qualname} is already registered with another "
                                    "text (kernels are immutable: use a new name)")
        return _register(ns, op, qualname, forward, meta, backward, example_inputs, reference)


def _signature(qualname, text, what):
    try:
        return _C._custom_kernel_signature(qualname, text)
    except ValueError as e:
        raise CustomKernelError(f"{e} ({what})") from None


def _register(ns, op, qualname, forward, meta, backward, example_inputs, reference):
    n_args, n_results, templated, sig_specs = _signature(qualname, forward, "forward")
    if example_inputs is not None:
        specs = [_spec(t) for t in _as_tuple(example_inputs)]
    elif templated:
        raise CustomKernelError(f"custom kernel {qualname}: its signature uses ${{...}} symbols; "
                                "pass example_inputs= so it can be compiled at registration")
    else:
        specs = [(e, list(d)) for e, d in sig_specs]
    results = _compile_check(qualname, forward, specs, "forward")
    if backward is not None:
        nb_args, nb_results, _, _ = _signature(qualname, backward, "backward")
        if nb_args != n_args + n_results or nb_results != n_args:
            raise CustomKernelError(
                f"custom kernel {qualname}: the backward must take the {n_args} arguments then "
                f"{n_results} result gradient(s) and return {n_args} gradient(s); it takes "
                f"{nb_args} and returns {nb_results}")
        grads = _compile_check(qualname + "_backward", backward, specs + list(results), "backward")
        if [(e, list(d)) for e, d in grads] != [(e, list(d)) for e, d in specs]:
            raise CustomKernelError(
                f"custom kernel {qualname}: the backward returns ({_describe(grads)}) for "
                f"arguments ({_describe(specs)}); each gradient must match its argument")
    names = _arg_names(meta, n_args)
    _check_meta(qualname, forward, meta, specs)  # before anything is defined

    try:
        _C._custom_kernel_register(qualname, forward)
        if backward is not None:
            _C._custom_kernel_register(qualname + "_backward", backward)
    except ValueError as e:
        raise CustomKernelError(str(e)) from None
    lib = _libraries.get(ns)
    if lib is None:
        lib = _libraries[ns] = torch.library.Library(ns, "FRAGMENT")
    rets = "Tensor" if n_results == 1 else "(" + ", ".join(["Tensor"] * n_results) + ")"
    lib.define(f"{op}({', '.join('Tensor ' + n for n in names)}) -> {rets}")
    if backward is not None:
        grads_in = [f"Tensor grad_{i}" for i in range(n_results)]
        brets = "Tensor" if n_args == 1 else "(" + ", ".join(["Tensor"] * n_args) + ")"
        lib.define(f"{op}_backward({', '.join(['Tensor ' + n for n in names] + grads_in)}) -> {brets}")

    kernel = CustomKernel(qualname, forward, backward, meta, n_args, n_results, names)
    kernel._checked.add(tuple((e, tuple(d)) for e, d in specs))
    torch.library.register_fake(qualname, lambda *a: kernel._fake(*a), lib=lib)
    if reference is not None:
        torch.library.register_kernel(qualname, "cpu", reference, lib=lib)
    if backward is not None:
        torch.library.register_fake(
            qualname + "_backward",
            lambda *a: (torch.empty_like(a[0]) if n_args == 1
                        else tuple(torch.empty_like(t) for t in a[:n_args])), lib=lib)
        _register_autograd(kernel, lib, n_args, n_results)
    _kernels[qualname] = kernel
    return kernel


def _arg_names(meta, n):
    if meta is not None:
        try:
            params = [p.name for p in inspect.signature(meta).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
            if len(params) == n and all(re.match(r"[A-Za-z_][A-Za-z0-9_]*\Z", p) for p in params):
                return params
        except (TypeError, ValueError):
            pass
    return [f"input{i}" for i in range(n)]


def _register_autograd(kernel, lib, n_args, n_results):
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)
        ctx.result_specs = [(o.shape, o.dtype) for o in _as_tuple(output)]

    def backward(ctx, *grads):
        inputs = ctx.saved_tensors
        device = inputs[0].device
        grads = [g if g is not None else torch.zeros(s, dtype=d, device=device)
                 for g, (s, d) in zip(grads, ctx.result_specs)]
        return _as_tuple(kernel.backward_op(*inputs, *grads))

    torch.library.register_autograd(kernel.name, backward, setup_context=setup_context, lib=lib)


def is_custom_kernel(op) -> bool:
    """True for the ops (forward and backward) of a registered kernel."""
    name = op.name() if hasattr(op, "name") else str(op)
    name = name.split(".", 1)[0]
    return name in _kernels or (name.endswith("_backward") and name[:-9] in _kernels
                                and _kernels[name[:-9]].backward_text is not None)
