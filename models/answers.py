"""Answer tokens: which next tokens count as each answer, and how their logits combine.

Where it sits: between a backend's tokenizer and its next-token logits. Every backend
(``models.hf``, ``models.vllm``) reads an answer's probability the same way:

* an answer (``"yes"``, ``"no"``, ``"A"`` …) stands for every *single-token* encoding of
  its surface variants (:func:`answer_variants`): ``yes``, ``Yes``, ``YES``, each bare and
  with a leading space. Which one a model puts its mass on depends on its chat template
  (SmolVLM2's ends ``Assistant:``, so its next token is ``" Yes"``; Qwen and Gemma answer
  ``"Yes"``), so reading one spelling reads a tail;
* an answer's logit is the log-sum-exp of its variants' logits (:func:`group_logsumexp`),
  and P(answer) is the softmax of those over the question's answers: the probability of
  saying the answer in any of its spellings, given that one of the answers is said.

Pure: the tokenizer is any object with ``encode(text, add_special_tokens=False)`` and
``decode(ids)`` (a Hugging Face tokenizer, vLLM's). No torch or vLLM import.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from models.base import ModelError


def answer_variants(answer: str) -> tuple[str, ...]:
    """The surface forms that count as ``answer``, distinct, in a fixed order.

    A word: as written, lower case, Capitalised and UPPER case, each bare and with one
    leading space (``"yes"`` -> ``yes, " yes", Yes, " Yes", YES, " YES"``). A single
    character (the letter answers) keeps its case, bare and with a leading space
    (``"A"`` -> ``A, " A"``): the options are printed in upper case, and the lower-case
    letters are words of their own (``" a"``, ``" i"``), not answers.
    """
    cases = [answer] if len(answer) == 1 else [answer, answer.lower(), answer.capitalize(),
                                               answer.upper()]
    out: list[str] = []
    for case in cases:
        for form in (case, " " + case):
            if form not in out:
                out.append(form)
    return tuple(out)


def _single_token(tokenizer, text: str, special: set[int]) -> int | None:
    """The one token ``text`` encodes to, or None: several tokens, a special token (an
    unknown-word token) or a token that does not decode back to ``text``."""
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) != 1 or ids[0] in special:
        return None
    return ids[0] if tokenizer.decode(ids).strip() == text.strip() else None


def variant_ids(tokenizer, choices: Sequence[str], model: str) -> tuple[tuple[int, ...], ...]:
    """Per answer, the distinct token ids of its single-token variants (:func:`answer_variants`).

    Args:
        tokenizer: the model's tokenizer.
        choices: the question's answers, e.g. ``("yes", "no")`` or ``("A", "B", "C")``.
        model: the model's name, for errors.
    Raises:
        ModelError: an answer with no single-token variant, or two answers sharing a token.
    """
    special = set(getattr(tokenizer, "all_special_ids", ()) or ())
    groups: list[tuple[int, ...]] = []
    owner: dict[int, str] = {}
    for answer in choices:
        ids: list[int] = []
        for form in answer_variants(answer):
            tid = _single_token(tokenizer, form, special)
            if tid is None or tid in ids:
                continue
            if tid in owner:
                raise ModelError(f"model {model}: answers {owner[tid]!r} and {answer!r} share "
                                 f"token {tid} ({form!r}); each answer needs its own tokens")
            owner[tid] = answer
            ids.append(tid)
        if not ids:
            raise ModelError(f"model {model}: answer {answer!r} has no single-token variant "
                             f"among {list(answer_variants(answer))}")
        groups.append(tuple(ids))
    return tuple(groups)


def flat_ids(groups: Sequence[Sequence[int]]) -> list[int]:
    """Every answer's variant ids in one list, answer by answer (what vLLM is allowed)."""
    return [i for g in groups for i in g]


def group_logsumexp(values: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """Per answer, the log-sum-exp of ``values`` over its variants.

    Args:
        values: (n_variants,) logits or log-probabilities, in :func:`flat_ids` order.
        groups: the answers' variant ids (only their lengths are used).
    Returns:
        (len(groups),) float64.
    """
    values = np.asarray(values, dtype=np.float64)
    out, start = [], 0
    for g in groups:
        part = values[start:start + len(g)]
        top = part.max()
        out.append(top + np.log(np.exp(part - top).sum()))
        start += len(g)
    return np.array(out)


def softmax(logits: np.ndarray) -> np.ndarray:
    """The softmax of (n,) answer logits, float64."""
    z = np.exp(np.asarray(logits, dtype=np.float64) - np.max(logits))
    return z / z.sum()
