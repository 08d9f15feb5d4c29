"""A torchvision-style CNN on a small synthetic image set: a Dataset with tensor augmentation
(random horizontal flips and padded random crops), a DataLoader, Conv-BN-ReLU(inplace=True)
blocks with a residual shortcut (`out += shortcut(x)`), SGD with Nesterov momentum and weight
decay, label smoothing, and a per-step CosineAnnealingLR; evaluation logits at the end.
Augmentation decisions come from a seeded NumPy generator (deterministic mode: tests/porting)."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.optim.lr_scheduler import CosineAnnealingLR

COMPILE = None  # set by the harness: None, "compile" or "fused"


class Augmented(Dataset):
    def __init__(self, images, labels, seed):
        self.images, self.labels = images, labels
        self.rng = np.random.default_rng(seed)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.images[i]
        if self.rng.random() < 0.5:
            x = torch.flip(x, dims=[2])
        dy, dx = (int(v) for v in self.rng.integers(0, 5, size=2))
        x = F.pad(x, (2, 2, 2, 2))[:, dy:dy + 16, dx:dx + 16]
        return x, self.labels[i]


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return self.relu(out)


class Net(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(inplace=True))
        self.layer1 = BasicBlock(8, 8, 1)
        self.layer2 = BasicBlock(8, 16, 2)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(16, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def build():
    torch.manual_seed(0)
    return Net()


def main(model):
    rng = np.random.default_rng(0)
    images = torch.tensor(rng.standard_normal((64, 3, 16, 16)), dtype=torch.get_default_dtype())
    labels = torch.tensor(rng.integers(0, 4, 64))
    loader = DataLoader(Augmented(images[:48], labels[:48], seed=1), batch_size=16, shuffle=False)
    epochs = 2
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4, nesterov=True)
    sched = CosineAnnealingLR(opt, T_max=epochs * len(loader))
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    net = torch.compile(model) if COMPILE == "compile" else model
    if COMPILE == "fused":
        step = torch.compile.fused_step(model, criterion, opt)
    losses, lrs = [], []
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            if COMPILE == "fused":
                loss = step(x, y)
            else:
                opt.zero_grad()
                loss = criterion(net(x), y)
                loss.backward()
                opt.step()
            sched.step()
            losses.append(loss.item())
            lrs.append(sched.get_last_lr()[0])
    model.eval()
    with torch.no_grad():
        logits = net(images[48:])
    correct = (logits.argmax(dim=1) == labels[48:]).sum().item()
    return {"losses": losses, "lrs": lrs, "logits": logits, "correct": correct,
            "running_mean": model.layer2.bn2.running_mean}
