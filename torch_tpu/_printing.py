"""Printing tpu tensors.

PyTorch formats a tensor on its own device: statistics that choose the
number format (isfinite, masked_select, abs, min, max, a ceil per element)
and then one read per element. On tpu each of those is a program launch
and, the first time, a compile. As PyTorch itself does for xla and lazy
tensors, the contents are formatted from one host copy instead (a dense
tensor is copied without running any program); the rest of the text
(device, dtype, grad_fn) is PyTorch's own."""
import torch._tensor_str as _tensor_str_module

_format_contents = getattr(_tensor_str_module, "_tensor_str", None)


def _tensor_str(self, indent):
    if self.device.type == "tpu":
        self = self.to("cpu")
    return _format_contents(self, indent)


def install():
    """Formats tpu tensors' contents on the host (a no-op if this torch's
    printing module has another layout: printing then stays on the device)."""
    if _format_contents is not None and _tensor_str_module._tensor_str is _format_contents:
        _tensor_str_module._tensor_str = _tensor_str
