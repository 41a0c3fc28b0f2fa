"""The copy check: its sentences carry held-out names and new numbers on both sides, and a model is scored on
whether its output holds them; the gate compares the candidate's count with the baseline's."""

from __future__ import annotations

from pathlib import Path

from data.corpus import read_pairs_file
from data.entities import held_out
from data.readers import Pair
from model.run_dir import SPLITS_DIR
from training.phrases import Phrase
from translate.translator import Translator
from workshop import gate
from workshop.copy_check import CopyItem, check, copy_items, holds, name_attention, piece_span

TRAIN = [
    Pair("Creo que Tom está en Boston.", "I think Tom is in Boston."),
    Pair("Tom dijo que él vendría.", "Tom said he would come."),
] * 3
DEV = [Pair("Tom tiene 3 gatos.", "Tom has 3 cats."), Pair("Me gusta el té.", "I like tea.")]


def test_items_hold_new_names_and_numbers_on_both_sides() -> None:
    (item,) = copy_items(DEV, TRAIN)
    assert "Tom" not in item.src and "Tom" not in item.ref and len(item.kept) == 2
    name, number = item.kept
    assert all(held_out(part) for part in name.split()[:1]) and number.isdigit()
    assert holds(item.src, name) and holds(item.ref, name) and holds(item.ref, number)


def test_holds_wants_the_whole_word_spelled_alike() -> None:
    assert holds("Ana lives in Sevilla.", "Sevilla") and not holds("Anastasia", "Ana")
    assert not holds("ana lives here", "Ana") and holds("It costs 1250 euros.", "1250") and not holds("12500", "1250")


def test_a_model_is_scored_on_its_own_output(tiny_model_dir: Path) -> None:
    translator = Translator.load(tiny_model_dir)
    said = translator.translate("El gato rojo 3.").text
    items = [
        CopyItem("El gato rojo 3.", "The red cat 3.", (said.split()[0],)),
        CopyItem("El gato rojo 3.", "", ("Zyx",)),
    ]
    result = check(translator, items)
    assert result["written"]["kept"] == 1 and result["written"]["sentences"] == 2
    assert len(result["written"]["misses"]) == 1 and "Zyx" in result["written"]["misses"][0]


def test_the_gate_compares_names_kept(tiny_model_dir: Path) -> None:
    translator = Translator.load(tiny_model_dir)
    dev = read_pairs_file(tiny_model_dir / SPLITS_DIR / "dev.tsv")
    items = copy_items(dev, read_pairs_file(tiny_model_dir / SPLITS_DIR / "train.tsv"))
    assert items  # the toy pairs share their digits
    phrases = [Phrase("El gato rojo 3.", ("The red cat 3.",), 1)]
    checks = gate.gate(translator, translator, dev[:5], gate.GateLists(phrases, phrases, None, items))
    named = [c for c in checks if c.name.startswith("unseen names and numbers kept")]
    assert len(named) == 4 and all(c.passed and c.candidate == c.baseline for c in named)  # written/typed, guard off/on
    assert {"the model alone", "with the name guard"} == {c.name.split(", ")[2].split(" (")[0] for c in named}


def test_a_names_pieces_decode_to_the_name_and_its_map_share_is_a_share(tiny_model_dir: Path) -> None:
    translator = Translator.load(tiny_model_dir)
    t = translator.tokenizer
    text = "El gato rojo 17."
    span = piece_span(t.encode_src, text, "17")
    assert t.src.decode([t.encode_src(text)[i] for i in span]) == "17"
    assert piece_span(t.encode_src, text, "Ana") == range(0)
    shares = name_attention(translator, [CopyItem(text, "The red cat 17.", ("17",))])
    assert all(0.0 <= shares[k] <= 1.0 for k in ("taught head", "mean of all heads"))
