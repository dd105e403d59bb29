"""Complex dtypes and FFTs on tpu, against CPU PyTorch.

complex64 (and complex128, which the XLA CPU plugin holds) tensors: host
copies, the elementwise math, matmul and reductions lowered for them, the
views (view_as_real / view_as_complex, .real / .imag, conj bits), the
torch.fft family (lowered to stablehlo.fft), stft/istft, a log-mel
front-end, and autograd through them. The ops listed as native run with no
CPU fallback (torch_tpu.debug.fallback_report()).

Tolerances: 1e-5 relative for transforms of up to 1024 points and for the
elementwise ops; 1e-4 where a result sums many float32 terms (n-d
transforms, stft frames, matmuls, gradients through them), whose rounding
differs between XLA's and pocketfft's orders of summation.
"""
import warnings
import pytest
import torch

import torch_tpu

DEV = "tpu"


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def close(got, want, tol=1e-5):
    got = got.detach().cpu()
    want = want.detach()
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)


def fallbacks():
    return dict(torch_tpu.debug.fallback_report())


@pytest.fixture
def no_fallbacks():
    before = fallbacks()
    yield
    after = fallbacks()
    grown = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    assert not grown, f"ops ran on CPU: {grown}"


# ------------------------------------------------------------- dtype plumbing

@pytest.mark.parametrize("dt", [torch.complex64, torch.complex128])
def test_host_roundtrip_and_dtype(dt, no_fallbacks):
    z = torch.randn(5, 7, dtype=dt)
    t = z.to(DEV)
    assert t.dtype == dt and t.device.type == DEV
    assert torch.equal(t.cpu(), z)
    assert torch.equal(t[1:4, ::2].cpu(), z[1:4, ::2])
    close(t.exp(), z.exp())
    close(torch.fft.fft(t), torch.fft.fft(z))


def test_promotion(no_fallbacks):
    z = torch.randn(4, dtype=torch.complex64)
    f = torch.randn(4)
    d = torch.randn(4, dtype=torch.float64)
    i = torch.arange(4)
    for a, b in [(z, f), (f, z), (z, d), (z, i), (i, z)]:
        close(a.to(DEV) + b.to(DEV), a + b)
        close(a.to(DEV) * b.to(DEV), a * b)
    close(z.to(DEV) * 2.5, z * 2.5)
    close(z.to(DEV) + 3, z + 3)
    close(z.to(DEV) * (1 - 2j), z * (1 - 2j))  # a complex Python number
    close(f.to(DEV).to(torch.complex64), f.to(torch.complex64))
    close(z.to(DEV).to(torch.complex128), z.to(torch.complex128))
    assert torch.promote_types(torch.complex64, torch.float64) == torch.complex128


def test_complex_to_real_copy_keeps_real_part():
    z = torch.randn(6, dtype=torch.complex64)
    out = torch.empty(6, device=DEV)
    with pytest.warns(UserWarning, match="discards the imaginary part"):
        out.copy_(z.to(DEV))
    close(out, z.real.clone())


# ------------------------------------------------------------- elementwise, matmul, reductions

UNARY = ["exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "neg", "reciprocal", "sgn", "angle",
         "abs", "conj_physical", "log2", "log10", "expm1"]


def test_log1p_complex_runs_on_cpu_with_cpus_values():
    # declined on purpose (csrc/ops/unary.c): XLA folded the (x + 1) - 1 of
    # PyTorch's formula, giving -inf for (-1+1e-30j) where CPU gives -69.08
    z = torch.tensor([-1 + 1e-30j, 0.5 + 0.25j, 1e-30 + float("inf") * 1j, 3 - 2j],
                     dtype=torch.complex64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback's warning
        got = torch.log1p(z.to(DEV)).cpu()
    torch.testing.assert_close(got, torch.log1p(z), equal_nan=True)


@pytest.mark.parametrize("name", UNARY)
def test_unary(name, no_fallbacks):
    z = torch.randn(6, 5, dtype=torch.complex64)
    z[0, 0] = 0
    if name in ("log", "rsqrt", "reciprocal"):
        z[0, 0] = 1
    f = getattr(torch, name)
    close(f(z.to(DEV)), f(z))
    if name in ("log", "log2", "log10"):  # log(0) = -inf + 0j
        zero = torch.zeros(2, dtype=torch.complex64)
        close(f(zero.to(DEV)), f(zero))


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div"])
def test_binary(name, no_fallbacks):
    a = torch.randn(6, 5, dtype=torch.complex64)
    b = torch.randn(5, dtype=torch.complex64)
    f = getattr(torch, name)
    close(f(a.to(DEV), b.to(DEV)), f(a, b))
    close(f(a.to(DEV), 0.5), f(a, 0.5))
    t = a.to(DEV)
    getattr(t, name + "_")(b.to(DEV))
    close(t, getattr(a.clone(), name + "_")(b))


@pytest.mark.parametrize("e", [0, 1, 2, 3, -2, -1, 0.5, -0.5, 1.7])
def test_pow(e, no_fallbacks):
    z = torch.randn(4, 5, dtype=torch.complex64)
    close(z.to(DEV) ** e, z ** e, 1e-5)


def test_pow_tensor_exponent(no_fallbacks):
    z = torch.randn(4, 5, dtype=torch.complex64)
    w = torch.randn(4, 5, dtype=torch.complex64) * 0.5
    close(torch.pow(z.to(DEV), w.to(DEV)), torch.pow(z, w), 1e-4)
    close(2 ** w.to(DEV), 2 ** w, 1e-5)
    close(z.to(DEV) ** 1j, z ** 1j, 1e-4)


def test_abs_inplace_refused():
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
        torch.randn(3, dtype=torch.complex64).to(DEV).abs_()


def test_complex_polar(no_fallbacks):
    re, im = torch.randn(4, 3), torch.randn(4, 3)
    close(torch.complex(re.to(DEV), im.to(DEV)), torch.complex(re, im))
    close(torch.polar(re.abs().to(DEV), im.to(DEV)), torch.polar(re.abs(), im))
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float"):
        torch.complex(re.to(DEV), im.double().to(DEV))


def test_matmul_and_reductions(no_fallbacks):
    a = torch.randn(2, 3, 4, dtype=torch.complex64)
    b = torch.randn(2, 4, 5, dtype=torch.complex64)
    close(torch.bmm(a.to(DEV), b.to(DEV)), torch.bmm(a, b), 1e-4)
    close(torch.matmul(a.to(DEV), b.to(DEV)), torch.matmul(a, b), 1e-4)
    close(a[0].to(DEV) @ b[0].to(DEV), a[0] @ b[0], 1e-4)
    # the conjugate bit reaches mm (PyTorch lets it through): resolved first
    close(a[0].to(DEV) @ a[0].to(DEV).mH, a[0] @ a[0].mH, 1e-4)
    close(a.to(DEV).sum(), a.sum(), 1e-4)
    close(a.to(DEV).sum((0, 2)), a.sum((0, 2)), 1e-4)
    close(a.to(DEV).mean(1, keepdim=True), a.mean(1, keepdim=True))


def test_linear_family(no_fallbacks):
    z = torch.randn(6, 5, dtype=torch.complex64)
    a = torch.randn(5, 4, dtype=torch.complex64)
    bias = torch.randn(4, dtype=torch.complex64)
    Z, A, B = z.to(DEV), a.to(DEV), bias.to(DEV)
    close(torch.addmm(B, Z, A, beta=0.5, alpha=2), torch.addmm(bias, z, a, beta=0.5, alpha=2), 1e-4)
    close(torch.addmm(B, Z, A.conj()), torch.addmm(bias, z, a.conj()), 1e-4)
    # two complex Scalars in one call (each becomes a device tensor argument)
    close(torch.addmm(B, Z, A, beta=1 + 2j, alpha=2 - 3j), torch.addmm(bias, z, a, beta=1 + 2j, alpha=2 - 3j),
          1e-4)
    lin = torch.nn.Linear(5, 4, dtype=torch.complex64)
    close(torch.nn.functional.linear(Z, lin.weight.to(DEV), lin.bias.to(DEV)), lin(z), 1e-4)
    b1 = torch.randn(3, 6, 5, dtype=torch.complex64)
    b2 = torch.randn(3, 5, 4, dtype=torch.complex64)
    inp = torch.randn(6, 4, dtype=torch.complex64)
    close(torch.baddbmm(inp.to(DEV), b1.to(DEV), b2.to(DEV)), torch.baddbmm(inp, b1, b2), 1e-4)
    close(torch.addbmm(inp.to(DEV), b1.to(DEV), b2.to(DEV)), torch.addbmm(inp, b1, b2), 1e-4)
    v = torch.randn(5, dtype=torch.complex64)
    close(torch.mv(Z, v.to(DEV)), torch.mv(z, v), 1e-4)
    close(torch.addmv(Z[:, 0], Z, v.to(DEV)), torch.addmv(z[:, 0], z, v), 1e-4)
    close(torch.dot(v.to(DEV).conj(), v.to(DEV)), torch.dot(v.conj(), v))
    close(torch.cumsum(Z, 1), torch.cumsum(z, 1))
    m = torch.rand(6, 5) > 0.5
    close(Z.masked_fill(m.to(DEV), 2 - 1j), z.masked_fill(m, 2 - 1j))


def test_complex_value_into_real_tensor_raises():
    x = torch.randn(3).to(DEV)
    with pytest.raises(RuntimeError, match="without overflow"):
        x.masked_fill(x > 0, 1j)
    with pytest.raises(RuntimeError, match="without overflow"):
        x.fill_(2j)
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.mul_(torch.ones(3, dtype=torch.complex64).to(DEV))
    with pytest.raises(RuntimeError, match="can't be cast"):
        torch.add(x, 1j, out=torch.empty(3, device=DEV))


def test_vdot_conjugates():
    # vdot's lowering does not conjugate: complex vdot runs on CPU, correctly
    v = torch.randn(5, dtype=torch.complex64)
    close(torch.vdot(v.to(DEV), v.to(DEV) * 1j), torch.vdot(v, v * 1j))


# ------------------------------------------------------------- views and conj bits

def test_view_as_real_reads(no_fallbacks):
    z = torch.randn(5, 3, dtype=torch.complex64)
    t = z.to(DEV)
    close(torch.view_as_real(t), torch.view_as_real(z))
    close(t.real, z.real)
    close(t.imag, z.imag)
    close(t.real * 2 + t.imag, z.real * 2 + z.imag)
    r = torch.randn(4, 6, 2)
    close(torch.view_as_complex(r.to(DEV)), torch.view_as_complex(r))
    close(torch.view_as_complex(r.to(DEV)) * 2, torch.view_as_complex(r) * 2)


@pytest.mark.parametrize("mode", ["fused", "strict"])
def test_writes_through_real_views(mode, no_fallbacks):
    # a storage read in the other dtype is reinterpreted (and cuts a fused
    # region), so the sequence is checked in both eager modes
    with torch_tpu.eager_mode(mode):
        writes_through_real_views()


def writes_through_real_views():
    z = torch.randn(5, 3, dtype=torch.complex64)
    t = z.to(DEV)
    torch.view_as_real(t)[:, :, 0].mul_(3)
    torch.view_as_real(z)[:, :, 0].mul_(3)
    close(t, z)
    t.real.add_(1)
    z.real.add_(1)
    t.imag[1:3].zero_()
    z.imag[1:3].zero_()
    close(t, z)
    close(t.sum(), z.sum())  # read back as complex after real writes
    r = torch.randn(3, 4, 2)
    rt = r.to(DEV)
    c = torch.view_as_complex(rt)
    c.mul_(2j)
    close(rt, torch.view_as_real(torch.view_as_complex(r.clone()) * 2j))


def test_conj_bits():
    z = torch.randn(3, 4, dtype=torch.complex64)
    t = z.to(DEV)
    close(t.conj(), z.conj().resolve_conj())
    close(t.conj().resolve_conj(), z.conj().resolve_conj())
    close(t.conj().clone(), z.conj().clone())
    close(t.conj().imag, z.conj().imag)  # a negative-bit real view
    close(t.conj().imag + 1, z.conj().imag + 1)
    u, v = t.clone(), z.clone()
    u.copy_(t.conj())
    v.copy_(z.conj())
    close(u, v)
    u.conj().copy_(t * 2)
    v.conj().copy_(z * 2)
    close(u, v)
    u.conj().mul_(2j)
    v.conj().mul_(2j)
    close(u, v)
    host = torch.zeros(3, 4, dtype=torch.complex64)
    host.copy_(t.conj())
    close(host, z.conj().resolve_conj())


def test_complex_full_and_shape_ops():
    z = torch.randn(3, 4, dtype=torch.complex64)
    t = z.to(DEV)
    close(torch.full((2, 2), 1 + 2j, device=DEV), torch.full((2, 2), 1 + 2j))
    close(torch.zeros(2, 3, dtype=torch.complex64, device=DEV), torch.zeros(2, 3, dtype=torch.complex64))
    close(torch.cat([t, t * 2]), torch.cat([z, z * 2]))
    close(torch.stack([t, t], 1), torch.stack([z, z], 1))
    close(torch.where(t.real > 0, t, t * 2), torch.where(z.real > 0, z, z * 2))
    close(torch.roll(t, 1, 1), torch.roll(z, 1, 1))
    close(t.T.contiguous(), z.T.contiguous())
    assert torch.equal(t.cpu(), z)


# ------------------------------------------------------------- fft family

NORMS = [None, "ortho", "forward"]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("n", [None, 12, 20])
def test_fft_1d(norm, n, no_fallbacks):
    x = torch.randn(4, 16)
    z = torch.randn(4, 16, dtype=torch.complex64)
    for f, a in [(torch.fft.fft, x), (torch.fft.fft, z), (torch.fft.ifft, z), (torch.fft.rfft, x),
                 (torch.fft.irfft, z), (torch.fft.hfft, z), (torch.fft.ihfft, x)]:
        close(f(a.to(DEV), n=n, norm=norm), f(a, n=n, norm=norm))
    close(torch.fft.fft(z.to(DEV), dim=0, norm=norm), torch.fft.fft(z, dim=0, norm=norm))


def test_fft_1024(no_fallbacks):
    x = torch.randn(3, 1024)
    close(torch.fft.rfft(x.to(DEV)), torch.fft.rfft(x), 1e-4)
    z = torch.fft.rfft(x)
    close(torch.fft.irfft(z.to(DEV)), torch.fft.irfft(z))
    close(torch.fft.ifft(torch.fft.fft(x.to(DEV))).real, x)


@pytest.mark.parametrize("norm", NORMS)
def test_fft_nd(norm, no_fallbacks):
    z = torch.randn(3, 4, 6, 8, dtype=torch.complex64)
    r = torch.randn(3, 4, 6, 8)
    Z, R = z.to(DEV), r.to(DEV)
    tol = 1e-4
    close(torch.fft.fft2(Z, norm=norm), torch.fft.fft2(z, norm=norm), tol)
    close(torch.fft.ifft2(Z, norm=norm), torch.fft.ifft2(z, norm=norm), tol)
    close(torch.fft.fftn(Z, norm=norm), torch.fft.fftn(z, norm=norm), tol)  # 4 dims: 3 + 1
    close(torch.fft.ifftn(Z, dim=(0, 2), norm=norm), torch.fft.ifftn(z, dim=(0, 2), norm=norm), tol)
    close(torch.fft.rfft2(R, norm=norm), torch.fft.rfft2(r, norm=norm), tol)
    close(torch.fft.rfftn(R, norm=norm), torch.fft.rfftn(r, norm=norm), tol)
    close(torch.fft.irfft2(Z, norm=norm), torch.fft.irfft2(z, norm=norm), tol)
    close(torch.fft.irfftn(Z, s=(4, 5, 10), norm=norm), torch.fft.irfftn(z, s=(4, 5, 10), norm=norm), tol)
    close(torch.fft.hfft2(Z, norm=norm), torch.fft.hfft2(z, norm=norm), tol)
    close(torch.fft.ihfft2(R, norm=norm), torch.fft.ihfft2(r, norm=norm), tol)
    close(torch.fft.hfftn(Z, norm=norm), torch.fft.hfftn(z, norm=norm), tol)
    close(torch.fft.ihfftn(R, norm=norm), torch.fft.ihfftn(r, norm=norm), tol)


def test_fftshift(no_fallbacks):
    z = torch.randn(5, 6, dtype=torch.complex64)
    close(torch.fft.fftshift(z.to(DEV)), torch.fft.fftshift(z))
    close(torch.fft.ifftshift(z.to(DEV), dim=1), torch.fft.ifftshift(z, dim=1))
    f = torch.fft.fftfreq(8, device=DEV)
    close(torch.fft.fftshift(f), torch.fft.fftshift(torch.fft.fftfreq(8)))


def test_fft_float64(no_fallbacks):
    x = torch.randn(4, 32, dtype=torch.float64)
    close(torch.fft.rfft(x.to(DEV)), torch.fft.rfft(x), 1e-10)
    close(torch.fft.fft2(x.to(DEV)), torch.fft.fft2(x), 1e-10)


def test_fft_errors():
    with pytest.raises(RuntimeError, match="Invalid number of data points"):
        torch.fft.irfft(torch.randn(4, dtype=torch.complex64).to(DEV), n=0)
    with pytest.raises((RuntimeError, IndexError)):
        torch.fft.fft(torch.randn(4).to(DEV), dim=3)


# ------------------------------------------------------------- stft, istft, log-mel

def test_stft_istft(no_fallbacks):
    w = torch.randn(2, 4000)
    win = torch.hann_window(400)
    S = torch.stft(w.to(DEV), 512, hop_length=160, win_length=400, window=win.to(DEV),
                   return_complex=True)
    s = torch.stft(w, 512, hop_length=160, win_length=400, window=win, return_complex=True)
    close(S, s, 1e-4)
    back = torch.istft(S, 512, hop_length=160, win_length=400, window=win.to(DEV), length=4000)
    close(back, torch.istft(s, 512, hop_length=160, win_length=400, window=win, length=4000), 1e-4)
    close(back, w, 1e-4)
    Sr = torch.stft(w.to(DEV), 256, hop_length=64, window=torch.hann_window(256, device=DEV),
                    return_complex=False, center=False)
    close(Sr, torch.stft(w, 256, hop_length=64, window=torch.hann_window(256), return_complex=False,
                         center=False), 1e-4)


def test_stft_of_complex_signal(no_fallbacks):
    w = torch.randn(3, 600, dtype=torch.complex64)
    win = torch.hann_window(128)
    S = torch.stft(w.to(DEV), 128, hop_length=32, window=win.to(DEV), return_complex=True)
    close(S, torch.stft(w, 128, hop_length=32, window=win, return_complex=True), 1e-4)
    back = torch.istft(S, 128, hop_length=32, window=win.to(DEV), return_complex=True, length=600)
    close(back, w, 1e-4)


def logmel(wave, fb):
    win = torch.hann_window(400, device=wave.device)
    spec = torch.stft(wave, 512, hop_length=160, win_length=400, window=win, return_complex=True)
    power = spec.abs() ** 2
    return torch.log(power.transpose(-1, -2) @ fb + 1e-6)


def test_log_mel_frontend(no_fallbacks):
    wave = torch.randn(2, 16000)
    fb = torch.rand(257, 64)
    close(logmel(wave.to(DEV), fb.to(DEV)), logmel(wave, fb), 1e-4)
    w = wave.clone().requires_grad_()
    wt = wave.to(DEV).requires_grad_()
    logmel(w, fb).sum().backward()
    logmel(wt, fb.to(DEV)).sum().backward()
    close(wt.grad, w.grad, 1e-3)


# ------------------------------------------------------------- autograd

def grads(f, *xs, tol=1e-4):
    cx = [x.clone().requires_grad_() for x in xs]
    tx = [x.to(DEV).requires_grad_() for x in xs]
    lc, lt = f(*cx), f(*tx)
    lc.backward()
    lt.backward()
    close(lt, lc, tol)
    for c, t in zip(cx, tx):
        close(t.grad, c.grad, tol)


def test_autograd_fft(no_fallbacks):
    x = torch.randn(4, 64)
    grads(lambda x: torch.fft.rfft(x).abs().pow(2).sum(), x)
    grads(lambda x: torch.fft.irfft(torch.fft.fft(x.to(torch.complex64))[..., :33]).pow(2).sum(), x)
    z = torch.randn(4, 8, dtype=torch.complex64)
    grads(lambda a: torch.fft.ifft2(a.exp()).real.sum() + torch.fft.fftn(a).imag.pow(2).mean(), z)


def test_autograd_complex_mul_abs(no_fallbacks):
    a = torch.randn(4, 8, dtype=torch.complex64)
    b = torch.randn(4, 8, dtype=torch.complex64)
    grads(lambda a, b: (a * b).abs().sum(), a, b, tol=1e-5)
    grads(lambda a, b: torch.view_as_real(a @ b.mT.conj()).pow(2).sum(), a, b)
    grads(lambda a, b: (a / b).angle().sum(), a, b)


def test_fft_mixing_layer(no_fallbacks):
    """An FNet-style token mixer: real(fft2(x)) inside a small training step."""
    torch.manual_seed(1)
    lin = torch.nn.Linear(16, 16)
    x = torch.randn(2, 10, 16)

    def step(model, x):
        y = torch.fft.fft2(model(x).to(torch.complex64)).real
        loss = y.pow(2).mean()
        loss.backward()
        return loss

    lt = torch.nn.Linear(16, 16).to(DEV)
    lt.load_state_dict(lin.state_dict())
    close(step(lt, x.to(DEV)), step(lin, x), 1e-4)
    close(lt.weight.grad, lin.weight.grad, 1e-4)
