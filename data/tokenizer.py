"""SentencePiece subword tokenizer(s) of a model directory, one joint model or one per language; and training
them on the training split only."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2

from data.case_markup import MARK, mark_case, mark_tokens
from data.readers import Pair
from data.source_chars import Reading, readable
from model.bounded_read import QUOTE, read_bytes
from model.run_dir import JOINT_TOKENIZER_FILE as JOINT_FILE
from model.run_dir import SRC_TOKENIZER_FILE as SRC_FILE
from model.run_dir import TGT_TOKENIZER_FILE as TGT_FILE

MAX_TOKENIZER_BYTES = 64 << 20  # of one SentencePiece model: a million pieces fit (the shipped one is 0.4 MB)
WORD_START = "\u2581"  # SentencePiece's "▁": this piece begins a word


class TokenizerError(ValueError):
    """A tokenizer file is missing or unreadable."""


def _load(path: Path) -> spm.SentencePieceProcessor:
    proto = read_bytes(path, MAX_TOKENIZER_BYTES, TokenizerError)
    if not proto:  # SentencePiece takes an empty model without a word, then fails at every call
        raise TokenizerError(f"{path}: empty file; expected a SentencePiece model")
    try:
        return spm.SentencePieceProcessor(model_proto=proto)
    except (RuntimeError, TypeError) as err:
        raise TokenizerError(f"{path}: not a SentencePiece model ({str(err)[:QUOTE]})") from None


@dataclass(frozen=True)
class Tokenizer:
    """Text <-> ids for source and target; ``src`` and ``tgt`` are the same processor when joint."""

    src: spm.SentencePieceProcessor
    tgt: spm.SentencePieceProcessor

    @property
    def joint(self) -> bool:
        return self.src is self.tgt

    @property
    def case_markup(self) -> bool:
        """Whether the source is read with case markup (data/case_markup.py): the vocabulary holds its mark."""
        return self.src.piece_to_id(MARK) != self.src.unk_id()

    def with_case_markup(self) -> Tokenizer:
        """This tokenizer with the case mark added to the source vocabulary (one more id, the last): for turning case
        markup on when fine-tuning a model that read cased text. The existing ids keep their meaning."""
        if self.case_markup:
            return self
        proto = sentencepiece_model_pb2.ModelProto()
        proto.ParseFromString(self.src.serialized_model_proto())
        piece = proto.pieces.add()
        piece.piece, piece.score, piece.type = MARK, 0.0, sentencepiece_model_pb2.ModelProto.SentencePiece.USER_DEFINED
        src = spm.SentencePieceProcessor(model_proto=proto.SerializeToString())
        return Tokenizer(src, src if self.joint else self.tgt)

    @cached_property
    def _src_known(self) -> dict[str, bool]:
        return {}  # character -> whether the source vocabulary reads it as something other than <unk>

    def src_knows(self, ch: str) -> bool:
        """Whether the source vocabulary reads the character ``ch`` (it is not ``<unk>``)."""
        if ch not in self._src_known:
            self._src_known[ch] = self.src.unk_id() not in self.src.encode(ch)
        return self._src_known[ch]

    def src_reading(self, text: str) -> Reading:
        """The source text as the vocabulary reads it: with case markup when the tokenizer has it, then each character
        the vocabulary lacks in a plain form or left out (data/source_chars.py); and what was left out. In this
        order, since a case-markup vocabulary may lack a capital ("Ó") that the markup lowers."""
        return readable(mark_case(text) if self.case_markup else text, self.src_knows)

    def src_text(self, text: str) -> str:
        """The text of ``src_reading``."""
        return self.src_reading(text).text

    def src_tokens(self, tokens: Sequence[str]) -> list[str]:
        """The tokens of one source text, each as the vocabulary reads it in that text (``src_text``, token by token:
        only the text's first word is read with a capital)."""
        return [readable(t, self.src_knows).text for t in (mark_tokens(tokens) if self.case_markup else tokens)]

    @classmethod
    def load(cls, directory: Path) -> Tokenizer:
        directory, there = Path(directory), os.path.lexists  # a FIFO or a loop there: the reader names it
        if there(directory / JOINT_FILE):
            joint = _load(directory / JOINT_FILE)
            return cls(joint, joint)
        if there(directory / SRC_FILE) or there(directory / TGT_FILE):
            return cls(_load(directory / SRC_FILE), _load(directory / TGT_FILE))
        raise TokenizerError(f"{directory}: no tokenizer ({JOINT_FILE}, or {SRC_FILE} and {TGT_FILE})")

    def proto(self) -> bytes:
        """The serialised vocabularies (source, then target): equal bytes, the same tokenizer."""
        return self.src.serialized_model_proto() + self.tgt.serialized_model_proto()

    @staticmethod
    def files(directory: Path) -> tuple[Path, ...]:
        """Every file name a saved tokenizer may take in ``directory``."""
        return tuple(Path(directory) / name for name in (JOINT_FILE, SRC_FILE, TGT_FILE))

    def save(self, directory: Path) -> None:
        directory = Path(directory)
        if self.joint:
            (directory / JOINT_FILE).write_bytes(self.src.serialized_model_proto())
        else:
            (directory / SRC_FILE).write_bytes(self.src.serialized_model_proto())
            (directory / TGT_FILE).write_bytes(self.tgt.serialized_model_proto())

    def encode_src(self, text: str) -> list[int]:
        """Source ids with EOS appended (the encoder sees ``x1 … xS </s>``)."""
        return self.src.encode(self.src_text(text)) + [self.src.eos_id()]

    def encode_tgt(self, text: str) -> list[int]:
        """Target ids with EOS appended (the decoder predicts ``y1 … yT </s>``)."""
        return self.tgt.encode(text) + [self.tgt.eos_id()]

    def decode_tgt(self, ids: list[int]) -> str:
        """Text of target ids; BOS/EOS/PAD are dropped."""
        specials = {self.tgt.bos_id(), self.tgt.eos_id(), self.tgt.pad_id()}
        return self.tgt.decode([i for i in ids if i not in specials])

    def src_pieces(self, ids: list[int]) -> list[str]:
        return [self.src.id_to_piece(i) for i in ids]

    def tgt_pieces(self, ids: list[int]) -> list[str]:
        return [self.tgt.id_to_piece(i) for i in ids]


# ----------------------------------------------------------------------------------------- training


def _train(sentences: list[str], vocab_size: int, symbols: tuple[str, ...] = ()) -> spm.SentencePieceProcessor:
    """A unigram model of ``vocab_size`` pieces; TokenizerError in SentencePiece's words when the corpus cannot make
    one (more characters than so small a vocabulary holds)."""
    proto = io.BytesIO()
    try:
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
    except RuntimeError as err:  # "INTERNAL: file(line) [condition] what it means"
        said = str(err).rsplit("] ", 1)[-1].strip() or str(err)
        raise TokenizerError(
            f"data.vocab_size {vocab_size}: SentencePiece cannot make it from this corpus ({said[:160]})"
        ) from None
    return spm.SentencePieceProcessor(model_proto=proto.getvalue())


def train_tokenizer(
    train: list[Pair], vocab_size: int, joint: bool = True, extra_src: list[str] = (), case_markup: bool = False
) -> Tokenizer:
    """A joint model over both sides, or separate source and target models of ``vocab_size`` each. ``extra_src``: more
    source text for the vocabulary only (noised copies of the Spanish side, so "hola" gets pieces of its own as "Hola"
    does). With ``case_markup`` the source is learned as read (data/case_markup.py), the mark a piece of its own."""
    src = [p.src for p in train] + list(extra_src)
    symbols = (MARK,) if case_markup else ()
    if case_markup:
        src = [mark_case(s) for s in src]
    if joint:
        processor = _train(src + [p.tgt for p in train], vocab_size, symbols)
        return Tokenizer(processor, processor)
    return Tokenizer(_train(src, vocab_size, symbols), _train([p.tgt for p in train], vocab_size))
