"""How an answer is read (models.answers): its spellings, their single tokens under real
tokenizers (trained here), and the log-sum-exp that combines them."""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from models.answers import answer_variants, flat_ids, group_logsumexp, softmax, variant_ids
from models.base import ModelError


@cache
def tiny_tokenizer():
    """The tiny models' tokenizer: "yes"/"no" added as tokens, no other spelling of them."""
    from models.tiny import SPECIAL, build_tokenizer

    return build_tokenizer(SPECIAL["idefics3"])


@cache
def spelling_tokenizer():
    """A BPE whose vocabulary has yes, Yes, YES, no, No, NO bare and with a leading space."""
    from models.tiny import SPECIAL
    from models.tiny_logits import spelling_tokenizer as build

    return build(SPECIAL["idefics3"])


def test_a_word_has_six_spellings_a_letter_two():
    assert answer_variants("yes") == ("yes", " yes", "Yes", " Yes", "YES", " YES")
    assert answer_variants("No") == ("No", " No", "no", " no", "NO", " NO")
    assert answer_variants("A") == ("A", " A")


def test_every_spelling_that_is_one_token_counts_for_its_answer():
    tok = spelling_tokenizer()
    vocab = tok.get_vocab()  # the vocabulary itself, not encode: "Ġ" is byte-level's space
    assert variant_ids(tok, ("yes", "no"), "m") == (
        tuple(vocab[t] for t in ("yes", "Ġyes", "Yes", "ĠYes", "YES", "ĠYES")),
        tuple(vocab[t] for t in ("no", "Ġno", "No", "ĠNo", "NO", "ĠNO")))


def test_the_tiny_tokenizer_has_one_spelling_of_yes_and_two_of_most_letters():
    tok = tiny_tokenizer()
    vocab = tok.get_vocab()
    assert variant_ids(tok, ("yes", "no"), "m") == ((vocab["yes"],), (vocab["no"],))
    # the corpus lists " A B C ... P": those letters have a space-led token, Q-Z do not
    assert variant_ids(tok, ("A", "P", "Q"), "m") == (
        (vocab["A"], vocab["ĠA"]), (vocab["P"], vocab["ĠP"]), (vocab["Q"],))


def test_an_answer_without_a_single_token_spelling_is_refused():
    with pytest.raises(ModelError, match=r"^model m: answer 'maybe' has no single-token variant "
                                         r"among \['maybe', ' maybe', 'Maybe', ' Maybe', 'MAYBE', "
                                         r"' MAYBE'\]$"):
        variant_ids(tiny_tokenizer(), ("yes", "maybe"), "m")


def test_two_answers_sharing_a_token_are_refused():
    tok = spelling_tokenizer()
    with pytest.raises(ModelError) as err:
        variant_ids(tok, ("yes", "Yes"), "m")
    assert str(err.value) == (f"model m: answers 'yes' and 'Yes' share token "
                              f"{tok.get_vocab()['Yes']} ('Yes'); each answer needs its own tokens")


def test_an_unknown_word_token_is_no_spelling():
    """A word-level vocabulary maps every unknown spelling to [UNK]: one token, but no answer
    (counted, "YES" and "NO" would share it)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    raw = Tokenizer(models.WordLevel({"[UNK]": 0, "yes": 1, "no": 2}, unk_token="[UNK]"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]")
    assert tok.encode("YES", add_special_tokens=False) == [0]
    assert variant_ids(tok, ("yes", "no"), "m") == ((1,), (2,))


def test_answers_combine_by_log_sum_exp_then_softmax():
    groups = ((10, 11, 12), (20,))
    assert flat_ids(groups) == [10, 11, 12, 20]
    values = np.log([1.0, 2.0, 5.0, 4.0])  # P(variants) 1 : 2 : 5 for one answer, 4 the other
    np.testing.assert_allclose(group_logsumexp(values, groups), [math.log(8), math.log(4)],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(softmax(group_logsumexp(values, groups)), [2 / 3, 1 / 3],
                               rtol=0, atol=1e-12)
