"""The CPU workloads bench/advice_accuracy.py profiles and pastes advice into.

Each is a setup (imports, seeds, thread count, data, model, optimizer, loader) and a
cell (the loop a user profiles). Every cell adds the samples it processed to
``samples``, so that a pasted change of batch size or loader is timed in samples/s,
not in steps. Sizes are chosen so that one run of a cell takes 1–3 s on a 2-core
machine; the thread count is fixed per workload, so that runs compare.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Workload:
    """A setup and the loop to profile; ``what`` says in a few words what kind of loop it is."""

    name: str
    what: str
    setup: str
    cell: str


_IMPORTS = """
import time
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset
torch.manual_seed(0)
samples = 0
"""

TRAIN_CELL = """\
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    samples += len(x)
"""

CNN_AUGMENT = Workload("cnn_augment", "small ResNet-style CNN, loader decodes and augments each item", _IMPORTS + """
torch.set_num_threads(1)

class AugmentedImages(Dataset):
    # decode-like work per item: a 3x48x48 uint8 image from its seed, random crop, flip,
    # resize to 32x32, a 3x3 blur and normalization
    blur = torch.full((3, 1, 3, 3), 1 / 9)

    def __len__(self):
        return 256

    def __getitem__(self, i):
        rng = np.random.default_rng(i)
        img = torch.from_numpy(rng.integers(0, 256, (3, 48, 48), dtype=np.uint8)).float() / 255
        top, left = rng.integers(0, 9, 2)
        img = img[:, top:top + 40, left:left + 40]
        if rng.random() < 0.5:
            img = img.flip(2)
        img = F.interpolate(img[None], size=(32, 32), mode="bilinear", align_corners=False)
        img = F.conv2d(img, self.blur, padding=1, groups=3)[0]
        return (img - 0.5) / 0.25, int(rng.integers(0, 10))

class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))

model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(), Block(16),
                      nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), Block(32),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
train_ds = AugmentedImages()
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, num_workers=0)
""", TRAIN_CELL)

IO_BOUND = Workload("io_bound", "wide MLP, 10% of the items wait 15 ms on I/O", _IMPORTS + """
torch.set_num_threads(1)

class Records(Dataset):
    def __init__(self, n):
        self.x, self.y = torch.randn(n, 256), torch.randint(0, 10, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if i % 10 == 3:
            time.sleep(0.015)  # one read in ten waits on storage
        return self.x[i], self.y[i]

model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
train_ds = Records(640)
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
""", TRAIN_CELL)

MLP_SMALL_BATCH = Workload("mlp_b16", "MLP 784-256-10 at batch 16", _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
train_ds = TensorDataset(torch.randn(8192, 784), torch.randint(0, 10, (8192,)))
train_loader = DataLoader(train_ds, batch_size=16, shuffle=True)
""", TRAIN_CELL)

TRANSFORMER_LM = Workload("transformer_lm", "2-layer Transformer LM, batch 8, 64 tokens", _IMPORTS + """
torch.set_num_threads(1)

class TinyLM(nn.Module):
    def __init__(self, vocab=2000, d=128, layers=2, context=64):
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.zeros(context, d))
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(context))

    def forward(self, tokens):
        h = self.embed(tokens) + self.pos[:tokens.shape[1]]
        return self.head(self.body(h, mask=self.mask, is_causal=True))

model = TinyLM()
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
tokens = torch.randint(0, 2000, (192, 65))
train_ds = TensorDataset(tokens[:, :-1], tokens[:, 1:])
train_loader = DataLoader(train_ds, batch_size=8, shuffle=True)
""", """\
for x, y in train_loader:
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    samples += len(x)
""")

SMALL_OPS_INFERENCE = Workload("small_ops_inference", "inference, 100 tiny layers, 20 runs", _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.LayerNorm(16), nn.GELU()) for _ in range(100)]).eval()
test_ds = TensorDataset(torch.randn(80, 16))
test_loader = DataLoader(test_ds, batch_size=4)  # 20 runs
""", """\
with torch.no_grad():
    for (x,) in test_loader:
        out = model(x)
        samples += len(x)
""")

SLOW_ITEMS = Workload("slow_items", "each item waits 3 ms, batch 8, tiny model", _IMPORTS + """
torch.set_num_threads(1)

class SlowItems(Dataset):
    def __init__(self, n):
        self.x, self.y = torch.randn(n, 32), torch.randint(0, 4, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        time.sleep(0.003)  # every item waits on a remote read
        return self.x[i], self.y[i]

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_ds = SlowItems(480)
train_loader = DataLoader(train_ds, batch_size=8, shuffle=True)
""", TRAIN_CELL)

LEAKY_VALIDATION = Workload("leaky_validation", "keeps each validation loss with its graph", _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
x_val, y_val = torch.randn(512, 64), torch.randint(0, 10, (512,))
train_ds = TensorDataset(torch.randn(2560, 64), torch.randint(0, 10, (2560,)))
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
history = []
""", """\
for x, y in train_loader:
    loss = loss_fn(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append(loss_fn(model(x_val), y_val))
    samples += len(x)
""")

WORKLOADS = (CNN_AUGMENT, IO_BOUND, MLP_SMALL_BATCH, TRANSFORMER_LM, SMALL_OPS_INFERENCE, SLOW_ITEMS,
             LEAKY_VALIDATION)
