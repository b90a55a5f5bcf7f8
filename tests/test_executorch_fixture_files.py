"""The committed ExecuTorch fixtures are whole and agree with their manifest (no ExecuTorch needed).

The programs themselves are read by the ExecuTorch reader's tests; this only guards the files:
a fixture regenerated without its manifest (or the reverse), a stray or missing file, or a size
blow-up fails here.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "executorch"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
ENTRIES = MANIFEST["fixtures"]


def test_manifest_lists_exactly_the_files() -> None:
    names = [e["name"] for e in ENTRIES]
    assert len(names) == len(set(names))
    for suffix in (".pte", ".npz"):
        assert sorted(p.stem for p in FIXTURES.glob(f"*{suffix}")) == sorted(names), suffix
    not_written = {nd["fixture"] for nd in MANIFEST["not_delegated"]} - set(names)
    assert not any((FIXTURES / f"{n}.pte").exists() for n in not_written)


def test_size_budget() -> None:
    total = sum(p.stat().st_size for p in FIXTURES.iterdir() if p.suffix in (".pte", ".npz"))
    assert total < 3 * 1024 * 1024, total
    assert max(e["pte_bytes"] for e in ENTRIES) < 100 * 1024


def test_coverage_of_the_request() -> None:
    """Every kind of program the ExecuTorch issue asks fixtures for is here."""
    by_name = {e["name"]: e for e in ENTRIES}
    assert {e["precision"] for e in ENTRIES} == {"fp32", "int8", "qd8"}
    assert any(e["delegate_calls"] >= 2 and e["kind"] == "network" for e in ENTRIES)
    assert any("aten::native_layer_norm" in e["kernel_calls"] for e in ENTRIES)
    for precision in ("fp32", "int8"):
        assert by_name[f"net_mobilenetv2_{precision}"]["classifier"]
    assert "XNNConvert" in by_name["qd8_linear"]["xnode_types"]
    assert "qdint8" in by_name["qd8_linear"]["xnn_datatypes"]
    covered = {t for e in ENTRIES for t in e["xnode_types"]}
    assert not covered & set(MANIFEST["xnode_types_not_covered"])
    assert len(covered) >= 44


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["name"] for e in ENTRIES])
def test_fixture_matches_manifest(entry: dict) -> None:
    pte = (FIXTURES / f"{entry['name']}.pte").read_bytes()
    assert len(pte) == entry["pte_bytes"]
    assert hashlib.sha256(pte).hexdigest() == entry["sha256"]
    assert pte[4:8] == b"ET12"
    assert entry["kind"] in ("node", "network") and entry["precision"] in ("fp32", "int8", "qd8")
    assert entry["xnode_types"] == sorted(entry["xnode_types"])
    # a program with no delegate call is an fp32 one the partitioner left to portable kernels
    portable_only = entry["delegate_calls"] == 0
    assert not portable_only or (entry["precision"] == "fp32" and not entry["xnode_types"]
                                 and entry["kernel_calls"]), entry["name"]
    with np.load(FIXTURES / f"{entry['name']}.npz") as data:
        n_in, n_out = len(entry["inputs"]), len(entry["outputs"])
        assert sorted(data.files) == sorted([f"input_{k}" for k in range(n_in)]
                                            + [f"output_{k}" for k in range(n_out)])
        for k, meta in enumerate(entry["inputs"]):
            assert list(data[f"input_{k}"].shape) == meta["shape"] and str(data[f"input_{k}"].dtype) == meta["dtype"]
        outputs = [data[f"output_{k}"] for k in range(n_out)]
    for y, meta in zip(outputs, entry["outputs"]):
        assert list(y.shape) == meta["shape"] and str(y.dtype) == meta["dtype"]
        assert np.isfinite(y).all()
    if entry["classifier"]:
        logits = outputs[0].reshape(-1, outputs[0].shape[-1])
        assert list(np.argmax(logits, axis=-1)) == entry["top1"]
