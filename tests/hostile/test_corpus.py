"""The hostile-model corpus in CI: a spread sample of malformed models (every fault class, every
seed) loaded, allocated and invoked on the NumPy path, each in a memory-limited worker process;
every one must run or fail with a ModelError / UnsupportedError (no escaping exception types, no
crash, no hang). ``python -m tests.hostile.corpus --full`` runs the whole corpus."""
from __future__ import annotations

import pytest

from tests.hostile import corpus


def test_corpus_is_deterministic() -> None:
    case = corpus.sample(5)[3]
    assert corpus.mutate(*case) == corpus.mutate(*case)
    assert corpus.sample(20) == corpus.sample(20)
    assert {fault for _, fault, _ in corpus.sample(len(corpus.CLASSES))} == set(corpus.CLASSES)


@pytest.mark.model
def test_corpus_sample_errors_are_clean() -> None:
    results = corpus.run_cases(corpus.sample(150))
    bad = [r for r in results if r["outcome"] not in ("ok", "clean")]
    assert not bad, corpus.table(results) + "\n" + "\n".join(
        f"{r['seed']}/{r['fault']}/{r['variant']}: {r['outcome']} {r.get('type', '')}: {r.get('message', '')}"
        for r in bad)
    assert sum(r["outcome"] == "clean" for r in results) > len(results) // 2
