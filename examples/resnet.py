"""Reference example: a ResNet-18-style convnet (examples/models/resnet.py,
written out because torchvision does not import here) trained to classify
synthetic 32x32 images: each of 10 classes is a fixed random low-frequency
pattern, seen under noise, a random brightness and a random shift, so the
task is learnable but not instant. Prints step, loss and images/s, then the
accuracy on a held-out batch.

`python examples/resnet.py` (tpu), `--device cpu` to compare, `--smoke` for
a few steps; `--steps/--batch/--width` size it."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import finish_args, parser, summary, train  # noqa: E402
from models.resnet import ResNet18  # noqa: E402

CLASSES = 10


def templates(seed):
    g = torch.Generator().manual_seed(seed + 12345)
    low = torch.randn(CLASSES, 3, 8, 8, generator=g)
    return F.interpolate(low, size=(32, 32), mode="bilinear", align_corners=False)


def make_batch(tmpl, n, g):
    y = torch.randint(0, CLASSES, (n,), generator=g)
    x = tmpl[y] * (0.5 + torch.rand(n, 1, 1, 1, generator=g))
    shift = torch.randint(-3, 4, (2,), generator=g).tolist()
    x = torch.roll(x, shifts=shift, dims=(2, 3))
    return x + 0.8 * torch.randn(x.shape, generator=g), y


def main(argv=None):
    p = parser("Train a ResNet-18-style net on synthetic images.", steps=200, batch=32, log_every=20)
    p.add_argument("--width", type=int, default=32, help="channels of the first stage (64 = ResNet-18)")
    args = finish_args(p, argv)
    if args.smoke:
        args.batch, args.width = 8, 8
    dev = torch.device(args.device)
    tmpl = templates(args.seed)
    torch.manual_seed(args.seed)
    model = ResNet18(num_classes=CLASSES, width=args.width, small_input=True).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"ResNet-18 (width {args.width}): {n_params:,} parameters on {dev}")
    opt = torch.optim.SGD(model.parameters(), lr=args.lr or 0.05, momentum=0.9, weight_decay=5e-4)

    def batch_fn(step):
        x, y = make_batch(tmpl, args.batch, torch.Generator().manual_seed(args.seed * 100_003 + step))
        return x.to(dev), y.to(dev)

    def loss_fn(m, b):
        return F.cross_entropy(m(b[0]), b[1])

    model.train()
    losses, seconds, steady = train(model, opt, batch_fn, loss_fn, args, "images", lambda b: len(b[1]))
    model.eval()
    x, y = make_batch(tmpl, 256, torch.Generator().manual_seed(999_999))
    with torch.no_grad():
        acc = (model(x.to(dev)).argmax(1).cpu() == y).float().mean().item()
    print(f"held-out accuracy: {acc:.3f} (chance {1 / CLASSES:.2f})")
    return summary("resnet", args, losses, seconds, steady, "images", parameters=n_params,
                   heldout_accuracy=round(acc, 4))


if __name__ == "__main__":
    main()
