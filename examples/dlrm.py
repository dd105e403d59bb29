"""Reference example: DLRM (deep learning recommendation model) trained on
synthetic click data. Sparse features go through nn.EmbeddingBag tables
(several ids per bag, summed, given as flat indices plus offsets), dense
features through a bottom MLP; the pairwise dot products of all feature
vectors (the feature interaction) and the dense vector feed a top MLP that
predicts the click. Labels come from a hidden logistic model of the same
features, so the loss has somewhere to go. Prints step, loss and samples/s,
then held-out accuracy and AUC-free calibration figures.

`python examples/dlrm.py` (tpu), `--device cpu` to compare, `--smoke` for a
few steps; `--steps/--batch/--tables/--rows/--dim` size it."""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import finish_args, parser, summary, train  # noqa: E402

DENSE = 13  # dense features, as in the Criteo data DLRM was made for


def mlp(sizes, last_act=True):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_act:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class DLRM(nn.Module):
    def __init__(self, tables, rows, dim):
        super().__init__()
        self.embs = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
        self.bottom = mlp([DENSE, 64, dim])
        n = tables + 1
        self.pairs = torch.triu_indices(n, n, offset=1)  # each unordered pair once
        self.top = mlp([dim + n * (n - 1) // 2, 64, 32, 1], last_act=False)

    def forward(self, dense, indices, offsets):
        # indices[t] / offsets[t]: table t's flat ids and where each bag starts
        x = self.bottom(dense)
        feats = [x] + [emb(indices[t], offsets[t]) for t, emb in enumerate(self.embs)]
        z = torch.stack(feats, dim=1)                      # [batch, tables + 1, dim]
        inter = torch.bmm(z, z.transpose(1, 2))            # all dot products
        i, j = self.pairs.to(z.device)
        flat = inter[:, i, j]                              # the upper triangle
        return self.top(torch.cat([x, flat], dim=1)).squeeze(1)


class ClickData:
    """Synthetic clicks: dense ~ N(0, 1); each table's bags hold one or more
    ids drawn with a skew (popular ids); the click is Bernoulli of a hidden
    logistic score of the dense features and per-id weights."""

    def __init__(self, tables, rows, seed):
        g = torch.Generator().manual_seed(seed + 777)
        self.tables, self.rows = tables, rows
        self.w_dense = torch.randn(DENSE, generator=g) * 0.5
        self.w_ids = torch.randn(tables, rows, generator=g)

    def batch(self, n, g):
        dense = torch.randn(n, DENSE, generator=g)
        score = dense @ self.w_dense
        indices, offsets = [], []
        for t in range(self.tables):
            # bags of 1 or more ids, 2.5 on average; the batch's total is fixed
            # so every step has the same shapes (one compiled program)
            total = n * 5 // 2
            cuts = torch.randperm(total - 1, generator=g)[:n - 1].sort().values + 1
            off = torch.cat([torch.zeros(1, dtype=torch.long), cuts])
            sizes = torch.diff(off, append=torch.tensor([total]))
            ids = (torch.rand(total, generator=g) ** 2 * self.rows).long()
            bag = torch.repeat_interleave(torch.arange(n), sizes)
            score = score + torch.zeros(n).index_add_(0, bag, self.w_ids[t, ids]) / 2
            indices.append(ids)
            offsets.append(off)
        clicks = torch.bernoulli(torch.sigmoid(score), generator=g)
        return dense, indices, offsets, clicks


def main(argv=None):
    p = parser("Train DLRM on synthetic click data.", steps=300, batch=128, log_every=25)
    p.add_argument("--tables", type=int, default=8, help="sparse features (embedding tables)")
    p.add_argument("--rows", type=int, default=1000, help="rows per embedding table")
    p.add_argument("--dim", type=int, default=16, help="embedding dimension")
    args = finish_args(p, argv)
    if args.smoke:
        args.batch, args.tables, args.rows = 32, 3, 100
    dev = torch.device(args.device)
    data = ClickData(args.tables, args.rows, args.seed)
    torch.manual_seed(args.seed)
    model = DLRM(args.tables, args.rows, args.dim).to(dev)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"DLRM: {args.tables} tables x {args.rows} rows x {args.dim}, {n_params:,} parameters on {dev}")
    opt = torch.optim.Adagrad(model.parameters(), lr=args.lr or 0.01)

    def to_dev(b):
        dense, indices, offsets, clicks = b
        return (dense.to(dev), [i.to(dev) for i in indices], [o.to(dev) for o in offsets], clicks.to(dev))

    def batch_fn(step):
        return to_dev(data.batch(args.batch, torch.Generator().manual_seed(args.seed * 100_003 + step)))

    def loss_fn(m, b):
        return F.binary_cross_entropy_with_logits(m(b[0], b[1], b[2]), b[3])

    losses, seconds, steady = train(model, opt, batch_fn, loss_fn, args, "samples", lambda b: len(b[3]))
    dense, indices, offsets, clicks = to_dev(data.batch(2048, torch.Generator().manual_seed(999_999)))
    with torch.no_grad():
        prob = torch.sigmoid(model(dense, indices, offsets)).cpu()
    clicks = clicks.cpu()
    acc = ((prob > 0.5).float() == clicks).float().mean().item()
    print(f"held-out: accuracy {acc:.3f} (always-majority {max(clicks.mean().item(), 1 - clicks.mean().item()):.3f}), "
          f"mean predicted click {prob.mean().item():.3f} vs observed {clicks.mean().item():.3f}")
    return summary("dlrm", args, losses, seconds, steady, "samples", parameters=n_params,
                   heldout_accuracy=round(acc, 4))


if __name__ == "__main__":
    main()
