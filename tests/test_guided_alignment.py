"""Guided alignment (Garg et al. 2019): target rows, subword pieces, noise, the loss, its gradient, the config."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
import torch

from data.alignments import attention_target, format_links, parse_links, piece_pairs
from data.batch import Example, TrainingSet, collate
from data.corpus import Pair
from data.noise import NoiseConfig
from data.tokenizer import Tokenizer, train_tokenizer
from model.config import ConfigError, ModelConfig
from model.run_dir import split_file, train_links_file
from model.transformer import Transformer
from training.guided_alignment import alignment_loss, read_alignments, write_alignments
from training.train import main
from training.train_config import GuidedAlignmentConfig, load_train_config
from training.trainer import TranslationLoss

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


@pytest.fixture(scope="module")
def toy(toy_corpus: Path) -> tuple[list[Pair], Tokenizer]:
    pairs = [Pair(*line.split("\t")) for line in toy_corpus.read_text(encoding="utf-8").splitlines()]
    return pairs, train_tokenizer(pairs, 200)


def model(n_decoder_layers: int = 2) -> Transformer:
    torch.manual_seed(0)
    config = ModelConfig(
        src_vocab_size=50,
        tgt_vocab_size=50,
        d_model=32,
        n_heads=2,
        d_ff=64,
        n_encoder_layers=1,
        n_decoder_layers=n_decoder_layers,
        dropout=0.0,
        max_positions=32,
    )
    return Transformer(config)


def batch(n: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Random examples of different lengths with random links: src, tgt_in, tgt_out (B, T), targets (B, T, S)."""
    rng = random.Random(seed)
    examples = []
    for _ in range(n):
        s, t = rng.randint(3, 8), rng.randint(3, 8)
        links = {(rng.randrange(t - 1), rng.randrange(s - 1)) for _ in range(rng.randint(1, 6))}
        examples.append(
            Example(
                [rng.randint(4, 49) for _ in range(s - 1)] + [3],
                [rng.randint(4, 49) for _ in range(t - 1)] + [3],
                tuple(sorted(links)),
            )
        )
    b = collate(examples, pad_id=0, bos_id=2, alignment=True)
    return b.src, b.tgt_in, b.tgt_out, b.alignment


# --- what one head is asked to do ---


def test_each_row_is_uniform_over_its_links_and_unlinked_rows_eos_and_truncated_links_are_zero() -> None:
    # 4 target pieces + EOS, 3 source pieces + EOS; (1, 9) points past a truncated source, (5, 0) past the target
    target = attention_target([(0, 0), (0, 2), (1, 1), (3, 1), (1, 9), (5, 0), (4, 0)], n_tgt=5, n_src=4)
    expected = torch.tensor(
        [[0.5, 0.0, 0.5, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0] * 4, [0.0, 1.0, 0.0, 0.0], [0.0] * 4]  # row 4: EOS
    )
    assert torch.equal(target, expected)
    assert set(target.sum(-1).tolist()) <= {0.0, 1.0} and target[:, -1].eq(0).all()  # no weight on source EOS


def test_pharaoh_lines_round_trip() -> None:
    links = {(0, 0), (2, 1), (1, 3)}
    assert format_links(links) == "0-0 1-3 2-1" and parse_links(format_links(links)) == links
    assert parse_links("") == set() and format_links([]) == ""


def test_eflomal_sees_exactly_the_pieces_the_model_sees(toy: tuple[list[Pair], Tokenizer]) -> None:
    """Piece i of a side is id i of its encoding (EOS left out), unknown characters included."""
    pairs, tokenizer = toy
    pairs = [*pairs[:20], Pair("El ✓ gato rojo 3.", "The red ✓ cat 3.")]
    for (target, source), pair in zip(piece_pairs(pairs, tokenizer), pairs, strict=True):
        assert tokenizer.src.piece_to_id(source) == tokenizer.encode_src(pair.src)[:-1]
        assert tokenizer.tgt.piece_to_id(target) == tokenizer.encode_tgt(pair.tgt)[:-1]
        assert all(piece and not any(c.isspace() for c in piece) for piece in target + source)


def test_collate_pads_the_target_rows_and_only_when_asked() -> None:
    examples = [Example([5, 6, 3], [7, 8, 9, 3], ((0, 1), (2, 0))), Example([5, 3], [7, 3], ((0, 0),))]
    b = collate(examples, pad_id=0, bos_id=2, alignment=True)
    assert b.alignment.shape == (2, 4, 3)  # (B, T, S)
    assert torch.equal(b.alignment[0], attention_target(examples[0].links, 4, 3))
    assert torch.equal(b.alignment[1, :2, :2], attention_target(examples[1].links, 2, 2))
    assert b.alignment[1, 2:].eq(0).all() and b.alignment[1, :, 2:].eq(0).all()  # padding is never supervised
    assert torch.equal(b.to(torch.device("cpu")).alignment, b.alignment)
    assert collate(examples, pad_id=0, bos_id=2).alignment is None


def test_only_sources_the_noise_left_unchanged_keep_their_links(toy: tuple[list[Pair], Tokenizer]) -> None:
    pairs, tokenizer = toy
    links = [((0, 0),)] * len(pairs)
    clean = TrainingSet(pairs, tokenizer, 64, links=links).epoch(3)
    assert all(e.links == ((0, 0),) for e in clean)
    noisy = TrainingSet(pairs, tokenizer, 64, NoiseConfig(p=0.5), links=links)
    for epoch in (0, 1):
        examples = noisy.epoch(epoch)
        kept = [e.src == c.src for e, c in zip(examples, clean, strict=True)]
        assert [bool(e.links) for e in examples] == kept
        assert 0.2 < sum(kept) / len(kept) < 0.8  # p = 0.5: about half the sources are noised
    assert all(not e.links for e in TrainingSet(pairs, tokenizer, 64).epoch(0))  # without guided alignment


# --- the loss and its gradient ---


def test_alignment_loss_is_zero_at_the_target_and_positive_elsewhere() -> None:
    _, _, _, target = batch()
    supervised = target.sum(-1, keepdim=True) > 0  # (B, T, 1)
    torch.manual_seed(0)
    other = torch.randn(target.shape).softmax(-1)
    matching = torch.where(supervised, target, other)  # the unsupervised rows are anything
    assert alignment_loss(matching, target).item() == pytest.approx(0.0, abs=1e-6)
    assert alignment_loss(torch.where(supervised, other, target), target) > 0.1
    assert alignment_loss(torch.where(supervised, 0.9 * target + 0.1 * other, other), target) > 0
    # Rows without links add nothing, whatever the head does there.
    assert alignment_loss(torch.where(supervised, other, other.flip(-1)), target) == alignment_loss(other, target)
    assert alignment_loss(other, torch.zeros_like(target)) == 0


def test_translation_loss_without_targets_is_unchanged() -> None:
    m = model()
    src, tgt_in, tgt_out, target = batch()
    loss, nll, align = TranslationLoss(m, 0.1)(src, tgt_in, tgt_out)
    guided = TranslationLoss(m, 0.1, GuidedAlignmentConfig(weight=1.0, layer=0, head=1))
    with_targets = guided(src, tgt_in, tgt_out, target)
    assert align == 0 and with_targets[2] > 0
    assert torch.allclose(with_targets[0], loss) and torch.allclose(with_targets[1], nll)  # same translation loss


def test_decode_returns_one_layers_cross_attention_when_asked() -> None:
    m = model().eval()
    src, tgt_in, _, _ = batch()
    memory, src_mask, _ = m.encode(src)
    full = m.decode(tgt_in, memory, src_mask, need_weights=True)
    one = m.decode(tgt_in, memory, src_mask, cross_weights_layer=-2)
    assert one.self_weights is None and one.cross_weights[1] is None
    assert torch.allclose(one.cross_weights[0], full.cross_weights[0], atol=1e-6)
    assert torch.allclose(one.hidden, m.decode(tgt_in, memory, src_mask).hidden, atol=1e-5)  # the same output
    assert m.decode(tgt_in, memory, src_mask).cross_weights is None
    with pytest.raises(IndexError):
        m.decode(tgt_in, memory, src_mask, cross_weights_layer=2)


def test_alignment_gradient_reaches_only_the_heads_queries_and_keys_and_what_lies_below() -> None:
    """Supervising layer 0, head 1 of two: its W_Q and W_K rows and everything under them learn; the other head's
    rows, W_V, W_O, the feed-forward and the layer above get nothing from the alignment loss."""
    m = model()
    src, tgt_in, tgt_out, target = batch()
    _, _, align = TranslationLoss(m, 0.1, GuidedAlignmentConfig(weight=1.0, layer=0, head=1))(
        src, tgt_in, tgt_out, target
    )
    align.backward()
    moved = {name for name, p in m.named_parameters() if p.grad is not None and p.grad.abs().sum() > 0}
    assert not any(name.startswith(("decoder_layers.1.", "decoder_norm", "decoder_layers.0.ffn")) for name in moved)
    assert "decoder_layers.0.cross_attn.out_proj.weight" not in moved
    assert {"encoder_layers.0.self_attn.in_proj.weight", "decoder_layers.0.self_attn.in_proj.weight"} <= moved
    d, h = m.config.d_model, m.config.d_head
    rows = m.decoder_layers[0].cross_attn.in_proj.weight.grad.abs().sum(-1)  # (3·d_model,): W_Q, W_K, W_V rows
    head_rows = torch.zeros(3 * d, dtype=torch.bool)
    head_rows[h : 2 * h] = head_rows[d + h : d + 2 * h] = True  # head 1's W_Q and W_K rows
    assert rows[head_rows].gt(0).all() and rows[~head_rows].eq(0).all()


def test_alignment_loss_under_bf16_autocast_is_close_to_fp32() -> None:
    m = model()
    src, tgt_in, tgt_out, target = batch()
    loss_module = TranslationLoss(m, 0.1, GuidedAlignmentConfig(weight=1.0, layer=-1))
    _, _, fp32 = loss_module(src, tgt_in, tgt_out, target)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, _, bf16 = loss_module(src, tgt_in, tgt_out, target)
    (loss + bf16).backward()
    assert bf16.dtype == torch.float32 and torch.isfinite(bf16)
    assert bf16.item() == pytest.approx(fp32.item(), rel=0.05)
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


# --- configuration and files ---


ON, LAYER_0 = "optim.guided_alignment.weight=0.05", "optim.guided_alignment.layer=0"


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["optim.guided_alignment.weight=-1"], "optim.guided_alignment.weight"),
        ([ON], "optim.guided_alignment.layer"),  # the default -2 (penultimate) of tiny's one decoder layer
        ([ON, "optim.guided_alignment.layer=1"], "optim.guided_alignment.layer"),
        ([ON, LAYER_0, "optim.guided_alignment.head=2"], "optim.guided_alignment.head"),
        ([ON, LAYER_0, "data.sampling_alpha=0.1"], "data.sampling_alpha"),
        (["optim.guided_alignment.wieght=0.05"], "optim.guided_alignment.wieght"),
    ],
)
def test_bad_settings_are_errors_naming_the_key(overrides: list[str], named: str) -> None:
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_train_config(CONFIGS / "tiny.toml", overrides)


def test_the_presets_leave_it_off_and_the_default_is_garg_et_al() -> None:
    for preset in ("tiny", "small", "base"):
        assert not load_train_config(CONFIGS / f"{preset}.toml").optim.guided_alignment.enabled
    on = load_train_config(CONFIGS / "small.toml", ["optim.guided_alignment.weight=0.05"]).optim.guided_alignment
    assert (on.layer, on.head) == (-2, 0)  # the penultimate decoder layer, its first head


def test_without_eflomal_the_run_stops_before_reading_data(
    tmp_path: Path, toy_corpus: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "eflomal", None)  # import eflomal now raises ImportError
    out = tmp_path / "run"
    args = [
        "--config",
        str(CONFIGS / "tiny.toml"),
        "--corpus",
        str(toy_corpus),
        "--out",
        str(out),
        f"--{ON}",
        f"--{LAYER_0}",
    ]
    assert main(args) == 2 and not out.exists()
    assert "optim.guided_alignment.weight" in capsys.readouterr().err


def test_eflomal_links_every_training_pair_within_its_pieces(toy: tuple[list[Pair], Tokenizer], tmp_path: Path) -> None:
    """eflomal is not seeded: check what holds for every run (one line per pair, links inside the pieces) and
    an aggregate (nearly every pair gets links), never a single link."""
    pytest.importorskip("eflomal")
    pairs, tokenizer = toy
    split_file(tmp_path, "train").parent.mkdir()
    write_alignments(pairs, tokenizer, tmp_path)
    links = read_alignments(tmp_path, len(pairs))
    assert len(train_links_file(tmp_path).read_text().splitlines()) == len(pairs)
    for pair_links, (target, source) in zip(links, piece_pairs(pairs, tokenizer), strict=True):
        assert all(0 <= i < len(target) and 0 <= j < len(source) for i, j in pair_links)
    assert sum(map(bool, links)) >= 0.95 * len(pairs)
    assert sum(map(len, links)) >= 0.5 * sum(len(t) for t, _ in piece_pairs(pairs, tokenizer))
    with pytest.raises(ValueError, match="lines for"):
        read_alignments(tmp_path, len(pairs) + 1)
