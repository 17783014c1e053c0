from words import reverse_words


def test_reverse_words():
    assert reverse_words("hello big world") == "world big hello"


def test_single():
    assert reverse_words("x") == "x"
