"""Train SentencePiece on the training split only, joint or one model per language."""

from __future__ import annotations

import io

import sentencepiece as spm

from data.corpus import Pair
from model.case_markup import MARK, mark_case
from model.tokenizer import Tokenizer


def _train(sentences: list[str], vocab_size: int, symbols: tuple[str, ...] = ()) -> spm.SentencePieceProcessor:
    proto = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=proto,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        pad_id=0,
        unk_id=1,
        bos_id=2,
        eos_id=3,  # the ids ModelConfig expects
        input_sentence_size=2_000_000,
        shuffle_input_sentence=True,
        hard_vocab_limit=False,
        minloglevel=2,
        num_threads=2,
        user_defined_symbols=list(symbols),
    )
    return spm.SentencePieceProcessor(model_proto=proto.getvalue())


def train_tokenizer(
    train: list[Pair], vocab_size: int, joint: bool = True, extra_src: list[str] = (), case_markup: bool = False
) -> Tokenizer:
    """A joint model over both sides, or separate source and target models of ``vocab_size`` each.

    ``extra_src``: more source-side text for the vocabulary only, e.g. noised copies of the Spanish side so that
    "hola" gets pieces of its own as "Hola" does. With ``case_markup`` the source side is learned as it will be
    read, lowercased with the case mark (model/case_markup.py), and the mark is a piece of its own.
    """
    src = [p.src for p in train] + list(extra_src)
    symbols = (MARK,) if case_markup else ()
    if case_markup:
        src = [mark_case(s) for s in src]
    if joint:
        processor = _train(src + [p.tgt for p in train], vocab_size, symbols)
        return Tokenizer(processor, processor)
    return Tokenizer(_train(src, vocab_size, symbols), _train([p.tgt for p in train], vocab_size))
