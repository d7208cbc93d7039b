"""A DataLoader suggestion's code rebuilds the user's own loader: pasted into the notebook, the
training loop runs on it as before. A text classifier whose loader pads variable-length
sequences in its ``collate_fn`` is profiled in the real IPython shell, its card's code pasted,
and the loop run on the pasted loader. A loader whose rebuilt call would load other batches
gets no code; a run saved with its loader's extra arguments passes them on by name; and no
card shows code that does not compile.
"""
from __future__ import annotations

import pytest
import torch
from torch.utils.data import DataLoader

from nbprofiler.advice import rules
from nbprofiler.advice.loader_code import args_from_record, dataloader_call
from nbprofiler.advice.suggestion import Suggestion
from nbprofiler.advice.suggestion import fired
from nbprofiler.records import LoaderRecord
from nbprofiler.report import Report

TEXT_SETUP = """
import time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

class Reviews(Dataset):
    # token ids of 5 to 40 tokens, read from slow storage (2 ms an item)
    def __init__(self, n):
        g = torch.Generator().manual_seed(0)
        self.lengths = torch.randint(5, 41, (n,), generator=g)
        self.labels = torch.randint(0, 2, (n,), generator=g)

    def __len__(self):
        return len(self.lengths)

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.arange(int(self.lengths[i])) % 997 + 1, int(self.labels[i])

def pad_batch(items):
    tokens, labels = zip(*items)
    return nn.utils.rnn.pad_sequence(tokens, batch_first=True), torch.tensor(labels)

class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(1000, 16, padding_idx=0)
        self.out = nn.Linear(16, 2)

    def forward(self, tokens):
        return self.out(self.embed(tokens).mean(1))

torch.manual_seed(0)
text_model = Classifier()
text_opt = torch.optim.SGD(text_model.parameters(), lr=0.1)
reviews = Reviews(16 * 10)
review_loader = {loader}
"""

TEXT_LOOP = """
steps_run = 0
for tokens, labels in review_loader:
    loss = F.cross_entropy(text_model(tokens), labels)
    text_opt.zero_grad()
    loss.backward()
    text_opt.step()
    steps_run += 1
"""


def _profiled_card(ip, loader: str) -> Suggestion:
    ip.run_cell(TEXT_SETUP.format(loader=loader)).raise_error()
    ip.run_cell("torch.set_num_threads(1)").raise_error()
    ip.run_cell("%%torchprofile -q -o text_run\n" + TEXT_LOOP).raise_error()
    cards = [s for s in ip.user_ns["text_run"].suggestions if s.kind == "dataloader"]
    assert len(cards) == 1, [s.kind for s in ip.user_ns["text_run"].suggestions]
    return cards[0]


@pytest.fixture()
def threads_back():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_a_padding_loaders_pasted_code_runs_the_loop(ip, threads_back):
    """The card's code keeps the loader's collate_fn: pasted, the loop runs every batch."""
    card = _profiled_card(ip, "DataLoader(reviews, batch_size=16, shuffle=True, collate_fn=pad_batch)")
    assert card.code is not None
    ip.run_cell(card.code).raise_error()
    assert ip.user_ns["review_loader"].num_workers > 0
    ip.run_cell(TEXT_LOOP).raise_error()  # was: RuntimeError: stack expects each tensor to be equal size
    assert ip.user_ns["steps_run"] == 10
    assert ip.user_ns["review_loader"].collate_fn is ip.user_ns["pad_batch"]


def test_a_loader_whose_rebuilt_call_loads_other_batches_gets_no_code(ip, threads_back):
    """A DataLoader subclass that hands out dicts: a plain DataLoader call would hand out tuples,
    and the loop would unpack the dict's keys. The card keeps its advice, shows no code, says why."""
    ip.run_cell("class Keyed(DataLoader):\n"
                "    def __iter__(self):\n"
                "        return ({'tokens': t, 'labels': y} for t, y in super().__iter__())\n").raise_error()
    keyed_loop = TEXT_LOOP.replace("for tokens, labels in review_loader:",
                                   "for batch in review_loader:\n    tokens, labels = batch['tokens'], batch['labels']")
    ip.run_cell(TEXT_SETUP.format(loader="Keyed(reviews, batch_size=16, collate_fn=pad_batch)")).raise_error()
    ip.run_cell("torch.set_num_threads(1)").raise_error()
    ip.run_cell("%%torchprofile -q -o text_run\n" + keyed_loop).raise_error()
    (card,) = [s for s in ip.user_ns["text_run"].suggestions if s.kind == "dataloader"]
    assert card.code is None and "num_workers" in card.title
    assert "no code is shown: the rebuilt loader yields (" in card.detail
    assert "where review_loader yields {" in card.detail


def _record(passed_on) -> LoaderRecord:
    return LoaderRecord(loader_id=1, batch_size=16, num_workers=0, pin_memory=False, persistent_workers=False,
                        prefetch_factor=None, drop_last=False, shuffle=True, dataset_type="Reviews",
                        dataset_length=160, dataset_repr="Reviews", name="review_loader", dataset_name="reviews",
                        passed_on=passed_on)


def test_a_saved_runs_loader_passes_its_other_arguments_on_by_name():
    """A run read back from a file has no live loader: the arguments it recorded go on by the
    loader's name, names outside DataLoader's own are never written, and a run that did not
    record them says so in the code rather than dropping them."""
    code = dataloader_call(args_from_record(_record(("collate_fn", "worker_init_fn", "__import__('os')"))),
                           {"num_workers": 1})
    assert "collate_fn=review_loader.collate_fn," in code and "worker_init_fn=review_loader.worker_init_fn," in code
    assert "import" not in code
    older = dataloader_call(args_from_record(_record(None)), {"num_workers": 1})
    assert older.startswith("# this run did not record your DataLoader's other arguments: keep any your call passes")


def test_the_tuner_and_the_card_write_a_loader_the_same_way():
    """The tuner's code (``args_from_loader``) is the card's (``args_from_record``) for the same loader."""
    from nbprofiler.measure.tuner import args_from_loader

    loader = DataLoader(list(range(8)), batch_size=2, collate_fn=lambda b: b, timeout=5)
    namespace = {"train_loader": loader}
    record = LoaderRecord.of(loader)
    record.name = "train_loader"
    assert record.passed_on == ("collate_fn", "timeout")
    assert dataloader_call(args_from_loader(loader, namespace), {"num_workers": 1}) == \
        dataloader_call(args_from_record(record), {"num_workers": 1})


def test_a_card_whose_code_does_not_compile_shows_none(monkeypatch):
    """Whatever rule wrote it, code that is not Python is not shown."""
    broken = Suggestion(kind="sync", title="t", severity="low", code="x = (", detail="why")
    monkeypatch.setattr(rules, "RULES", [lambda f: [fired("host-device syncs", [broken])]])
    report = Report.from_live(None, _run(), None)
    (card,) = rules.suggest(report)
    assert card.code is None and "not valid Python" in card.detail


def _run():
    import pandas as pd

    from nbprofiler.options import ProfileOptions
    from nbprofiler.records import RunRecord
    from nbprofiler.trace.table import DeviceInfo

    steps = pd.DataFrame({"step": range(4), "phase": "active", "wall_ms": 10.0, "dataloader_ms": 0.0})
    return RunRecord(options=ProfileOptions(), device=DeviceInfo(index=-1, name="CPU", kind="cpu",
                                                                  total_memory_bytes=2**30),
                     steps=steps, loaders=(), step_source="optimizer", cpu_count=2, intra_op_threads=1)
