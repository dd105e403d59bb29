"""Debugging helpers."""
from . import _C


def fallback_report() -> dict:
    """{op name: number of calls that ran on CPU because tpu has no lowering}."""
    return dict(_C._fallback_report())


def reset_fallback_report() -> None:
    _C._reset_fallback_report()


def lowered_ops() -> list:
    """Names of the aten overloads with a native lowering."""
    return sorted(_C._lowered_ops())


def compile_stablehlo(text: str) -> int:
    """Compiles a StableHLO module (MLIR text) with the loaded plugin and
    returns its number of outputs; raises RuntimeError with the plugin's
    diagnostic if it does not compile."""
    return _C._compile_stablehlo(text)


def write_perf_map(path=None):
    """Names the kernels XLA generated so far for `perf report`: writes
    /tmp/perf-<pid>.map (or `path`); returns (path, kernels named). Call it
    after the programs of interest compiled, while perf records. CPU plugin."""
    from ._perf_map import write_perf_map as write
    return write(path)
