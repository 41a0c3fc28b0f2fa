"""An encoder–decoder Transformer (Vaswani et al. 2017) written from scratch; the files in the paper's order.

    config.py       ModelConfig: d_model, n_heads (d_head = d_model / n_heads), d_ff, layers, pre/post norm
    attention.py    multi-head scaled dot-product attention (§3.2), padding and causal masks
    layers.py       positional encoding (§3.5), feed-forward (§3.3), the sublayer connection (residual + LayerNorm,
                    pre- or post-norm), encoder and decoder layers (§3.1), the key/value cache used when decoding
    transformer.py  embeddings (§3.4), the encoder stack, the decoder stack (one loop: a full teacher-forced
                    pass or one step at a time with the cache), the output projection
    loss.py         label-smoothed cross-entropy at the real target positions (training, teaching, the toy task)
    decode.py       greedy and beam search
    attention_maps.py  every attention map of one (source, output) pair, from one teacher-forced pass
    intervention.py what a pass changes and returns: heads switched off, token vectors given directly, the
                    attention weights asked for; each layer's share of it
    weights.py      weights I/O: model.safetensors, shapes checked from the file's header before anything is
                    allocated
    typed_config.py the frozen, checked records every config is built from
    run_dir.py      the names of a model (and run) folder's files

Nothing here knows about text: the tokenizer, case markup and source characters are in data/, the Translator and
the command line in translate/.

Shapes, named the same way in every file:

    B  batch: sentences (× beam size in beam search)
    S  source length in subwords, EOS and padding included
    T  target length: the decoder input BOS y1 … y(T-1), or the outputs y1 … y(T-1) EOS it predicts
    H  heads (n_heads)
    D  d_head = d_model / n_heads
    V  vocabulary size
    L  layers

Masks are boolean, True = may attend, and broadcast to (B, H, T_q, T_k). Attention weights are returned per
layer and head, (B, H, T_q, T_k), never stored on a module; how they are shown honestly (which row predicts
which token, sinks, subwords, beams) is in docs/attention-pitfalls.md.
"""
