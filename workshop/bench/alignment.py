"""How close the model's cross-attention alignments are to human ones (XL-WA English–Spanish gold), in one run.

Each gold pair is force-decoded (gold tokens -> running text -> the model's subwords, and back to the gold tokens);
alignments are read off every decoder layer, head and the mean of heads, with both row readings ("predicts":
the row that outputs the word; "shift": the row where it is the decoder input), by argmax, threshold,
intersection and grow-diag-final-and, and by Shift-Att (Chen et al. 2020). ``--dev`` picks each extraction's
layer / head / reading / threshold; ``--gold`` is only scored. Beside them: the diagonal baseline, and eflomal
trained on the model's training corpus (or ``--corpus``) plus the gold sentences, tokenised like the gold.
Attribution rows (workshop/bench/attribution_aligner.py): the same extractions read off input × gradient of every
output token over the source (|x·g| and ‖x ⊙ g‖), and integrated gradients with ``--ig-steps`` points (off by
default: each point costs as much again as input × gradient), kind / reading / threshold chosen on ``--dev`` too.
A model trained with guided alignment (``optim.guided_alignment``) also gets a row for the head it taught, read
as it was taught: argmax of the row that predicts each word.
``--save`` stores the figures (never the gold text) in the model directory, where the app's alignment tab reads its
best aligner from (``lab.alignment.bench_result``).

    python -m workshop bench alignment --model checkpoints/es-en --gold ../shared/data/xl-wa-es/test.tsv \\
        --dev ../shared/data/xl-wa-es/dev.tsv --json alignment.json --save
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from data.alignments import eflomal_links
from data.corpus import read_corpus
from data.readers import Reading
from lab.alignment.bench_result import EFLOMAL
from lab.alignment.links import READINGS
from lab.alignment.methods import EXTRACTIONS, Extraction, ForcedPair, Method, force_decode
from lab.alignment.scoring import CLOSERS, OPENERS, QUOTES, GoldPair, Link, Score, read_gold, score
from lab.whatif.attribution import MAX_IG_STEPS
from model.run_dir import ALIGNMENT_FILE, TRAIN_CONFIG_FILE
from training.train_config import read_saved_config
from translate.translator import DEFAULT_MODEL, Translator
from workshop.bench.attribution_aligner import (
    ATTRIBUTION_EXTRACTIONS,
    KINDS,
    AttributedPair,
    AttributionMethod,
    attribute_gold,
)
from workshop.bounds import use_threads, within

Extract = Callable[[ForcedPair], set[Link]]


THRESHOLDS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5)  # the threshold extraction's shares tried
LEADING = OPENERS | QUOTES
TRAILING = CLOSERS | QUOTES
ABBREVIATION = re.compile(r"(?:\w\.){2,}|(?:Mr|Mrs|Ms|Dr|Sr|Sra|Srta|St|Jr|etc|Ud|Uds|vs)\.", re.IGNORECASE)


def tokenize(text: str) -> list[str]:
    """Split running text the way the gold files are tokenised: punctuation apart, "Moon's", "70%", "U.S." whole."""
    tokens: list[str] = []
    for chunk in text.split():
        lead, trail = [], []
        while len(chunk) > 1 and chunk[0] in LEADING:
            lead.append(chunk[0])
            chunk = chunk[1:]
        while len(chunk) > 1 and chunk[-1] in TRAILING and not ABBREVIATION.fullmatch(chunk):
            cut = 3 if chunk.endswith("...") and len(chunk) > 3 else 1  # an ellipsis is one token
            trail.insert(0, chunk[-cut:])
            chunk = chunk[:-cut]
        tokens += [*lead, chunk, *trail]
    return tokens


def diagonal(n_target: int, n_source: int) -> set[Link]:
    """Each target word to the source word at the same relative position: i/(n−1) = j/(m−1), rounded."""
    return {(i, round(i * (n_source - 1) / max(1, n_target - 1))) for i in range(n_target)} if n_source else set()


def methods(n_layers: int, n_heads: int) -> dict[Extraction, list[Method]]:
    """Every candidate of each extraction; dev picks one per extraction."""
    heads: list[int | None] = [*range(n_heads), None]
    readouts = [(layer, head, reading) for reading in READINGS for layer in range(n_layers) for head in heads]
    return {
        "argmax": [Method("argmax", *r) for r in readouts],
        "threshold": [Method("threshold", *r, tau) for r in readouts for tau in THRESHOLDS],
        "intersection": [Method("intersection", *r) for r in readouts],
        "grow-diag-final-and": [Method("grow-diag-final-and", *r) for r in readouts],
        "Shift-Att": [Method("Shift-Att", layer, None, "shift") for layer in range(n_layers)],
    }


def attribution_methods(steps: int) -> dict[Extraction, list[AttributionMethod]]:
    """Every candidate of each extraction (integrated gradients only when ``steps`` > 0); dev picks one each."""
    kinds = [k for k in KINDS if k != "integrated" or steps > 0]
    readouts = [(kind, reading) for kind in kinds for reading in READINGS]
    out: dict[Extraction, list[AttributionMethod]] = {}
    for extraction in ATTRIBUTION_EXTRACTIONS:
        taus: tuple[float | None, ...] = THRESHOLDS if extraction == "threshold" else (None,)
        out[extraction] = [AttributionMethod(k, r, extraction, tau, steps) for k, r in readouts for tau in taus]
    return out


@dataclass(frozen=True)
class GoldFile:
    """Which gold file was used, without its text: path as given, sha256, number of pairs."""

    path: str
    sha256: str
    pairs: int


def gold_file_of(path: Path, pairs: int) -> GoldFile:
    return GoldFile(str(path), hashlib.sha256(Path(path).read_bytes()).hexdigest(), pairs)


def save_alignment(
    model_dir: Path, benchmark: str, records: Sequence[dict[str, Any]], test: GoldFile, dev: GoldFile
) -> Path:
    """Write ``alignment.json`` into ``model_dir`` (records as the alignment bench makes them); returns its path."""
    path = Path(model_dir) / ALIGNMENT_FILE
    payload = {"benchmark": benchmark, "test": asdict(test), "dev": asdict(dev), "records": list(records)}
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


@dataclass(frozen=True)
class GoldSet:
    """A gold file and the model's forced pass over each of its pairs."""

    pairs: list[GoldPair]
    forced: list[ForcedPair]

    def score(self, extract: Extract) -> Score:
        return score([extract(f) for f in self.forced], [p.links for p in self.pairs])


def load_set(translator: Translator, path: Path, what: str) -> GoldSet:
    pairs = read_gold(path)
    return GoldSet(pairs, [force_decode(translator, p) for p in tqdm(pairs, desc=f"force-decoding {what}")])


def record(method: str, test: Score, dev: Score | None, **fields: Any) -> dict[str, Any]:
    """One JSON record: the required keys first, then the dev AER and what was chosen."""
    head = {"method": method, "precision": test.precision, "recall": test.recall, "aer": test.aer}
    return head | {"dev_aer": dev.aer if dev else None} | fields


def measure(method: Method, test: GoldSet, dev: GoldSet | None, **fields: Any) -> dict[str, Any]:
    return record(method.name, test.score(method.links), dev.score(method.links) if dev else None, **fields)


def training_corpora(model_dir: Path) -> list[Path]:
    """The corpora the model was trained on, from its saved training configuration (when it has one)."""
    path = model_dir / TRAIN_CONFIG_FILE
    if not path.is_file():
        return []
    return [Path(p) for p in json.loads(path.read_text(encoding="utf-8")).get("data", {}).get("corpora", [])]


def guided_head(model_dir: Path, n_layers: int) -> Method | None:
    """The head guided alignment taught eflomal's links (from the saved training configuration), read as it was
    taught: argmax of the row that predicts each word. None for a model trained without it."""
    path = model_dir / TRAIN_CONFIG_FILE
    if not path.is_file():
        return None
    guided = read_saved_config(path).optim.guided_alignment
    return Method("argmax", range(n_layers)[guided.layer], guided.head, "predicts") if guided.enabled else None


def eflomal_record(corpora: list[Path], test: GoldSet, dev: GoldSet | None) -> tuple[dict[str, Any] | None, str]:
    """eflomal's record, trained on the corpora plus every gold sentence; or None and why it was skipped."""
    if not corpora:
        return None, "eflomal skipped: no training corpus (pass --corpus)"
    corpus = [
        (tokenize(p.tgt), tokenize(p.src)) for path in corpora for p in read_corpus(path, how=Reading(skip_bad=True))
    ]
    gold = [(p.target, p.source) for p in test.pairs + (dev.pairs if dev else [])]
    links = eflomal_links([pair for pair in corpus if pair[0] and pair[1]] + gold)
    if links is None:
        return None, "eflomal skipped: not installed (pip install eflomal)"
    ours = links[len(links) - len(gold) :]
    n = len(test.pairs)
    name = f"eflomal, grow-diag-final-and ({len(corpus):,} corpus + {len(gold)} gold pairs)"
    on_dev = score(ours[n:], [p.links for p in dev.pairs]) if dev else None
    return record(name, score(ours[:n], [p.links for p in test.pairs]), on_dev, baseline=EFLOMAL), ""


def attribution_records(translator: Translator, test: GoldSet, dev: GoldSet | None, steps: int) -> list[dict[str, Any]]:
    """Each attribution extraction at its best dev choice (without dev: each kind's argmax of the "predicts" rows)."""

    def attributed(gold: GoldSet, what: str) -> list[AttributedPair]:
        return [attribute_gold(translator, p, steps) for p in tqdm(gold.pairs, desc=f"attributing {what}")]

    def scored(method: Any, pairs: list[AttributedPair], gold: GoldSet) -> Score:
        return score([method.links(a) for a in pairs], [p.links for p in gold.pairs])

    on_test, on_dev = attributed(test, "gold"), attributed(dev, "dev") if dev else None
    records = []
    for extraction, group in attribution_methods(steps).items():
        if on_dev is None or dev is None:
            fixed = [m for m in group if extraction == "argmax" and m.reading == "predicts"]
            records += [record(m.name, scored(m, on_test, test), None, **m.fields()) for m in fixed]
            continue
        best = min(group, key=lambda m: scored(m, on_dev, dev).aer)  # the first on ties
        fields = best.fields() | {"chosen_on_dev": True}
        records.append(record(best.name, scored(best, on_test, test), scored(best, on_dev, dev), **fields))
    return records


def print_table(title: str, records: list[dict[str, Any]]) -> None:
    print(f"\n{title}\n\n| method | dev AER | precision | recall | AER |\n|---|---:|---:|---:|---:|")
    for r in records:
        dev = "" if r["dev_aer"] is None else f"{r['dev_aer']:.3f}"
        print(f"| {r['method']} | {dev} | {r['precision']:.3f} | {r['recall']:.3f} | {r['aer']:.3f} |")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m workshop bench alignment",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    parser.add_argument("--gold", type=Path, required=True, help="gold alignments to report on (test)")
    parser.add_argument("--dev", type=Path, default=None, help="gold alignments to choose layer/head/threshold on")
    parser.add_argument(
        "--corpus", type=Path, action="append", help="eflomal's corpus, repeatable (default: the model's)"
    )
    parser.add_argument("--no-eflomal", action="store_true", help="leave the eflomal row out")
    parser.add_argument("--json", type=Path, default=None, help="write the records as a JSON list here")
    parser.add_argument("--save", action="store_true", help="store the figures in the model directory (needs --dev)")
    parser.add_argument("--benchmark", default="XL-WA", help="the gold data's name, as the app shows it")
    parser.add_argument("--no-attribution", action="store_true", help="leave the attribution rows out")
    parser.add_argument(
        "--ig-steps",
        type=int,
        default=0,
        help="integrated gradients' points (0 = input × gradient only; each costs as much)",
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0 = torch's default)")
    args = parser.parse_args(argv)
    if args.save and not args.dev:
        parser.error("--save needs --dev: the stored result names the layer and head chosen on dev")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    within("--ig-steps", args.ig_steps, 0, MAX_IG_STEPS, "points (0 = input × gradient only)")
    use_threads(args.threads)
    started = time.perf_counter()
    translator = Translator.load(args.model)
    test = load_set(translator, args.gold, "gold")
    dev = load_set(translator, args.dev, "dev") if args.dev else None

    def diag(f: ForcedPair) -> set[Link]:
        return diagonal(*f.shape)

    diagonal_dev = dev.score(diag) if dev else None
    summary = [record("diagonal (same relative position)", test.score(diag), diagonal_dev, baseline="diagonal")]
    candidates = methods(translator.model.config.n_decoder_layers, translator.model.config.n_heads)
    if dev:
        for group in candidates.values():
            best = min(group, key=lambda m: dev.score(m.links).aer)  # the first on ties
            summary.append(measure(best, test, dev, chosen_on_dev=True, **best.fields()))
    taught = guided_head(args.model, translator.model.config.n_decoder_layers)
    if taught:
        on_dev = dev.score(taught.links) if dev else None
        name = f"guided alignment's head: {taught.name}"
        summary.append(record(name, test.score(taught.links), on_dev, guided_alignment=True, **taught.fields()))
    grid = [measure(m, test, dev, **m.fields()) for m in candidates["argmax"] + candidates["Shift-Att"]]
    attention_s = time.perf_counter() - started
    if not args.no_attribution:
        summary += attribution_records(translator, test, dev, args.ig_steps)
    attribution_s = time.perf_counter() - started - attention_s
    corpora = args.corpus or training_corpora(args.model)
    eflomal, note = (None, "eflomal skipped (--no-eflomal)") if args.no_eflomal else eflomal_record(corpora, test, dev)
    summary += [eflomal] if eflomal else []

    print(f"\n{args.model}: {len(test.pairs)} pairs scored ({args.gold}), chosen on {args.dev or 'nothing'}")
    print_table("Baselines and each extraction at its best dev choice (scores on the scored set):", summary)
    print_table("Every decoder layer and head, argmax per English word; Shift-Att per layer:", grid)
    print("\n" + "\n".join(f"- {name}: {text}" for name, text in EXTRACTIONS.items()))
    print("- attribution, …: the extraction read off each English word's attribution over the Spanish words (rows")
    print("  as shares), not off attention; |x·g| and ‖x ⊙ g‖ are input × gradient, |IG| integrated gradients.")
    print("- AER = 1 − F1 (no sure/possible split), links counted over the whole set.")
    if note:
        print(note)
    if dev is None:
        print("No --dev: nothing chosen, only the fixed readings are reported.")
    if args.no_attribution:
        print("Attribution skipped (--no-attribution).")
    elif not args.ig_steps:
        print("Integrated gradients not run (--ig-steps N adds them, at N + 1 times the attribution time).")
    print(
        f"Time: {attention_s:.0f} s model and attention, {attribution_s:.0f} s attribution, "
        f"{time.perf_counter() - started:.0f} s in all."
    )
    names = {r["method"] for r in summary}
    records = summary + [r for r in grid if r["method"] not in names]
    if args.json:
        args.json.write_text(json.dumps(records, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if args.save and dev:
        gold = gold_file_of(args.gold, len(test.pairs)), gold_file_of(args.dev, len(dev.pairs))
        print(f"Stored in {save_alignment(args.model, args.benchmark, records, *gold)}")
    return 0
