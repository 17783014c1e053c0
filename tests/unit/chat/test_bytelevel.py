"""The byte table decodes exactly as ``tokenizers`` does (the real Qwen3 and SmolLM2 tokenizers): every token
alone, random sequences rich in byte tokens (cut and invalid UTF-8), added tokens in and outside the byte
alphabet, ids the tokenizer does not know."""

from __future__ import annotations

import random

import pytest
from tokenizers import Tokenizer

from polar_hpc.assets import asset_path
from polar_hpc.chat.bytelevel import ByteTable


def tokenizer(name: str) -> Tokenizer:
    return Tokenizer.from_file(str(asset_path(name) / "tokenizer.json"))


@pytest.fixture(scope="module", params=["tiny-qwen3", "smollm2"])
def tok(request: pytest.FixtureRequest) -> Tokenizer:
    return tokenizer(request.param)


def test_every_token_alone_and_random_sequences_decode_as_tokenizers_does(tok: Tokenizer) -> None:
    table = ByteTable.of(tok)
    assert table is not None
    size = tok.get_vocab_size(with_added_tokens=True)
    for i in range(0, size, 7):
        assert table.decode([i]) == tok.decode([i], skip_special_tokens=False), i
    rng = random.Random(7)
    for _ in range(2000):
        ids = [rng.randrange(300) if rng.random() < 0.6 else rng.randrange(size) for _ in range(rng.randrange(1, 40))]
        assert table.decode(ids) == tok.decode(ids, skip_special_tokens=False), ids
    assert table.decode([]) == ""


def test_added_tokens_in_and_outside_the_byte_alphabet() -> None:
    tok = tokenizer("tiny-qwen3")
    words = ["héllo wörld", "héllo", "ab cd", "\u00ad", "日本", "<my_tool>"]
    tok.add_tokens(words)
    table = ByteTable.of(tok)
    assert table is not None
    ids = [tok.token_to_id(w) for w in words]
    hello = tok.encode("Hello", add_special_tokens=False).ids
    for i in ids:
        assert table.decode([i, *hello, i]) == tok.decode([i, *hello, i], skip_special_tokens=False)
    assert table.decode([ids[1]]) == "h\ufffdllo"  # a character of the alphabet stands for its byte, as in tokenizers


def test_ids_the_tokenizer_does_not_know_go_to_tokenizers() -> None:
    tok = tokenizer("tiny-qwen3")
    table = ByteTable.of(tok)
    assert table is not None
    size = tok.get_vocab_size(with_added_tokens=True)
    assert table.decode([9707, size + 5]) == tok.decode([9707, size + 5], skip_special_tokens=False)
    with pytest.raises(OverflowError):
        table.decode([9707, -1])


def test_other_decoders_get_no_table() -> None:
    from tokenizers import decoders

    tok = tokenizer("tiny-qwen3")
    tok.decoder = decoders.Sequence([decoders.ByteLevel()])
    assert ByteTable.of(tok) is None
