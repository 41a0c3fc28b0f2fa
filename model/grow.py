"""Growing a trained model deeper without changing what it computes (function-preserving growth).

A pre-norm layer adds its sublayers' outputs to the residual stream: x + W_O·Attention(LN(x)) and
x + W2·ReLU(W1·LN(x)). A layer whose output projections (W_O of each attention, W2 of the feed-forward block,
and their biases) are zero adds nothing, so a stack with such layers inserted computes exactly what the parent
computed (Chen et al. 2016, Net2Net; the zero-initialised residual branches of Goyal et al. 2017 and Bachlechner
et al. 2020, ReZero). Each new layer starts as a copy of the parent layer below it, its projections into the
stream zeroed: its queries, keys, values and W1 already read meaningful features, and training opens it (the
gradient of a zero W_O or W2 is not zero). Progressive stacking (Gong et al. 2019) grows BERT the same way, by
copying layers.

Used by ``training.train`` when ``--init-from`` is given with more encoder or decoder layers than the parent
(e.g. ``--model.n_encoder_layers=8``: the deep-encoder, shallow-decoder shape of Kasai et al. 2021).
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from model.config import ConfigError, ModelConfig
from model.transformer import Transformer

# The shape fields growth may change; every other field of the child's config must equal the parent's.
GROWABLE = ("n_encoder_layers", "n_decoder_layers")


def parent_layers(n_parent: int, n_child: int) -> list[int]:
    """For each child layer, the parent layer it copies: parent layers spread evenly, in order, each copied to one
    run of consecutive child layers (4 → 8: [0, 0, 1, 1, 2, 2, 3, 3]; 3 → 4: [0, 0, 1, 2])."""
    if not 0 < n_parent <= n_child:
        raise ConfigError(f"growth goes from fewer layers to as many or more, not {n_parent} → {n_child}")
    return [j * n_parent // n_child for j in range(n_child)]


def check_growable(parent: ModelConfig, child: ModelConfig) -> None:
    """Raise ConfigError unless ``child`` is ``parent`` with as many or more layers, and pre-norm."""
    changed = [f.name for f in dataclasses.fields(parent) if getattr(parent, f.name) != getattr(child, f.name)]
    fixed = [name for name in changed if name not in GROWABLE]
    if fixed:
        raise ConfigError(f"{', '.join(f'model.{n}' for n in fixed)}: only the number of layers can grow from a parent")
    for name in GROWABLE:
        parent_layers(getattr(parent, name), getattr(child, name))  # raises on fewer
    if changed and parent.norm != "pre":
        # Post-norm ends each layer with LayerNorm(x + 0) ≠ x: a zeroed layer would still change the output.
        raise ConfigError("model.norm: growing keeps the output only for pre-norm models (post-norm given)")


def grow(parent: Transformer, config: ModelConfig) -> Transformer:
    """A model of shape ``config`` computing exactly what ``parent`` computes (up to float rounding): embeddings,
    final norms and output layer copied; parent layers copied in order, each followed by its zeroed copies."""
    check_growable(parent.config, config)
    child = Transformer(config)
    child.load_state_dict(_grown_state(parent, config))
    return child


def _grown_state(parent: Transformer, config: ModelConfig) -> dict[str, torch.Tensor]:
    state = {name: tensor for name, tensor in parent.state_dict().items() if "_layers." not in name}
    for stack, n_child in (("encoder_layers", config.n_encoder_layers), ("decoder_layers", config.n_decoder_layers)):
        layers: nn.ModuleList = getattr(parent, stack)
        sources = parent_layers(len(layers), n_child)
        for j, i in enumerate(sources):
            copy = {name: tensor.clone() for name, tensor in layers[i].state_dict().items()}
            if j > 0 and sources[j - 1] == i:  # a new layer: its projections into the stream (W_O, W2) zeroed
                for name in copy:
                    if ".out_proj." in name or name.startswith("ffn.w2."):
                        copy[name].zero_()
            state.update({f"{stack}.{j}.{name}": tensor for name, tensor in copy.items()})
    return state
