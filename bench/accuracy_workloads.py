"""The CPU workloads bench/advice_accuracy.py profiles and pastes advice into.

Each is a setup (imports, seeds, thread count, data, model, optimizer, loader) and a
cell (the loop a user profiles). Every cell adds the samples it processed to
``samples``, so that a pasted change of batch size or loader is timed in samples/s,
not in steps. Each is a different shape of work (training and inference; loaders with
and without workers, collate functions, per-item decoding and waiting; two optimizers,
accumulation, evaluation inside the loop; tiny, small-op and compute-bound models), sized
so that one pass of its cell takes under 2 s on a 2-core machine; the thread count is fixed
per workload, so that runs compare. ``COMPARE_KNOB`` is the cell ``--compare`` is checked on.
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

_RESNET = """
class Basic(nn.Module):
    # a ResNet basic block: two 3x3 convolutions and a shortcut (1x1 where the shape changes)
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.skip = nn.Sequential()
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        return F.relu(self.skip(x) + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))

def resnet(width, blocks=(2, 2, 2, 2), classes=10):
    layers, cin = [nn.Conv2d(3, width, 3, 1, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU()], width
    for stage, count in enumerate(blocks):
        cout = width * 2 ** stage
        for i in range(count):
            layers.append(Basic(cin, cout, 2 if i == 0 and stage > 0 else 1))
            cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes))
"""

TEXT_PADDING = Workload("text_padding", "text classifier, variable-length reviews padded by a collate_fn",
                        _IMPORTS + """
torch.set_num_threads(1)
from torch.nn.utils.rnn import pad_sequence

class Reviews(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1)
        self.tokens = [torch.randint(1, 5000, (int(k),), generator=g) for k in torch.randint(8, 96, (n,), generator=g)]
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.tokens)

    def __getitem__(self, i):
        return self.tokens[i], self.labels[i]

def pad_collate(batch):
    tokens, labels = zip(*batch)
    return pad_sequence(tokens, batch_first=True, padding_value=0), torch.stack(labels)

class ConvClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(5000, 64, padding_idx=0)
        self.conv = nn.Conv1d(64, 64, 5, padding=2)
        self.head = nn.Linear(64, 2)

    def forward(self, tokens):
        mask = (tokens != 0).unsqueeze(-1).float()
        h = F.relu(self.conv(self.embed(tokens).transpose(1, 2))).transpose(1, 2)
        return self.head((h * mask).sum(1) / mask.sum(1))

model = ConvClassifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
train_ds = Reviews(1024)
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, collate_fn=pad_collate)
""", TRAIN_CELL)

GAN_TWO_OPTIMIZERS = Workload("gan_two_optimizers", "GAN, a generator and a discriminator step per batch",
                              _IMPORTS + """
torch.set_num_threads(1)
G = nn.Sequential(nn.Linear(32, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 64))
D = nn.Sequential(nn.Linear(64, 256), nn.LeakyReLU(0.2), nn.Linear(256, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))
opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
train_ds = TensorDataset(torch.randn(4096, 64) * 0.5 + 1)
train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
""", """\
for (real,) in train_loader:
    fake = G(torch.randn(len(real), 32))
    d_loss = bce(D(real), torch.ones(len(real), 1)) + bce(D(fake.detach()), torch.zeros(len(real), 1))
    opt_d.zero_grad()
    d_loss.backward()
    opt_d.step()
    g_loss = bce(D(fake), torch.ones(len(real), 1))
    opt_g.zero_grad()
    g_loss.backward()
    opt_g.step()
    samples += len(real)
""")

FEATURIZE_INFERENCE = Workload("featurize_inference", "inference, a Python featuriser hashes each token, then an MLP",
                               _IMPORTS + """
torch.set_num_threads(1)
import zlib
import nbprofiler

words = [f"w{i}" for i in range(3000)]
rng = np.random.default_rng(0)
texts = [" ".join(rng.choice(words, 150)) for _ in range(768)]

def featurize(text):
    counts = [0.0] * 1024
    for token in text.split():
        counts[zlib.crc32(token.encode()) % 1024] += 1.0
    return torch.tensor(counts)

model = nn.Sequential(nn.Linear(1024, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 8)).eval()
batch_size = 16
""", """\
with torch.no_grad():
    for i in range(0, len(texts), batch_size):
        x = torch.stack([featurize(t) for t in texts[i:i + batch_size]])
        out = model(x)
        nbprofiler.step()
        samples += len(x)
""")

RESNET_INFERENCE = Workload("resnet_inference", "ResNet-like CNN inference on CPU, batch 8 of 64x64 images",
                            _IMPORTS + _RESNET + """
torch.set_num_threads(1)
model = resnet(16, blocks=(1, 1, 1, 1)).eval()
test_ds = TensorDataset(torch.randn(160, 3, 64, 64))
test_loader = DataLoader(test_ds, batch_size=8)
""", """\
with torch.no_grad():
    for (x,) in test_loader:
        out = model(x)
        samples += len(x)
""")

MLP12_INFERENCE = Workload("mlp12_inference", "inference, 12 x (Linear(64) + GELU + LayerNorm) at batch 8",
                           _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(*[nn.Sequential(nn.Linear(64, 64), nn.GELU(), nn.LayerNorm(64)) for _ in range(12)]).eval()
test_ds = TensorDataset(torch.randn(1600, 64))
test_loader = DataLoader(test_ds, batch_size=8)
""", """\
with torch.no_grad():
    for (x,) in test_loader:
        out = model(x)
        samples += len(x)
""")

RESNET18_AUGMENT = Workload("resnet18_augment", "ResNet-18 of width 16, loader decodes JPEGs, crops and flips; "
                            "2 cores, 2 intra-op threads", _IMPORTS + _RESNET + """
torch.set_num_threads(2)
import io
from PIL import Image

class JpegImages(Dataset):
    # each item: decode a 40x40 JPEG, random 32x32 crop, random flip, normalize
    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.files, self.labels = [], rng.integers(0, 10, n)
        for _ in range(n):
            buf = io.BytesIO()
            Image.fromarray(rng.integers(0, 256, (40, 40, 3), dtype=np.uint8)).save(buf, format="JPEG", quality=90)
            self.files.append(buf.getvalue())

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        img = np.asarray(Image.open(io.BytesIO(self.files[i])).convert("RGB"), dtype=np.float32) / 255
        top, left = np.random.randint(0, 9, 2)
        img = img[top:top + 32, left:left + 32]
        if np.random.rand() < 0.5:
            img = img[:, ::-1]
        x = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)))
        return (x - 0.5) / 0.25, int(self.labels[i])

model = resnet(16)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
train_ds = JpegImages(256)
train_loader = DataLoader(train_ds, batch_size=16, shuffle=True)
""", TRAIN_CELL)

ITEM_LOGGING = Workload("item_logging", "MLP training that reads loss and accuracy with .item() and logs each step",
                        _IMPORTS + """
torch.set_num_threads(1)
import io, logging
log = logging.getLogger("bench.train")
log.setLevel(logging.INFO)
log.propagate = False
log.addHandler(logging.StreamHandler(io.StringIO()))
model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
train_ds = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
""", """\
for step, (x, y) in enumerate(train_loader):
    out = model(x)
    loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    acc = (out.argmax(1) == y).float().mean().item()
    log.info("step %d loss %.4f acc %.3f", step, loss.item(), acc)
    samples += len(x)
""")

LOADER_WITH_WORKERS = Workload("loader_with_workers", "MLP fed by 2 loader workers that parse text records",
                               _IMPORTS + """
torch.set_num_threads(1)

class CsvRecords(Dataset):
    def __init__(self, n):
        rng = np.random.default_rng(0)
        self.lines = [",".join(f"{v:.5f}" for v in rng.standard_normal(64)) + f",{i % 10}" for i in range(n)]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        *values, label = self.lines[i].split(",")
        return torch.tensor([float(v) for v in values]), int(label)

model = nn.Sequential(nn.Linear(64, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
train_ds = CsvRecords(2048)
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True, num_workers=2)
""", TRAIN_CELL)

LSTM_CLASSIFIER = Workload("lstm_classifier", "LSTM sequence classifier, 40 tokens, batch 32", _IMPORTS + """
torch.set_num_threads(1)

class LstmClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 64)
        self.lstm = nn.LSTM(64, 128, batch_first=True)
        self.head = nn.Linear(128, 5)

    def forward(self, tokens):
        _, (h, _) = self.lstm(self.embed(tokens))
        return self.head(h[-1])

model = LstmClassifier()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
train_ds = TensorDataset(torch.randint(0, 1000, (768, 40)), torch.randint(0, 5, (768,)))
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
""", TRAIN_CELL)

EMBEDDING_BAG = Workload("embedding_bag", "click model: EmbeddingBag over variable-length id lists, then an MLP",
                         _IMPORTS + """
torch.set_num_threads(1)

class Sessions(Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(2)
        self.ids = [torch.randint(0, 50000, (int(k),), generator=g) for k in torch.randint(1, 40, (n,), generator=g)]
        self.clicks = torch.randint(0, 2, (n,), generator=g).float()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i], self.clicks[i]

def bag_collate(batch):
    ids, clicks = zip(*batch)
    offsets = torch.tensor([0] + [len(i) for i in ids[:-1]]).cumsum(0)
    return torch.cat(ids), offsets, torch.stack(clicks)

class Clicks(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(50000, 32, mode="mean")
        self.mlp = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))

    def forward(self, ids, offsets):
        return self.mlp(self.bag(ids, offsets)).squeeze(1)

model = Clicks()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
train_ds = Sessions(4096)
train_loader = DataLoader(train_ds, batch_size=64, shuffle=True, collate_fn=bag_collate)
""", """\
for ids, offsets, y in train_loader:
    loss = F.binary_cross_entropy_with_logits(model(ids, offsets), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    samples += len(y)
""")

GRADIENT_ACCUMULATION = Workload("gradient_accumulation", "MLP, 4 batches of 16 accumulated per optimizer step",
                                 _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
accumulate = 4
train_ds = TensorDataset(torch.randn(2048, 256), torch.randint(0, 10, (2048,)))
train_loader = DataLoader(train_ds, batch_size=16, shuffle=True)
""", """\
for i, (x, y) in enumerate(train_loader):
    loss = F.cross_entropy(model(x), y) / accumulate
    loss.backward()
    if (i + 1) % accumulate == 0:
        opt.step()
        opt.zero_grad()
    samples += len(x)
""")

TINY_REGRESSION = Workload("tiny_regression", "regression, 8 features, a 2-layer model of 32 units, batch 32",
                           _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
features = torch.randn(4096, 8)
train_ds = TensorDataset(features, features.sum(1, keepdim=True) + 0.1 * torch.randn(4096, 1))
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
""", """\
for x, y in train_loader:
    loss = F.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    samples += len(x)
""")

CONV_AUTOENCODER = Workload("conv_autoencoder", "convolutional autoencoder on 1x28x28 images, MSE", _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(nn.Conv2d(1, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                      nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(16, 1, 4, 2, 1), nn.Sigmoid())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
train_ds = TensorDataset(torch.rand(1024, 1, 28, 28))
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
""", """\
for (x,) in train_loader:
    loss = F.mse_loss(model(x), x)
    opt.zero_grad()
    loss.backward()
    opt.step()
    samples += len(x)
""")

TRAIN_EVAL_MIX = Workload("train_eval_mix", "training with BatchNorm and dropout, an evaluation every 10 batches",
                          _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(nn.Linear(128, 256), nn.BatchNorm1d(256), nn.ReLU(), nn.Dropout(0.2), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x_val, y_val = torch.randn(1024, 128), torch.randint(0, 10, (1024,))
train_ds = TensorDataset(torch.randn(4096, 128), torch.randint(0, 10, (4096,)))
train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
""", """\
for i, (x, y) in enumerate(train_loader):
    model.train()
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if i % 10 == 9:
        model.eval()
        with torch.no_grad():
            val_acc = (model(x_val).argmax(1) == y_val).float().mean()
    samples += len(x)
""")

AUDIO_CONV1D = Workload("audio_conv1d", "1-D CNN on 4000-sample clips, gradient clipping and an LR schedule",
                        _IMPORTS + """
torch.set_num_threads(1)
model = nn.Sequential(nn.Conv1d(1, 16, 9, 2, 4), nn.ReLU(), nn.Conv1d(16, 32, 9, 2, 4), nn.ReLU(),
                      nn.Conv1d(32, 32, 9, 2, 4), nn.ReLU(), nn.AdaptiveAvgPool1d(1), nn.Flatten(), nn.Linear(32, 8))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=1000)
train_ds = TensorDataset(torch.randn(512, 1, 4000), torch.randint(0, 8, (512,)))
train_loader = DataLoader(train_ds, batch_size=16, shuffle=True)
""", """\
for x, y in train_loader:
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    schedule.step()
    samples += len(x)
""")

WORKLOADS = (CNN_AUGMENT, IO_BOUND, MLP_SMALL_BATCH, TRANSFORMER_LM, SMALL_OPS_INFERENCE, SLOW_ITEMS,
             LEAKY_VALIDATION, TEXT_PADDING, GAN_TWO_OPTIMIZERS, FEATURIZE_INFERENCE, RESNET_INFERENCE,
             MLP12_INFERENCE, RESNET18_AUGMENT, ITEM_LOGGING, LOADER_WITH_WORKERS, LSTM_CLASSIFIER, EMBEDDING_BAG,
             GRADIENT_ACCUMULATION, TINY_REGRESSION, CONV_AUTOENCODER, TRAIN_EVAL_MIX, AUDIO_CONV1D)

# The pair ``--compare`` is checked on: the same cell, run with ``depth`` blocks of equal work and
# then with fewer, so that the second run does about 1.3x less work per step (the bench times the
# two plainly, to state the speed-up it actually is).
COMPARE_DEPTHS = (13, 10)
COMPARE_KNOB = Workload("compare_knob", "MLP whose cell runs the first `depth` of 13 equal blocks", _IMPORTS + """
torch.set_num_threads(1)
blocks = nn.ModuleList(nn.Sequential(nn.Linear(512, 512), nn.ReLU()) for _ in range(13))
head = nn.Linear(512, 10)
opt = torch.optim.SGD([*blocks.parameters(), *head.parameters()], lr=0.01)
train_ds = TensorDataset(torch.randn(1536, 512), torch.randint(0, 10, (1536,)))
train_loader = DataLoader(train_ds, batch_size=64, shuffle=True)
depth = 13
""", """\
for x, y in train_loader:
    h = x
    for block in blocks[:depth]:
        h = block(h)
    loss = F.cross_entropy(head(h), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    samples += len(x)
""")
