"""bench/peers/pytorch_train.py's upload cells, the columns trainbench's GPU backends
fill from prepare_repetition: upload_s as measured and upload_gbps = bytes / upload_s /
1e9 (README "Derived figures"); both empty where nothing was uploaded (the CPU). The
CUDA upload itself needs a GPU; the formula does not."""

import sys

import pytest

from peer_helpers import PEERS

if PEERS not in sys.path:
    sys.path.insert(0, PEERS)
import pytorch_train  # noqa: E402


def test_upload_gbps_is_bytes_per_second_over_1e9():
    cells = pytorch_train.upload_cells((0.25, 3_000_000_000))
    assert float(cells["upload_s"]) == 0.25
    assert float(cells["upload_gbps"]) == pytest.approx(12.0, rel=1e-9)


@pytest.mark.parametrize("uploaded", [None, (0.0, 100)])
def test_nothing_uploaded_leaves_both_cells_empty(uploaded):
    assert pytorch_train.upload_cells(uploaded) == {"upload_s": "", "upload_gbps": ""}
