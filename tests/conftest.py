import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for path in (ROOT, ROOT / "tests"):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

import torch

# Tests drive thousands of tiny forwards; one intra-op thread avoids pool hand-offs dominating them.
torch.set_num_threads(1)
