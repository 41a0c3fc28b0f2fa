"""A model's sentence index: one encoder vector per training pair, projected onto its ``DIMS`` main directions and
quantised to int8, beside the pairs' texts, in one compressed ``.npz`` (64 bytes a pair: 7.6 MB for the shipped
model's 118,825). ``lookup`` finds the best candidates in it and recomputes their states exactly.

The pairs are the ones the model's training read (``training.prepare.model_split``), at most ``MAX_PAIRS``. A
sentence's encoder vector is the encoder output averaged over the source's real tokens (not padding, not EOS: EOS is
the same token in every sentence), as a unit vector: compared by cosine.

Where one lies: ``sentence_index.npz`` beside the model (the shipped model's made by ``python -m workshop
neighbours-index``, a run's by the page), else in the runs folder's ``neighbours/`` named by the weights' sha256:
the page never writes into a model folder outside the runs folder.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import Tensor

from data.batch import batch_indices, collate, encode_pairs
from data.readers import CorpusError, Pair
from data.split_record import file_sha256
from model.run_dir import DATA_REPORT_FILE, NEIGHBOURS_INDEX_FILE, SPLIT_RECORD_FILE, WEIGHTS_FILE, split_file
from model.weights import write_beside
from training.prepare import model_data, model_split
from translate.model_dir import weights_dir
from translate.settings import repo_relative
from translate.translator import Translator

MAX_PAIRS = 120_000  # the shipped model's training split (118,825 pairs) fits whole
SEED = 1  # a split over the cap is sampled, the same way every build
DIMS = 64  # projected dimensions kept, one int8 each
CACHE_DIR = "neighbours"  # in the runs folder, for model folders outside it
BATCH_TOKENS = 4096  # padded tokens per forward pass
SEPARATOR = "\n"  # between the texts stored in one array (a TSV line holds no newline)

Progress = Callable[[int, int], None]  # (pairs done, pairs in all); it may raise to stop the build


class NeighboursError(ValueError):
    """No training pairs to index; the message names the file and what was expected."""


@dataclass(frozen=True)
class TrainingPairs:
    pairs: list[Pair]
    origin: str  # where they come from, in words
    source: Path  # the file read
    available: int  # pairs to index before the cap


def capped(pairs: list[Pair], cap: int) -> list[Pair]:
    """At most ``cap`` of ``pairs``, a fixed sample in their own order."""
    if len(pairs) <= cap:
        return pairs
    keep = sorted(random.Random(SEED).sample(range(len(pairs)), cap))
    return [pairs[i] for i in keep]


def training_pairs(model_dir: Path, cap: int = MAX_PAIRS) -> TrainingPairs:
    model_dir = Path(model_dir)
    try:
        pairs, data = model_split(model_dir).train, model_data(model_dir)
    except CorpusError as err:
        raise NeighboursError(str(err)) from None
    if not pairs:
        raise NeighboursError(f"{model_dir}: its training split holds no pairs")
    if split_file(model_dir, "train").is_file():
        origin, source = "this run's training pairs (splits/train.tsv)", split_file(model_dir, "train")
    else:
        names = ", ".join(Path(c).name for c in data.corpora)
        origin = (
            f"the training pairs of its corpus ({names}): all but the dev and test pairs in its {SPLIT_RECORD_FILE}"
        )
        source = Path(data.corpora[0])
        report = json.loads((model_dir / DATA_REPORT_FILE).read_text(encoding="utf-8"))  # model_split checked it
        if (more := report.get("splits", {}).get("train", 0) - len(pairs)) > 0:
            origin += f"; {more:,} more pairs it trained on (a teacher's translations, {DATA_REPORT_FILE}) not indexed"
    return TrainingPairs(capped(pairs, cap), origin, source, len(pairs))


def unit(x: Tensor) -> Tensor:
    """Rows scaled to length 1 (a zero row stays zero)."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-6)


def unit_vector(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-6)


def sentence_vectors(memory: Tensor, src: Tensor, pad_id: int, eos_id: int) -> Tensor:
    """(B, S, D) memory, (B, S) ids -> (B, D): the mean over real tokens; EOS alone for an empty source."""
    real = (src != pad_id) & (src != eos_id)
    real = real | ((real.sum(dim=1, keepdim=True) == 0) & (src == eos_id))  # an empty source: its EOS
    weights = real.unsqueeze(-1).to(memory.dtype)  # (B, S, 1)
    return (memory * weights).sum(dim=1) / weights.sum(dim=1)


@dataclass(frozen=True)
class IndexInfo:
    """What the page says about an index."""

    model: str  # the model folder, relative to the repository: a build machine's own paths are never stored
    weights_sha256: str
    origin: str  # the training pairs, in words
    available: int  # pairs there to index, before the cap
    pairs: int  # pairs indexed
    dims: int  # projected dimensions
    seconds: float  # build time
    built: str  # when (UTC)


@dataclass(frozen=True)
class SentenceIndex:
    info: IndexInfo
    sources: list[str]
    targets: list[str]
    codes: np.ndarray  # (N, P) int8: each pair's unit encoder vector projected on ``basis``, over ``scale``
    basis: np.ndarray  # (D, P) float32: the top eigenvectors of the vectors' second moment, largest first
    scale: np.ndarray  # (P,) float32: column j's code 1 stands for scale[j]

    def similarities(self, vector: np.ndarray) -> np.ndarray:
        """(N,) approximate cosines with ``vector``: they only choose the candidates ``lookup`` then recomputes."""
        query = unit_vector(vector) @ self.basis * self.scale  # (P,)
        return self.codes.astype(np.float32) @ query.astype(np.float32)


def weights_sha256(model_dir: Path) -> str:
    return file_sha256(weights_dir(Path(model_dir)) / WEIGHTS_FILE)


def index_path(model_dir: Path, runs: Path, sha256: str) -> Path:
    """Where a new index of ``model_dir`` is written: beside it in the runs folder, else in the runs folder's cache."""
    model_dir, runs = Path(model_dir).resolve(), Path(runs).resolve()
    inside = model_dir.is_relative_to(runs)
    return model_dir / NEIGHBOURS_INDEX_FILE if inside else runs / CACHE_DIR / f"{sha256}.{NEIGHBOURS_INDEX_FILE}"


@torch.no_grad()
def vectors_of(translator: Translator, pairs: list[Pair], progress: Progress) -> np.ndarray:
    """(N, D) float32 unit encoder vectors of ``pairs`` (the encoder alone), in batches of similar lengths."""
    model, c = translator.model, translator.model.config
    examples = encode_pairs(pairs, translator.tokenizer, c.max_positions)
    vectors = np.zeros((len(pairs), c.d_model), np.float32)
    done = 0
    for rows in batch_indices(examples, BATCH_TOKENS, seed=0, epoch=0, shuffle=False):
        src = collate([examples[i] for i in rows], c.pad_id, c.bos_id).src.to(next(model.parameters()).device)
        vectors[rows] = unit(sentence_vectors(model.encode(src).memory, src, c.pad_id, c.eos_id)).float().cpu().numpy()
        done += len(rows)
        progress(done, len(pairs))
    return vectors


def compact(vectors: np.ndarray, dims: int = DIMS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes, basis, scale): ``vectors`` on their ``dims`` main directions (not centred, so that dot products,
    not distances from the mean, are kept), each column rounded to int8 over its own largest value."""
    _, eigenvectors = np.linalg.eigh(vectors.T @ vectors)  # ascending eigenvalues
    basis = np.ascontiguousarray(eigenvectors[:, ::-1][:, :dims], np.float32)  # (D, P)
    projected = vectors @ basis  # (N, P)
    scale = np.maximum(np.abs(projected).max(axis=0), 1e-12).astype(np.float32) / 127
    return np.round(projected / scale).astype(np.int8), basis, scale


def build(translator: Translator, model_dir: Path, progress: Progress) -> tuple[SentenceIndex, np.ndarray]:
    """The index of the model's training pairs (``training_pairs``), and their exact (N, D) vectors."""
    start = time.perf_counter()
    found = training_pairs(model_dir)
    progress(0, len(found.pairs))
    vectors = vectors_of(translator, found.pairs, progress)
    codes, basis, scale = compact(vectors)
    info = IndexInfo(
        repo_relative(Path(model_dir).resolve()),
        weights_sha256(model_dir),
        found.origin,
        found.available,
        len(found.pairs),
        basis.shape[1],
        round(time.perf_counter() - start, 1),
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )
    texts = [p.src for p in found.pairs], [p.tgt for p in found.pairs]
    return SentenceIndex(info, *texts, codes, basis, scale), vectors


def text_array(texts: list[str]) -> np.ndarray:
    return np.frombuffer(SEPARATOR.join(texts).encode("utf-8"), np.uint8)


def save(index: SentenceIndex, path: Path) -> None:
    """Written to a file of its own beside ``path`` and renamed into it: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    arrays = {"info": text_array([json.dumps(asdict(index.info))])}
    arrays |= {"sources": text_array(index.sources), "targets": text_array(index.targets)}
    arrays |= {"codes": index.codes, "basis": index.basis, "scale": index.scale}
    write_beside(path, lambda f: np.savez_compressed(f, **arrays))


def load(path: Path) -> SentenceIndex:
    """An index saved by ``save``; a file that is not one is an error naming it."""
    try:
        with np.load(path, allow_pickle=False) as f:
            texts = {k: f[k].tobytes().decode("utf-8").split(SEPARATOR) for k in ("info", "sources", "targets")}
            arrays = [f[k] for k in ("codes", "basis", "scale")]
        info = IndexInfo(**json.loads(texts["info"][0]))
    except (OSError, ValueError, KeyError, TypeError, EOFError) as err:
        raise NeighboursError(f"{path}: not a sentence index ({err})") from None
    return SentenceIndex(info, texts["sources"], texts["targets"], *arrays)


def load_or_build(
    translator: Translator, model_dir: Path, runs: Path, progress: Progress
) -> tuple[SentenceIndex, bool]:
    """The index of these weights from beside the model or the cache, else built and saved; whether it was loaded."""
    sha256 = weights_sha256(model_dir)
    path = index_path(model_dir, runs, sha256)
    for known in dict.fromkeys([Path(model_dir) / NEIGHBOURS_INDEX_FILE, path]):
        try:
            if known.is_file() and (index := load(known)).info.weights_sha256 == sha256:
                return index, True
        except NeighboursError:
            pass  # a broken or foreign file: built again (over it, when it is the one to write)
    index, _ = build(translator, model_dir, progress)
    save(index, path)
    return index, False
