"""The word fast path (pretokenize.WordEncoder) gives exactly the ids of ``tokenizers`` itself, for real tokenizers
(Qwen3's, SmolLM2's GPT-2-style one, and SmolLM2's vocabulary under Llama 3's pattern), on real and random ASCII
text and through ChatTemplate.encode; a tokenizer it cannot reproduce gets no fast path and still encodes right."""

from __future__ import annotations

import json
import random
import re
import string
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tokenizers import Regex, Tokenizer, normalizers, pre_tokenizers, processors

from polar_hpc.chat import pretokenize
from polar_hpc.chat.pretokenize import LLAMA3_PATTERN, QWEN2_PATTERN, WordEncoder
from polar_hpc.chat.template import ChatTemplate
from tests.fixtures.conversations import CORPUS, UNICODE, agent_conversation

ROOT = Path(__file__).resolve().parents[3]
CONTROLS = [chr(c) for c in [*range(32), 127]]

CODE = '''def encode(self, text: str) -> list[int]:
    """Ids of ``text``."""
    if x != 0 and y <= 3 or z >= -1:
        return [a[i] ** 2 for i in range(10)]  # done
\tpass  \t
class A(B, metaclass=M): ...
x = {'k': (1, 2.5e-3, 0x1F, 1_000_000)}; y = f"{x!r:>10}" @ z
'''
JSON = ('{"model": "policy", "stream": true, "max_tokens": 50, "seed": 1, "messages": [{"role": "user", '
        '"content": "hi\\n\\ttab \\"quoted\\" \\u00e9"}], "x": -1.5e-3, "n": null, "a": [], "o": {}}')
SHELL = '''$ ls -la /repo
total 48
drwxr-xr-x  5 root root 4096 Dec  1 11:57 .
-rw-r--r--  1 root root  384 Dec  1 11:57 ASSET.json
$ git log --oneline -2
fea49fc bytelevel: the table's build time (about 0.2 s)
$ pytest -q
..F.                                                                     [100%]
=================================== FAILURES ===================================
E   AssertionError: assert 1 == 2\r
1 failed, 3 passed in 0.12s\r\n\r\n
'''
PROSE = ("It's a truth universally acknowledged, that a single man in possession of a good fortune, must be in want "
         "of a wife. I'LL SAY IT'S FINE; they'Re here, we'VE gone, I'M done, you'D know, DON'T, 'S 'T 'Ll 'rE "
         "'ve'm'd''s x''ll -- 'quoted' \"double\" (parens) [brackets] {braces} ... !!! ??? ;-) :: => <= != ** //")
EDGES = [
    " ", "  ", "\n", "\n\n\n", "\t", "\t\t", "\r", "\r\n", "\r\n\r\n", " \n", "\n ", " \n ", "  \n  ", "\t\n\t",
    "a ", "a  ", " a", "  a", "a\n", "\na", "a \n", "a\n ", "a \n b", "a  \t\n  b", "   x   ", "x\n\n\n\ny",
    "'s", "'S", " 's", "''s", "'", "''", "a'", "'a", "x's", "X'S", "x 's", "'ll", "'LL", "'lL", "'rEx", "'dd",
    "0", "12", "123", "1234", "12345", "3.14159", "1,000,000", "-42", "1e-9", "a1b2c3", " 1", "  12 ", "x12y",
    "!", "!!", "!!!???...", "-----", "=====\n", "```\n", "```python\n", " ?!\r\n", "?\n\n", ";\r\r\n", "#!/bin/sh\n",
    "\x0b", "\x0c", "\x0b\x0c", "a\x0bb", " \x0b ", "\x1c", "\x1f", "\x1c\x1d\x1e\x1f", " \x1c ", "a\x1cb", "\x1c\n",
    "\x7f", "\x00", "a\x00b", "\x1b[31mred\x1b[0m", "\x08\x08", "\x07",
]
EDGES += [f"{pre}{c}{post}" for c in CONTROLS for pre, post in
          [("", ""), ("a", "b"), (" ", " "), ("", " "), (" ", ""), ("x", "\n"), ("\n", "x"), ("1", "1"), ("'", "s"),
           ("!", "!"), ("", c)]]


def _repo_text() -> list[str]:
    """Real prose and code: the ASCII lines of the README, docs/ and polar_hpc/inference/, in 3,000-char pieces."""
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "polar_hpc" / "inference").glob("*.py"))]
    out = []
    for path in paths:
        text = "".join(line for line in path.read_text(encoding="utf-8").splitlines(keepends=True) if line.isascii())
        out += [text[i:i + 3000] for i in range(0, len(text), 3000)]
    return out


CORPUS_TEXTS = [CODE, JSON, SHELL, PROSE, *EDGES, CODE + "\n\n" + SHELL + PROSE, *_repo_text()]

UNITS = [*string.ascii_lowercase * 6, *string.ascii_uppercase * 2, *string.digits * 2, *" " * 40, *"\n" * 10,
         *"\t" * 4, "\r", "\r\n", "  ", "    ", "'" * 6, "'s", "'S", "'ll", "'LL", "'re", "'Ve", "'m", "'D", "'t",
         *string.punctuation, *CONTROLS]
"""The weighted alphabet of the random strings: letters, spaces and newlines most, every other ASCII character."""


def random_texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choices(UNITS, k=rng.randint(0, 40))) for _ in range(n)]


def _plain(tok: Tokenizer, texts: list[str]) -> list[str]:
    """The texts with no added token of ``tok`` in them (what ChatTemplate.encode hands the fast path)."""
    added = [t.content for t in tok.get_added_tokens_decoder().values()]
    kept = [t for t in texts if not any(a in t for a in added)]
    assert len(kept) > 0.9 * len(texts)
    return kept


@pytest.fixture(scope="module")
def smollm2_copy(smollm2_dir: Path) -> Tokenizer:
    """A private SmolLM2 tokenizer the tests below may change."""
    return Tokenizer.from_file(str(smollm2_dir / "tokenizer.json"))


@pytest.fixture(scope="module")
def tokenizers(tiny_qwen3_dir: Path, smollm2_dir: Path) -> dict[str, Tokenizer]:
    llama3 = Tokenizer.from_file(str(smollm2_dir / "tokenizer.json"))
    llama3.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    return {"qwen3": ChatTemplate.from_model_dir(tiny_qwen3_dir).tokenizer,
            "smollm2": ChatTemplate.from_model_dir(smollm2_dir).tokenizer, "llama3-pattern": llama3}


def expected(tok: Tokenizer, text: str) -> list[int]:
    return list(tok.encode(text, add_special_tokens=False).ids)


@pytest.mark.parametrize("name", ["qwen3", "smollm2", "llama3-pattern"])
def test_corpus_and_random_text_equal_tokenizers(name: str, tokenizers: dict[str, Tokenizer]) -> None:
    tok = tokenizers[name]
    words = WordEncoder.of(tok)
    assert words is not None
    for text in _plain(tok, CORPUS_TEXTS) + random_texts(2500, seed=len(name)):
        assert words.encode(text) == expected(tok, text), repr(text)
    for text in CORPUS_TEXTS[:8]:  # again, every word now known
        assert words.encode(text) == expected(tok, text), repr(text)


def test_the_ascii_patterns_are_the_ones_tokenizers_writes(tokenizers: dict[str, Tokenizer]) -> None:
    """The known patterns, byte for byte: Qwen3's tokenizer.json carries QWEN2_PATTERN."""
    state = tokenizers["qwen3"].pre_tokenizer.__getstate__().decode()
    assert pretokenize._source_pattern(json.loads(state)) == QWEN2_PATTERN
    assert set(pretokenize.ASCII_PATTERNS) == {QWEN2_PATTERN, LLAMA3_PATTERN, pretokenize.GPT2_PATTERN}


@pytest.mark.parametrize("wrong", [
    lambda p: p.replace("(?i:", "(?:"),  # contractions case-sensitive
    lambda p: p.replace(r"\t\n\x0b\x0c\r ", r"\t\n\x0b\x0c\r \x1c-\x1f"),  # str.isspace's idea of a space
    lambda p: p.replace(r"(?![^\t\n\x0b\x0c\r ])", ""),  # no lookahead
], ids=["case", "isspace", "lookahead"])
def test_a_pattern_that_cuts_otherwise_gets_no_fast_path(wrong: Callable[[str], str], tokenizers: dict[str, Tokenizer],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    patterns = pretokenize.ASCII_PATTERNS
    monkeypatch.setattr(pretokenize, "ASCII_PATTERNS", {k: wrong(v) for k, v in patterns.items()})
    sources = {"qwen3": QWEN2_PATTERN, "smollm2": pretokenize.GPT2_PATTERN, "llama3-pattern": LLAMA3_PATTERN}
    changed = [name for name, source in sources.items() if wrong(patterns[source]) != patterns[source]]
    assert len(changed) >= 2  # GPT-2's contractions are case-sensitive already
    for name in changed:
        assert WordEncoder.of(tokenizers[name]) is None, name


class _Identity:
    """A custom (Python) normalizer or pre-tokenizer that changes nothing: its configuration cannot be read."""

    def normalize(self, normalized: object) -> None:
        pass

    def pre_tokenize(self, pretok: object) -> None:
        pass


def _split(pattern: str) -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(pattern), "isolated"),
                                    pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])


REFUSED: dict[str, Callable[[Tokenizer], None]] = {
    "lowercase": lambda t: setattr(t, "normalizer", normalizers.Lowercase()),
    "nfkc": lambda t: setattr(t, "normalizer", normalizers.NFKC()),
    "prepend": lambda t: setattr(t, "normalizer", normalizers.Prepend("_")),
    "replace": lambda t: setattr(t, "normalizer", normalizers.Replace(" ", "_")),
    "nfc-sequence": lambda t: setattr(t, "normalizer", normalizers.Sequence([normalizers.NFC(),
                                                                             normalizers.Lowercase()])),
    "prefix-space": lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.ByteLevel(add_prefix_space=True)),
    "bytelevel-no-regex": lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.ByteLevel(add_prefix_space=False,
                                                                                         use_regex=False)),
    "other-pattern": lambda t: setattr(t, "pre_tokenizer", _split(r"\w+|\W")),
    "removed": lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), "removed"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])),
    "whitespace": lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.Whitespace()),
    "custom-normalizer": lambda t: setattr(t, "normalizer", normalizers.Normalizer.custom(_Identity())),
    "custom-pre-tokenizer": lambda t: setattr(t, "pre_tokenizer", pre_tokenizers.PreTokenizer.custom(_Identity())),
    "dropout": lambda t: setattr(t.model, "dropout", 0.5),
    "subword-prefix": lambda t: setattr(t.model, "continuing_subword_prefix", "##"),
    "word-suffix": lambda t: setattr(t.model, "end_of_word_suffix", "</w>"),
}


@pytest.fixture
def changed(smollm2_copy: Tokenizer) -> Iterator[Tokenizer]:
    tok = smollm2_copy
    saved = tok.normalizer, tok.pre_tokenizer, tok.post_processor
    yield tok
    tok.normalizer, tok.pre_tokenizer, tok.post_processor = saved
    tok.model.dropout = None
    tok.model.continuing_subword_prefix = ""
    tok.model.end_of_word_suffix = ""


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_tokenizer_it_cannot_reproduce_gets_none_and_encodes_right(case: str, changed: Tokenizer,
                                                                     smollm2_dir: Path) -> None:
    assert WordEncoder.of(changed) is not None
    REFUSED[case](changed)
    assert WordEncoder.of(changed) is None
    base = ChatTemplate.from_model_dir(smollm2_dir)
    ct = ChatTemplate(changed, base.templates, base.special_tokens)
    for conv in CORPUS[:4]:
        text = ct.render(conv.messages, conv.tools)
        if case != "dropout":  # dropout samples its merges: the ids are not a function of the text
            assert ct.encode(text) == expected(changed, text)


def test_post_processors_that_add_nothing_keep_the_fast_path(changed: Tokenizer) -> None:
    changed.post_processor = processors.Sequence([processors.ByteLevel(), processors.TemplateProcessing(
        single="<|im_start|> $A", special_tokens=[("<|im_start|>", 1)])])
    words = WordEncoder.of(changed)
    assert words is not None and words.encode(PROSE) == expected(changed, PROSE)
    changed.post_processor = processors.ByteLevel()
    assert WordEncoder.of(changed) is not None


@pytest.mark.parametrize("model", ["tiny-qwen3", "smollm2"])
def test_chat_template_encode_equals_the_slow_path(model: str, tiny_qwen3_dir: Path, smollm2_dir: Path) -> None:
    base = ChatTemplate.from_model_dir(tiny_qwen3_dir if model == "tiny-qwen3" else smollm2_dir)
    ct = ChatTemplate(base.tokenizer, base.templates, base.special_tokens)  # its own caches, empty
    assert ct._words is not None
    rng = random.Random(7)
    agent, tools = agent_conversation(40)
    texts = [ct.render(c.messages, c.tools) for c in CORPUS] + [ct.render(agent, tools)]
    for i, text in enumerate(random_texts(60, seed=3)):
        content = text + (UNICODE if i % 5 == 0 else "")
        texts.append(ct.render([{"role": "system", "content": rng.choice(EDGES)},
                                {"role": "user", "content": content},
                                {"role": "assistant", "content": rng.choice(EDGES) + text}]))
    for text in texts:
        assert ct.encode(text) == expected(ct.tokenizer, text), repr(text)
        assert ct.encode(text) == expected(ct.tokenizer, text), repr(text)  # from the kept pieces


def test_the_word_cache_is_bounded_and_shared_between_threads(tokenizers: dict[str, Tokenizer],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pretokenize, "WORD_CACHE_WORDS", 50)
    tok = tokenizers["qwen3"]
    words = WordEncoder.of(tok)
    assert words is not None
    texts = random_texts(300, seed=11) + [" " * 100 + "x", "=" * 200]
    want = [expected(tok, t) for t in texts]
    errors: list[str] = []

    def run(k: int) -> None:
        for text, ids in list(zip(texts, want, strict=True))[k::2] * 2:
            if words.encode(text) != ids:
                errors.append(text)

    threads = [threading.Thread(target=run, args=(k % 2,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert 0 < len(words._words) <= 50
    assert all(len(w) <= pretokenize.WORD_CHARS for w in words._words)


def test_non_ascii_is_not_the_fast_paths(tokenizers: dict[str, Tokenizer]) -> None:
    """The ASCII restatement would cut non-ASCII text otherwise (which is why the caller checks isascii)."""
    words = WordEncoder.of(tokenizers["qwen3"])
    assert words is not None
    assert re.compile(pretokenize.ASCII_PATTERNS[QWEN2_PATTERN], re.ASCII).findall("né") == ["n", "é"]
