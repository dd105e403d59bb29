"""A ResNet-18-style convnet (basic residual blocks, [2, 2, 2, 2] stages,
batch norm, ReLU), written here because torchvision does not import beside
the torch wheel. `width` scales every stage (64 = the standard ResNet-18);
`small_input=True` uses a 3x3 stride-1 stem without max pooling, the usual
form for 32x32 images."""
import torch.nn as nn


class BasicBlock(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_ch, out_ch, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_ch)
        self.conv2 = nn.Conv2d(out_ch, out_ch, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_ch)
        self.relu = nn.ReLU(inplace=True)
        self.shortcut = None
        if stride != 1 or in_ch != out_ch:
            self.shortcut = nn.Sequential(nn.Conv2d(in_ch, out_ch, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(out_ch))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = x if self.shortcut is None else self.shortcut(x)
        return self.relu(out + identity)


class ResNet18(nn.Module):
    def __init__(self, num_classes: int = 1000, width: int = 64, small_input: bool = False):
        super().__init__()
        if small_input:
            self.stem = nn.Sequential(nn.Conv2d(3, width, 3, stride=1, padding=1, bias=False),
                                      nn.BatchNorm2d(width), nn.ReLU(inplace=True))
        else:
            self.stem = nn.Sequential(nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False),
                                      nn.BatchNorm2d(width), nn.ReLU(inplace=True),
                                      nn.MaxPool2d(3, stride=2, padding=1))
        stages, in_ch = [], width
        for i, blocks in enumerate([2, 2, 2, 2]):
            out_ch = width * 2 ** i
            layers = []
            for b in range(blocks):
                layers.append(BasicBlock(in_ch, out_ch, stride=2 if (b == 0 and i > 0) else 1))
                in_ch = out_ch
            stages.append(nn.Sequential(*layers))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(in_ch, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.stages(self.stem(x))
        return self.fc(self.pool(x).flatten(1))
