"""``python -m workshop copy-check --model DIR``: does the model carry names, places and numbers it never saw?

The dev pairs that hold a name or number on both sides (data/entities.py finds them) get it replaced, on both
sides, by one from the names training never draws (``entities.held_out``: one Faker name in five by a stable
hash) or by a new number; the model translates each source as written and as people type it (lowercase, no
accents, data/noise.py ``typed``). A sentence counts as kept when every new name and number is in the output,
spelled as in the reference (accents aside for the typed source, which has none). It reports the model alone and
the system (the model under its name guard, whose lists never hold the held-out names).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from data.corpus import CorpusError, Pair
from data.entities import EntityConfig, EntityFinder, EntityPool, swap_all
from data.noise import strip_accents, typed
from model.weights import ModelLoadError
from training.outputs import OutputError, check_file
from training.prepare import model_split
from translate.cli import refuse_unless
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator

MAX_ITEMS = 400  # dev pairs the check uses at most (about 30 s a model on 2 cores, both forms)
SEED = 20261202


@dataclass(frozen=True)
class CopyItem:
    src: str
    ref: str
    kept: tuple[str, ...]  # what the output must hold: the new names and numbers


def copy_items(dev: list[Pair], train: list[Pair], seed: int = SEED) -> list[CopyItem]:
    """The check's sentences: ``dev`` pairs with their shared names and numbers replaced by held-out ones."""
    finder = EntityFinder.from_pairs(train + dev, EntityPool.build(held=None))
    pool, rng = EntityPool.build(held=True), random.Random(seed)
    config = EntityConfig(p=1.0, pseudo=0.0, full_name=0.2)  # real names only: the check asks for Faker's
    items = []
    for pair in dev:
        found = finder.shared(pair)
        if not found:
            continue
        swapped, drawn = swap_all(pair, found, finder, pool, rng, config)
        items.append(CopyItem(swapped.src, swapped.tgt, tuple(drawn)))
    return items[:MAX_ITEMS]


def holds(output: str, word: str) -> bool:
    """Whether ``word`` is in ``output`` as a whole word, spelled the same (case included)."""
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", output) is not None


def check(translator: Translator, items: list[CopyItem], name_guard: bool = True) -> dict:
    """Kept counts as written and typed, and each miss with its output: the system's (under the name guard,
    translate/name_guard.py), or with ``name_guard`` false the model's own."""
    result = {}
    options = DecodeOptions(name_guard=name_guard)
    for form in ("written", "typed"):
        sources = [item.src if form == "written" else typed(item.src) for item in items]
        outputs = [t.text for t in translator.translate_all(sources, options, batch_size=64)]
        misses = []
        for source, output, item in zip(sources, outputs, items, strict=True):
            text = output if form == "written" else strip_accents(output)
            words = item.kept if form == "written" else [strip_accents(w) for w in item.kept]
            if not all(holds(text, w) for w in words):
                misses.append(f'"{source}" → "{output}" (must hold: {", ".join(item.kept)})')
        kept = len(items) - len(misses)
        result[form] = {"kept": kept, "sentences": len(items), "share": round(kept / max(1, len(items)), 4)}
        result[form]["misses"] = misses
    return result


def piece_span(encode: Callable[[str], list[int]], text: str, word: str) -> range:
    """The pieces of ``word``'s first whole-word occurrence in ``text`` (its case mark included), by encoding
    the text before it and up to its end: pieces never cross a space."""
    match = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text)
    if match is None:
        return range(0)
    return range(len(encode(text[: match.start()].rstrip())) - 1, len(encode(text[: match.end()])) - 1)


def name_attention(translator: Translator, items: list[CopyItem], layer: int = -2, head: int = 0) -> dict:
    """Of the output pieces that spell a kept name, the share whose cross-attention peaks on the name's own
    source pieces: in head ``head`` of decoder layer ``layer`` (guided alignment's), and averaged over every
    head of every layer. The maps are honest about names when both are high."""
    t, hits, total = translator.tokenizer, Counter(), 0
    for item in items:
        translation = translator.translate(item.src)
        for word in item.kept:
            src, tgt = piece_span(t.encode_src, item.src, word), piece_span(t.encode_tgt, translation.text, word)
            if not src or not tgt:
                continue
            cross = translator.attention(translation).cross  # (L_dec, H, T, S)
            taught = cross[max(layer, -cross.shape[0]), min(head, cross.shape[1] - 1)]  # a smaller model: its top
            for name, rows in (("taught head", taught), ("mean of all heads", cross.mean((0, 1)))):
                hits[name] += sum(int(rows[row].argmax()) in src for row in tgt if row < rows.shape[0])
            total += len(tgt)
    return {name: round(hits[name] / max(1, total), 3) for name in ("taught head", "mean of all heads")} | {
        "name pieces": total
    }


def model_items(model_dir: Path) -> list[CopyItem]:
    """The check's sentences for a model: from its own dev split, names found over its training split."""
    split = model_split(model_dir)
    return copy_items(split.dev, split.train)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop copy-check", description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="model or run directory")
    parser.add_argument("--misses", type=int, default=10, help="misses printed per form")
    parser.add_argument("--json", type=Path, help="write the figures and every miss here")
    parser.add_argument("--attention", type=int, default=0, help="also measure where N items' names look")
    args = parser.parse_args(argv)
    refuse_unless(args.misses >= 0, f"--misses {args.misses}: expected 0 or more")
    refuse_unless(args.attention >= 0, f"--attention {args.attention}: expected 0 or more items")
    try:
        if args.json:
            check_file(args.json, "--json")  # before the work, not after it
        items = model_items(args.model)
        translator = Translator.load(args.model)
        result = {"model": check(translator, items, name_guard=False)}
        if translator.guard is not None:
            result["system"] = check(translator, items)
    except (CorpusError, ModelLoadError, OutputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if translator.guard is None:
        print(f"{args.model} has no name guard (no name_guard.json): the model's own figures only")
    for who, forms in result.items():
        for form, r in forms.items():
            label = "the model alone" if who == "model" else "with the name guard"
            print(f"{form}, {label}: {r['kept']} of {r['sentences']} kept ({100 * r['share']:.1f} %)")
            print("\n".join(f"  {line}" for line in r["misses"][: args.misses]))
    if args.attention:
        print(f"cross-attention on the name's own pieces: {name_attention(translator, items[: args.attention])}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0
