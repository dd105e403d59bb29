"""JAX side of benchmarks/xla_reference.py; runs in its own venv (.venv-jax).

The minGPT training step of compile_bench.py (2 layers x 128, 4 heads,
vocab 96, batch 16x64, AdamW) written in JAX: the same XLA:CPU compiler as
our CPU plugin, but JAX's own HLO and runtime. It tells what XLA:CPU reaches
on this machine for this step, independent of torch_tpu.

Protocol (one line each way, so that the driver can interleave its variants
block by block): "steps N" -> milliseconds per step of N training steps
run back to back (forward, backward, AdamW; each runs to completion). "program PATH" -> median
milliseconds of one run of the StableHLO module at PATH (random inputs;
donated inputs are made afresh, outside the timed part). "quit".
"""
import re
import statistics
import sys
import time

import jax
import jax.extend

jax.config.update("jax_enable_x64", True)  # our programs take s64 indices
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

V, T, C, H, L, B = 96, 64, 128, 4, 2, 16


def init_params():
    keys = iter(jax.random.split(jax.random.PRNGKey(0), 64))

    def lin(n_in, n_out, bias=True):
        p = {"w": jax.random.normal(next(keys), (n_out, n_in), jnp.float32) * 0.02}
        if bias:
            p["b"] = jnp.zeros((n_out,), jnp.float32)
        return p

    def norm():
        return {"g": jnp.ones((C,), jnp.float32), "b": jnp.zeros((C,), jnp.float32)}

    block = lambda: {"ln1": norm(), "qkv": lin(C, 3 * C), "proj": lin(C, C),  # noqa: E731
                     "ln2": norm(), "fc": lin(C, 4 * C), "out": lin(4 * C, C)}
    return {"wte": jax.random.normal(next(keys), (V, C), jnp.float32) * 0.02,
            "wpe": jax.random.normal(next(keys), (T, C), jnp.float32) * 0.02,
            "blocks": [block() for _ in range(L)], "lnf": norm(), "head": lin(C, V, bias=False)}


def linear(p, x):
    y = x @ p["w"].T
    return y + p["b"] if "b" in p else y


def layer_norm(p, x):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * p["g"] + p["b"]


def loss_fn(params, x, y):
    mask = jnp.tril(jnp.ones((T, T), bool))
    h = params["wte"][x] + params["wpe"][None]
    for b in params["blocks"]:
        qkv = linear(b["qkv"], layer_norm(b["ln1"], h)).reshape(B, T, 3, H, C // H)
        q, k, v = (qkv[:, :, i].transpose(0, 2, 1, 3) for i in range(3))
        att = (q @ k.transpose(0, 1, 3, 2)) * float(1.0 / np.sqrt(C // H))  # weak-typed: stays f32 under x64
        att = jax.nn.softmax(jnp.where(mask, att, -jnp.inf), -1)
        h = h + linear(b["proj"], (att @ v).transpose(0, 2, 1, 3).reshape(B, T, C))
        h = h + linear(b["out"], jax.nn.gelu(linear(b["fc"], layer_norm(b["ln2"], h)),
                                             approximate=False))
    logp = jax.nn.log_softmax(linear(params["head"], layer_norm(params["lnf"], h)), -1)
    return -jnp.take_along_axis(logp, y[..., None], -1).mean()


@jax.jit
def adamw(params, grads, m, v, t, lr=1e-3, b1=0.9, b2=0.999, eps=1e-8, wd=0.01):
    def one(p, g, mi, vi):
        mi = b1 * mi + (1 - b1) * g
        vi = b2 * vi + (1 - b2) * g * g
        p = p * (1 - lr * wd) - lr * (mi / (1 - b1 ** t)) / (jnp.sqrt(vi / (1 - b2 ** t)) + eps)
        return p, mi, vi
    tree = jax.tree.structure(params)
    out = tree.flatten_up_to(jax.tree.map(one, params, grads, m, v))
    return tuple(jax.tree.unflatten(tree, [o[i] for o in out]) for i in range(3))


class Trainer:
    def __init__(self):
        self.params = init_params()
        self.m = jax.tree.map(jnp.zeros_like, self.params)
        self.v = jax.tree.map(jnp.zeros_like, self.params)
        rng = np.random.default_rng(1)
        self.x = jnp.asarray(rng.integers(0, V, (B, T)))
        self.y = jnp.asarray(rng.integers(0, V, (B, T)))
        self.grad = jax.jit(jax.value_and_grad(loss_fn))
        self.t = 1.0
        loss, _ = self.grad(self.params, self.x, self.y)
        if loss.dtype != jnp.float32:  # x64 is on for our programs: no silent f64 math here
            raise TypeError(f"the JAX minGPT computes in {loss.dtype}, not float32")
        for _ in range(3):
            self.step()

    def step(self):
        _, g = self.grad(self.params, self.x, self.y)
        self.params, self.m, self.v = adamw(self.params, g, self.m, self.v, jnp.float32(self.t))
        jax.block_until_ready(self.params)
        self.t += 1


_DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32, "i1": np.bool_}


def time_program(path, runs=30):
    from jax._src.lib import xla_client as xc
    text = open(path).read()
    sig = re.search(r"func\.func public @main\((.*?)\)\s*->", text, re.S).group(1)
    args = re.findall(r"tensor<((?:\d+x)*)(f32|f64|i64|i32|i1)>", sig)
    backend = jax.extend.backend.get_backend()
    dev = backend.local_devices()[0]
    exe = backend.compile_and_load(text, xc.DeviceList((dev,)), xc.CompileOptions())
    rng = np.random.default_rng(0)

    def inputs():
        out = []
        for dims, dt in args:
            shape = tuple(int(d) for d in dims.split("x") if d)
            if dt in ("i64", "i32"):  # indices: kept small so that gathers stay in range
                a = rng.integers(0, 64, size=shape).astype(_DTYPES[dt])
            elif dt == "i1":
                a = rng.integers(0, 2, size=shape).astype(bool)
            else:
                a = rng.standard_normal(shape).astype(_DTYPES[dt])
            out.append(jax.device_put(a, dev))
        return out

    donating = "tf.aliasing_output" in text
    ins, times = inputs(), []
    for i in range(runs + 3):
        if donating:
            ins = inputs()
        t0 = time.perf_counter()
        for o in exe.execute(ins):
            o.block_until_ready()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main():
    trainer = Trainer()
    print("ready", flush=True)
    for line in sys.stdin:
        cmd = line.split(maxsplit=1)
        if not cmd or cmd[0] == "quit":
            break
        if cmd[0] == "steps":
            n = int(cmd[1])
            t0 = time.perf_counter()
            for _ in range(n):
                trainer.step()
            print(f"{(time.perf_counter() - t0) * 1e3 / n:.4f}", flush=True)
        elif cmd[0] == "program":
            print(f"{time_program(cmd[1].strip()):.4f}", flush=True)
        else:
            print(f"error unknown command {cmd[0]!r}", flush=True)


if __name__ == "__main__":
    main()
