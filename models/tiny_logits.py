"""A tiny VLM whose next-token logits are set by hand: the answer-token tests' model.

Where it sits: beside :mod:`models.tiny` (test infrastructure, built offline, never
committed). The tests of how an answer is read (``models.answers``) need a real
checkpoint, loaded by both backends, whose next token is known exactly: say 10 on
``" Yes"``, 1 on ``"no"``, 0 on everything else, whatever the frames and the prompt.

How: an Idefics3 (SmolVLM's family) of the ``plumbing`` profile, on a tokenizer trained
on :data:`SPELLINGS` so that ``yes``, ``Yes``, ``YES`` and ``no``, ``No``, ``NO``, each bare
and with a leading space, are single tokens of their own (as in real vocabularies). Every
layer's attention and MLP output projection is zeroed and every embedding row set to one
vector ``e``, so the last position's hidden state is ``h = norm(e)`` whatever the input;
the output rows are then ``logit · h / |h|²``: exactly the logits asked for (float32).
"""

from __future__ import annotations

from pathlib import Path

from models.base import ModelError

#: Lines that make the BPE learn every spelling of yes and no as one token (with CORPUS).
SPELLINGS = [
    "Yes, it did.", "No, it did not.", "yes", "no", "YES", "NO",
    "Answer: Yes Answer: No Assistant: yes Assistant: no User: YES User: NO",
]


def spelling_tokenizer(special: list[str]):
    """The tiny byte-level BPE trained with :data:`SPELLINGS` and no added answer tokens:
    ``"Yes"``, ``" Yes"``, ``"yes"``, ``" yes"`` (and no's) are separate BPE tokens."""
    from models.tiny import CORPUS, build_tokenizer

    return build_tokenizer(special, corpus=CORPUS + SPELLINGS * 10, answers=())


def build_logit_model(out: str | Path, logits: dict[str, float], seed: int = 0) -> Path:
    """Write an Idefics3 checkpoint under ``out`` whose next-token logits are ``logits``
    (token text, as it encodes to one token, -> logit) and 0 for every other token.

    Raises:
        ModelError: a text of ``logits`` that is not one token of the tokenizer.
    """
    import torch
    from transformers.utils import logging as hf_logging

    from models.hf import save_checkpoint
    from models.tiny import BUILDERS, PROFILES, SPECIAL

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.manual_seed(seed)
    tok = spelling_tokenizer(SPECIAL["idefics3"])
    model, proc = BUILDERS["idefics3"](tok, PROFILES["plumbing"])
    text = model.model.text_model
    if model.config.text_config.tie_word_embeddings:
        raise ModelError("build_logit_model: tied input and output embeddings")
    with torch.no_grad():
        for layer in text.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        e = torch.randn(text.embed_tokens.weight.shape[1])
        text.embed_tokens.weight.copy_(e.expand_as(text.embed_tokens.weight))
        h = text.norm(e[None])[0]
        head = model.lm_head.weight
        head.zero_()
        for token, value in logits.items():
            ids = tok.encode(token, add_special_tokens=False)
            if len(ids) != 1:
                raise ModelError(f"build_logit_model: {token!r} is {len(ids)} tokens {ids}")
            head[ids[0]] = value * h / h.dot(h)
    path = Path(out)
    model.eval()
    save_checkpoint(model, proc, path)
    return path
