"""A model's neighbour index: every indexed training pair's encoder vector and a few decoder states, in float16,
built once and cached as one ``.npz`` (``lab/neighbours/lookup`` searches it).

The cache lies beside a run (``neighbours_index.npz`` in its folder) when the model is in the runs folder, else in
the runs folder's ``neighbours/`` named by the weights' sha256: a shipped model's folder is never written.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from data.batch import batch_indices, encode_pairs
from data.readers import Pair
from data.split_record import file_sha256
from lab.neighbours.hidden_states import POSITIONS, batch_states, kept_positions
from lab.neighbours.training_pairs import MAX_PAIRS, NeighboursError, training_pairs
from model.run_dir import WEIGHTS_FILE
from translate.model_dir import weights_dir
from translate.translator import Translator

INDEX_FILE = "neighbours_index.npz"  # beside a run; in .gitignore
CACHE_DIR = "neighbours"  # in the runs folder, for model folders outside it
BATCH_TOKENS = 4096  # padded tokens per forward pass
SEPARATOR = "\n"  # between the texts stored in one array (a TSV line holds no newline)

Progress = Callable[[int, int], None]  # (pairs done, pairs in all)


@dataclass(frozen=True)
class IndexInfo:
    """What the page says about an index."""

    model: str  # the model folder
    weights_sha256: str
    origin: str  # the training pairs, in words
    source: str  # the file they were read from
    available: int  # pairs there to index, before the cap
    pairs: int  # pairs indexed
    states: int  # decoder states indexed
    positions: int  # decoder states kept per pair, at most
    seconds: float  # build time
    built: str  # when (UTC)


@dataclass(frozen=True)
class NeighbourIndex:
    info: IndexInfo
    sources: list[str]
    targets: list[str]
    encoder: np.ndarray  # (N, D) float16, unit rows
    decoder: np.ndarray  # (M, D) float16, unit rows
    decoder_pair: np.ndarray  # (M,) int32: the pair of each decoder state
    decoder_position: np.ndarray  # (M,) int16: its target position (row t predicts target token t)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.encoder, self.decoder, self.decoder_pair, self.decoder_position))


def weights_sha256(model_dir: Path) -> str:
    return file_sha256(weights_dir(Path(model_dir)) / WEIGHTS_FILE)


def index_path(model_dir: Path, runs: Path, sha256: str) -> Path:
    """Beside the run when ``model_dir`` is in the runs folder, else the runs folder's cache, by weights sha256."""
    model_dir, runs = Path(model_dir).resolve(), Path(runs).resolve()
    return model_dir / INDEX_FILE if model_dir.is_relative_to(runs) else runs / CACHE_DIR / f"{sha256}.npz"


def compute(translator: Translator, pairs: list[Pair], progress: Progress) -> tuple[np.ndarray, ...]:
    """(encoder, decoder, decoder_pair, decoder_position) of ``pairs``, in batches of similar lengths, written into
    arrays allocated once: the float16 index is the build's only large memory."""
    model = translator.model
    examples = encode_pairs(pairs, translator.tokenizer, model.config.max_positions)
    kept = [kept_positions(len(e.tgt)) for e in examples]
    starts = np.cumsum([0] + [len(k) for k in kept])  # the first decoder row of each pair
    d = model.config.d_model
    encoder, decoder = np.zeros((len(pairs), d), np.float16), np.zeros((starts[-1], d), np.float16)
    done = 0
    for rows in batch_indices(examples, BATCH_TOKENS, seed=0, epoch=0, shuffle=False):
        vectors, states = batch_states(model, [examples[i] for i in rows])
        encoder[rows] = vectors
        into = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in rows])
        decoder[into] = states
        done += len(rows)
        progress(done, len(pairs))
    owner = np.repeat(np.arange(len(pairs), dtype=np.int32), [len(k) for k in kept])
    where = np.asarray([p for k in kept for p in k], np.int16)
    return encoder, decoder, owner, where


def build(translator: Translator, model_dir: Path, progress: Progress, cap: int = MAX_PAIRS) -> NeighbourIndex:
    """Encode the model's training pairs (``training_pairs``) into a new index."""
    start = time.perf_counter()
    found = training_pairs(model_dir, cap)
    progress(0, len(found.pairs))
    encoder, decoder, owner, where = compute(translator, found.pairs, progress)
    info = IndexInfo(
        str(model_dir),
        weights_sha256(model_dir),
        found.origin,
        str(found.source),
        found.available,
        len(found.pairs),
        len(decoder),
        POSITIONS,
        round(time.perf_counter() - start, 1),
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    )
    texts = [p.src for p in found.pairs], [p.tgt for p in found.pairs]
    return NeighbourIndex(info, *texts, encoder, decoder, owner, where)


def text_array(texts: list[str]) -> np.ndarray:
    return np.frombuffer(SEPARATOR.join(texts).encode("utf-8"), np.uint8)


def save(index: NeighbourIndex, path: Path) -> None:
    """Written beside its place and renamed into it: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.stem}.{os.getpid()}.tmp.npz")
    np.savez(
        partial,
        info=text_array([json.dumps(asdict(index.info))]),
        sources=text_array(index.sources),
        targets=text_array(index.targets),
        encoder=index.encoder,
        decoder=index.decoder,
        decoder_pair=index.decoder_pair,
        decoder_position=index.decoder_position,
    )
    os.replace(partial, path)


def load(path: Path) -> NeighbourIndex:
    """An index saved by ``save``; a file that is not one is an error naming it."""
    try:
        with np.load(path, allow_pickle=False) as f:
            texts = {k: f[k].tobytes().decode("utf-8").split(SEPARATOR) for k in ("info", "sources", "targets")}
            arrays = [f[k] for k in ("encoder", "decoder", "decoder_pair", "decoder_position")]
        info = IndexInfo(**json.loads(texts["info"][0]))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise NeighboursError(f"{path}: not a neighbour index ({err})") from None
    return NeighbourIndex(info, texts["sources"], texts["targets"], *arrays)


def load_or_build(
    translator: Translator, model_dir: Path, runs: Path, progress: Progress
) -> tuple[NeighbourIndex, bool]:
    """The model's cached index when its weights are the ones it was built from, else a new one, saved; the second
    value says whether it was loaded."""
    sha256 = weights_sha256(model_dir)
    path = index_path(model_dir, runs, sha256)
    if path.is_file():
        try:
            index = load(path)
            if index.info.weights_sha256 == sha256:
                return index, True
        except NeighboursError:
            pass  # a broken or foreign file: built again over it
    index = build(translator, model_dir, progress)
    save(index, path)
    return index, False
