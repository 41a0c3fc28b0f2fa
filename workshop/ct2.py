"""Our Transformer in CTranslate2: the export (spec + weights + vocabularies) and a Translator that decodes with it,
for the workshop's fast decoding (distillation's teacher, the engine benches).

``python -m workshop ct2-export --model DIR [--out DIR] [--quantization int8]`` writes the export, by default into
``DIR/ctranslate2``.

The export re-expresses ``model/transformer.py`` exactly: embeddings scaled by √d_model plus our own position
table (interleaved sin/cos, not CTranslate2's concatenated default); pre- or post-norm sublayers, with the final
LayerNorms of a pre-norm stack; the stacked Q/K/V projection split the way CTranslate2 wants it; the model's
LayerNorm epsilon; decoding started from ``<s>`` at position 0; the source passed with its ``</s>``, exactly as
our encoder sees it. The PyTorch model stays loaded beside it for source cutting and the attention maps.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from data.split_record import file_sha256
from data.tokenizer import Tokenizer
from model.decode import Hypothesis, max_output_lengths
from model.run_dir import CT2_DIR
from model.transformer import Transformer
from model.weights import WEIGHTS_FILE, ModelLoadError, staged_dir
from training.outputs import OutputError, check_target
from translate.model_dir import load_model
from translate.name_guard import NameGuard
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translation, Translator, load_guard

INFO_FILE = "export_info.json"  # which model.safetensors the export was made from
QUANTIZATIONS = ("float32", "int8")
GREEDY = DecodeOptions()


class ExportError(ValueError):
    """The export cannot be written where asked; the message names the directory."""


def _ctranslate2() -> Any:
    try:
        import ctranslate2
    except ImportError:
        raise ModelLoadError("ctranslate2 is not installed (pip install ctranslate2)") from None
    return ctranslate2


def _export_command(model_dir: Path) -> str:
    return f"python -m workshop ct2-export --model {model_dir}"


def build_spec(model: Transformer, tokenizer: Tokenizer) -> Any:
    """A ``ctranslate2.specs.TransformerSpec`` holding ``model``'s weights (by state_dict name) and vocabularies."""
    specs = _ctranslate2().specs
    c = model.config
    pre_norm = c.norm == "pre"
    spec = specs.TransformerSpec(
        specs.TransformerEncoderSpec(c.n_encoder_layers, c.n_heads, pre_norm=pre_norm),
        specs.TransformerDecoderSpec(c.n_decoder_layers, c.n_heads, pre_norm=pre_norm),
    )
    # named_buffers brings the sinusoidal tables, which are not saved in the state dict.
    tensors = {**dict(model.named_buffers()), **model.state_dict()}

    def w(name: str) -> np.ndarray:
        if name not in tensors:
            raise ExportError(f"model has no tensor {name!r}: workshop/ct2.py's names do not fit model/transformer.py")
        return tensors[name].detach().float().cpu().numpy()

    def linear(target: Any, name: str, rows: slice = slice(None)) -> None:
        """Set ``target`` to the linear layer ``name`` (only output ``rows``: e.g. W_K, W_V of a stacked in_proj)."""
        target.weight, target.bias = w(f"{name}.weight")[rows], w(f"{name}.bias")[rows]

    def norm(target: Any, name: str) -> None:
        target.gamma, target.beta = w(f"{name}.weight"), w(f"{name}.bias")

    def ffn(target: Any, prefix: str) -> None:
        linear(target.linear_0, f"{prefix}.ffn.w1")
        linear(target.linear_1, f"{prefix}.ffn.w2")
        norm(target.layer_norm, f"{prefix}.ffn_norm")

    enc, dec = spec.encoder, spec.decoder
    enc.embeddings[0].weight, dec.embeddings.weight = w("src_embed.weight"), w("tgt_embed.weight")
    enc.scale_embeddings = dec.scale_embeddings = True  # × √d_model, before the position is added
    enc.position_encodings.encodings, dec.position_encodings.encodings = w("src_pos.table"), w("tgt_pos.table")
    dec.projection.weight = w("output.weight")
    if pre_norm:
        norm(enc.layer_norm, "encoder_norm")
        norm(dec.layer_norm, "decoder_norm")
    # CTranslate2 wants self-attention as one [W_Q; W_K; W_V] matrix (our in_proj as it is), cross-attention as
    # W_Q, then [W_K; W_V], then the output projection.
    for i, layer in enumerate(enc.layer):
        p = f"encoder_layers.{i}"
        linear(layer.self_attention.linear[0], f"{p}.self_attn.in_proj")
        linear(layer.self_attention.linear[1], f"{p}.self_attn.out_proj")
        norm(layer.self_attention.layer_norm, f"{p}.self_attn_norm")
        ffn(layer.ffn, p)
    for i, layer in enumerate(dec.layer):
        p = f"decoder_layers.{i}"
        linear(layer.self_attention.linear[0], f"{p}.self_attn.in_proj")
        linear(layer.self_attention.linear[1], f"{p}.self_attn.out_proj")
        norm(layer.self_attention.layer_norm, f"{p}.self_attn_norm")
        linear(layer.attention.linear[0], f"{p}.cross_attn.in_proj", slice(0, c.d_model))
        linear(layer.attention.linear[1], f"{p}.cross_attn.in_proj", slice(c.d_model, None))
        linear(layer.attention.linear[2], f"{p}.cross_attn.out_proj")
        norm(layer.attention.layer_norm, f"{p}.cross_attn_norm")
        ffn(layer.ffn, p)

    _set_vocabulary(spec, model, tokenizer)
    return spec


def _set_vocabulary(spec: Any, model: Transformer, tokenizer: Tokenizer) -> None:
    """The spec's LayerNorm epsilon, special tokens and both vocabularies, as our model and tokenizer have them."""
    c = model.config
    (eps,) = {m.eps for m in model.modules() if isinstance(m, nn.LayerNorm)}
    src, tgt = tokenizer.src, tokenizer.tgt
    spec.config.layer_norm_epsilon = eps
    spec.config.unk_token = tgt.id_to_piece(c.unk_id)
    spec.config.bos_token = spec.config.decoder_start_token = tgt.id_to_piece(c.bos_id)
    spec.config.eos_token = tgt.id_to_piece(c.eos_id)
    spec.config.add_source_eos = False  # Translator.encode already ends the source with </s>
    spec.register_source_vocabulary([src.id_to_piece(i) for i in range(src.get_piece_size())])
    spec.register_target_vocabulary([tgt.id_to_piece(i) for i in range(tgt.get_piece_size())])


def export(model_dir: Path, out: Path | None = None, quantization: str = "float32") -> Path:
    """Write the CTranslate2 form of ``model_dir`` to ``out`` (default ``model_dir/ctranslate2``); returns it."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"quantization: expected one of {QUANTIZATIONS}, got {quantization!r}")
    model_dir = Path(model_dir)
    out = Path(out) if out is not None else model_dir / CT2_DIR
    check_target(out, "--out")
    if out.exists() and any(out.iterdir()) and not (out / INFO_FILE).is_file():
        raise ExportError(f"{out}: exists and is not a CTranslate2 export of ours ({INFO_FILE} missing); not replaced")
    loaded = load_model(model_dir)
    spec = build_spec(loaded.model, loaded.tokenizer)
    spec.validate()
    spec.optimize(quantization=quantization)
    with staged_dir(out, "export") as tmp:  # a failed export leaves the previous one whole
        spec.save(str(tmp))
        info = {"weights_sha256": file_sha256(model_dir / WEIGHTS_FILE), "quantization": quantization}
        (tmp / INFO_FILE).write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return out


def _check_export(ct2_dir: Path, model_dir: Path) -> None:
    """The export exists and was made from this model directory's current weights."""
    info_file = ct2_dir / INFO_FILE
    if not (ct2_dir / "model.bin").is_file() or not info_file.is_file():
        raise ModelLoadError(f"{ct2_dir}: no CTranslate2 export found (write one with: {_export_command(model_dir)})")
    try:
        recorded = json.loads(info_file.read_text(encoding="utf-8"))["weights_sha256"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise ModelLoadError(f"{info_file}: expected JSON with a weights_sha256 key") from None
    if recorded != file_sha256(model_dir / WEIGHTS_FILE):
        raise ModelLoadError(
            f"{ct2_dir}: exported from other weights than {model_dir / WEIGHTS_FILE} "
            f"(re-export with: {_export_command(model_dir)})"
        )


def engine_threads(cores: int) -> tuple[int, int]:
    """(inter_threads, intra_threads) of the CTranslate2 engine on ``cores`` cores: one single-threaded worker per
    core, each decoding its share of a batch (workshop/bench/engine_threads.py measures the alternatives)."""
    return max(1, cores), 1


class CT2Translator(Translator):
    """Decodes with CTranslate2; the PyTorch model beside it cuts sources and computes the attention maps."""

    def __init__(
        self,
        model: Transformer,
        tokenizer: Tokenizer,
        ct2_dir: Path,
        compute_type: str = "default",
        threads: tuple[int, int] | None = None,
        guard: NameGuard | None = None,
    ) -> None:
        super().__init__(model, tokenizer, guard)
        self.ct2_dir = Path(ct2_dir)
        ct2_device = "cuda" if self.device.type == "cuda" else "cpu"
        self.inter, intra = threads or engine_threads(torch.get_num_threads())
        self.engine = _ctranslate2().Translator(
            str(ct2_dir), device=ct2_device, compute_type=compute_type, inter_threads=self.inter, intra_threads=intra
        )
        self.tgt_ids = {tokenizer.tgt.id_to_piece(i): i for i in range(tokenizer.tgt.get_piece_size())}

    @classmethod
    def load(
        cls,
        directory: Path = DEFAULT_MODEL,
        device: str = "cpu",
        ct2_dir: Path | None = None,
        compute_type: str = "default",
    ) -> CT2Translator:
        """The model directory plus its export (default ``directory/ctranslate2``), checked to match."""
        ct2_dir = Path(ct2_dir) if ct2_dir is not None else Path(directory) / CT2_DIR
        loaded = load_model(directory, device)
        _check_export(ct2_dir, Path(directory))
        return cls(loaded.model, loaded.tokenizer, ct2_dir, compute_type, guard=load_guard(Path(directory)))

    def decode_batch(self, texts: list[str], options: DecodeOptions = GREEDY) -> list[Translation]:
        """As ``Translator.decode_batch``, with the same per-sentence output caps (EOS forced at the cap)."""
        encoded = [self.encode(t) for t in texts]
        # CTranslate2 returns an empty output for a source that is only </s> (empty text): PyTorch decodes those.
        empty = [i for i, (ids, _) in enumerate(encoded) if len(ids) == 1]
        rest = [i for i, (ids, _) in enumerate(encoded) if len(ids) > 1]
        out = dict(zip(empty, super().decode_batch([texts[i] for i in empty], options), strict=True)) if empty else {}
        if not rest:
            return [out[i] for i in range(len(texts))]
        c = self.model.config
        src_lengths = torch.tensor([len(encoded[i][0]) for i in rest])
        limits = max_output_lengths(src_lengths, options.max_len_a, options.max_len_b, c.max_positions).tolist()
        sources = [self.tokenizer.src_pieces(encoded[i][0]) for i in rest]
        results = self.engine.translate_batch(
            sources,
            beam_size=options.beam_size,
            num_hypotheses=options.n_best,
            length_penalty=options.length_penalty,
            max_decoding_length=max(limits),  # one cap per batch; each sentence's own is applied below
            min_decoding_length=0,
            max_input_length=0,  # Translator.encode has cut the source already
            max_batch_size=-(-len(sources) // self.inter),  # one share per worker: the workers decode in parallel
            return_end_token=True,
            return_scores=True,
        )
        for i, source, result, limit in zip(rest, sources, results, limits, strict=True):
            hyps = [
                self._hypothesis(source, p, s, limit, options)
                for p, s in zip(result.hypotheses, result.scores, strict=True)
            ]
            unique = {tuple(h.tokens): h for h in reversed(hyps)}  # cut at the cap, two beams can become one
            hyps = sorted(unique.values(), key=lambda h: h.score, reverse=True)
            ids, cut = encoded[i]
            out[i] = self._translation(texts[i], ids, cut, hyps)
        return [out[i] for i in range(len(texts))]

    def _hypothesis(
        self, source: list[str], pieces: list[str], score: float, limit: int, options: DecodeOptions
    ) -> Hypothesis:
        """Our Hypothesis from CTranslate2's pieces (</s> included when it stopped by itself) and score.

        CTranslate2's score is log_prob / length**length_penalty (EOS counted), for greedy search too.
        """
        eos, penalty = self.model.config.eos_id, options.length_penalty
        ids = [self.tgt_ids[p] for p in pieces]
        if eos in ids[:limit]:
            ids = ids[: ids.index(eos) + 1]
            log_prob = score * len(ids) ** penalty
            return Hypothesis(ids, log_prob, score if options.beam_size > 1 else log_prob)
        ids = ids[: limit - 1] + [eos]  # past this sentence's cap: EOS forced there, as in model/decode.py
        log_prob = sum(self.engine.score_batch([source], [self.tokenizer.tgt_pieces(ids[:-1])])[0].log_probs)
        normalised = log_prob / len(ids) ** penalty if options.beam_size > 1 else log_prob
        return Hypothesis(ids, log_prob, normalised, truncated=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workshop ct2-export", description=export.__doc__)
    parser.add_argument("--model", "--run", type=Path, required=True, help="model (or run) directory")
    parser.add_argument("--out", type=Path, help=f"directory to write (default: MODEL/{CT2_DIR})")
    parser.add_argument("--quantization", choices=QUANTIZATIONS, default="float32", help="the export's weights")
    args = parser.parse_args(argv)
    try:
        out = export(args.model, args.out, args.quantization)
    except (ModelLoadError, ExportError, OutputError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        print(f"error: writing {args.out or args.model / CT2_DIR} failed ({err})", file=sys.stderr)
        return 2
    size = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    print(f"wrote {out} ({size / 1e6:.1f} MB)")
    return 0
