"""Reference example: a Diffusers UNet2DModel (small config, random weights)
trained as a DDPM noise predictor on synthetic images (a bright square or
disc of a random colour and place on a dark background), then sampling new
images with a DDIM scheduler in a few steps. Prints step, loss and images/s,
then one sample as ASCII art and the samples' statistics beside the data's.

`python examples/unet.py` (tpu), `--device cpu` to compare, `--smoke` for a
few steps; `--steps/--batch/--size/--width/--sample-steps` size it."""
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import finish_args, parser, summary, train  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def shapes(n, size, g):
    """n images in [-1, 1], [n, 3, size, size]: one square or disc each."""
    yy, xx = torch.meshgrid(torch.arange(size), torch.arange(size), indexing="ij")
    r = torch.randint(size // 6, size // 3 + 1, (n, 1, 1), generator=g)
    cy = torch.randint(0, size, (n, 1, 1), generator=g)
    cx = torch.randint(0, size, (n, 1, 1), generator=g)
    disc = (yy - cy) ** 2 + (xx - cx) ** 2 <= r ** 2
    square = ((yy - cy).abs() <= r) & ((xx - cx).abs() <= r)
    kind = torch.rand(n, 1, 1, generator=g) < 0.5
    mask = torch.where(kind, disc, square).float().unsqueeze(1)
    colour = 0.4 + 0.6 * torch.rand(n, 3, 1, 1, generator=g)
    return (mask * colour) * 2 - 1


def ascii_art(img):
    ramp = " .:-=+*#%@"
    gray = ((img.mean(0) + 1) / 2).clamp(0, 1)
    return "\n".join("".join(ramp[int(v * (len(ramp) - 1))] * 2 for v in row) for row in gray.tolist())


def main(argv=None):
    import diffusers

    p = parser("Train a Diffusers UNet2DModel on synthetic images, then sample.", steps=2000, batch=16,
               smoke_steps=2, log_every=100)
    p.add_argument("--size", type=int, default=16, help="image side")
    p.add_argument("--width", type=int, default=16, help="channels of the first resolution")
    p.add_argument("--sample-steps", type=int, default=20, help="DDIM steps when sampling")
    p.add_argument("--samples", type=int, default=8)
    args = finish_args(p, argv)
    if args.smoke:
        args.batch, args.size, args.width, args.sample_steps, args.samples = 2, 8, 8, 2, 1
    dev = torch.device(args.device)
    torch.manual_seed(args.seed)
    w = args.width
    levels = 2 if args.smoke else 3  # the smoke run compiles a smaller net
    model = diffusers.UNet2DModel(
        sample_size=args.size, in_channels=3, out_channels=3, layers_per_block=1,
        block_out_channels=(w, 2 * w, 2 * w)[:levels],
        down_block_types=("DownBlock2D", "DownBlock2D", "AttnDownBlock2D")[-levels:],
        up_block_types=("AttnUpBlock2D", "UpBlock2D", "UpBlock2D")[:levels],
        norm_num_groups=min(8, w)).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"UNet2DModel: {args.size}x{args.size} images, {n_params:,} parameters on {dev}")
    # 200 timesteps on the cosine schedule: pure noise at the last one, and
    # quick to learn for a small net
    sched_cfg = dict(num_train_timesteps=200, beta_schedule="squaredcos_cap_v2")
    train_sched = diffusers.DDPMScheduler(**sched_cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr or 2e-3)

    def batch_fn(step):
        g = torch.Generator().manual_seed(args.seed * 100_003 + step)
        x = shapes(args.batch, args.size, g)
        noise = torch.randn(x.shape, generator=g)
        t = torch.randint(0, sched_cfg["num_train_timesteps"], (args.batch,), generator=g)
        return train_sched.add_noise(x, noise, t).to(dev), t.to(dev), noise.to(dev)

    def loss_fn(m, b):
        return F.mse_loss(m(b[0], b[1]).sample, b[2])

    model.train()
    losses, seconds, steady = train(model, opt, batch_fn, loss_fn, args, "images", lambda b: len(b[1]))

    model.eval()
    pipe = diffusers.DDIMPipeline(unet=model, scheduler=diffusers.DDIMScheduler(**sched_cfg))
    pipe.set_progress_bar_config(disable=True)
    t = time.time()
    with torch.no_grad():
        imgs = pipe(batch_size=args.samples, num_inference_steps=args.sample_steps, eta=0.0,
                    generator=torch.Generator().manual_seed(args.seed), output_type="pt").images
    sample_s = time.time() - t
    imgs = imgs.cpu() * 2 - 1  # back to [-1, 1]
    real = shapes(256, args.size, torch.Generator().manual_seed(1))
    bright = lambda x: (x.mean(1) > -0.5).float().mean().item()  # share of lit pixels
    print(f"sampled {args.samples} images with {args.sample_steps} DDIM steps in {sample_s:.1f}s; one of them:")
    print(ascii_art(imgs[0]))
    print(f"lit pixels: samples {bright(imgs):.3f}, data {bright(real):.3f}; "
          f"mean value: samples {imgs.mean().item():.3f}, data {real.mean().item():.3f}")
    return summary("unet", args, losses, seconds, steady, "images", parameters=n_params,
                   sample_seconds=round(sample_s, 2), sample_lit_fraction=round(bright(imgs), 4),
                   data_lit_fraction=round(bright(real), 4))


if __name__ == "__main__":
    main()
