"""The code of the number-format suggestions that are settings, not edits of the step:
TF32 for fp32 matmuls, and FP8 for the large Linear layers.

(Autocast wraps the cell's own forward lines: ``step_code.autocast_code``.) Both snippets
run when pasted into the cell that was profiled: TF32 is two flags; FP8 installs torchao if
it is missing (it requires no particular torch, so the install leaves torch as it is),
converts the model in the cell's own name, or under a guard where the cell shows none.
"""
from __future__ import annotations

from .cell_names import model_code

TF32_CODE = (
    "import torch\n"
    "torch.backends.cuda.matmul.allow_tf32 = True  # fp32 matmuls on TF32 tensor cores: fp32's range, "
    "a 10-bit mantissa\n"
    "torch.backends.cudnn.allow_tf32 = True  # convolutions too (PyTorch's default)"
)


def fp8_code(model: str | None, min_size: int) -> str:
    """Convert ``model``'s Linear layers whose sizes are at least ``min_size`` to torchao's FP8
    training, and compile it (which fuses the FP8 scaling and casts into their neighbours)."""
    return (
        "import importlib.util, subprocess, sys\n"
        "import torch\n"
        "if importlib.util.find_spec(\"torchao\") is None:  # torchao's FP8 training\n"
        "    subprocess.check_call([sys.executable, \"-m\", \"pip\", \"install\", \"-q\", \"torchao\"])\n"
        "from torchao.float8 import convert_to_float8_training\n"
        "\n"
        "\n"
        "def large_linear(module: torch.nn.Module, name: str) -> bool:\n"
        "    \"\"\"FP8 only for large layers: on small ones the casts cost more than they save.\"\"\"\n"
        "    return (isinstance(module, torch.nn.Linear)\n"
        f"            and min(module.in_features, module.out_features) >= {min_size}\n"
        "            and module.in_features % 16 == 0 and module.out_features % 16 == 0)\n"
        "\n"
        "\n"
        + model_code(model, "torch.compile(convert_to_float8_training({}, module_filter_fn=large_linear))",
                     "FP8 matmuls in the large Linear layers, compiled to fuse their casts")
    )
