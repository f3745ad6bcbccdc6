"""The labelled real PDFs of ``../shared/corpus`` and ``../shared/corpus-next``, read in place.

Each folder has a ``labels.json`` (``valid``, ``invalid``, ``unreadable``, ``encrypted``).
Tests are parametrised over :func:`corpus_pdfs` at collection time; a folder without its labels
yields one placeholder, so its tests still exist and skip with the reason (fail under
``CI=true``) through :meth:`CorpusPdf.path`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tests.support.services import CORPUS, CORPUS_NEXT, refuse_unmarked, unavailable

MISSING = "(labels.json missing)"
"""The name of the placeholder a folder without labels yields."""


def require_corpus(folder: Path) -> Path:
    """``folder``, or skip (fail under ``CI=true``) when its ``labels.json`` is absent."""
    refuse_unmarked("the shared corpus", "corpus")
    if not (folder / "labels.json").exists():
        env = "SAGAGRAPH_CORPUS_NEXT" if folder == CORPUS_NEXT else "SAGAGRAPH_CORPUS"
        unavailable(f"corpus at {folder}", f"labels.json not found (set {env})")
    return folder


def read_labels(folder: Path) -> dict[str, str]:
    """``labels.json`` of ``folder`` without its ``_about`` note; {} when absent."""
    try:
        labels: dict[str, str] = json.loads((folder / "labels.json").read_text())
    except OSError:
        return {}
    labels.pop("_about", None)
    return labels


@dataclass(frozen=True)
class CorpusPdf:
    """One labelled PDF of a corpus folder."""

    folder: Path
    name: str
    """Path inside the folder (``papers/x.pdf``)."""
    label: str

    @property
    def id(self) -> str:
        """``corpus/papers/x.pdf``: unique across folders, for test ids."""
        return f"{self.folder.name}/{self.name}"

    @property
    def file_name(self) -> str:
        return self.name.rsplit("/", 1)[-1]

    def path(self) -> Path:
        """The file, or skip (fail under CI) when its folder's labels are absent."""
        return require_corpus(self.folder) / self.name


def corpus_pdfs(*folders: Path) -> list[CorpusPdf]:
    """Every labelled PDF of ``folders`` (default: the corpus and corpus-next), sorted."""
    out: list[CorpusPdf] = []
    for folder in folders or (CORPUS, CORPUS_NEXT):
        labels = read_labels(folder) or {MISSING: "valid"}
        out += [CorpusPdf(folder, name, label) for name, label in sorted(labels.items())]
    return out
