from height import make_height, trim_height


def test_trim_height():
    assert trim_height([49, 16, 44], 16) == 3
    assert trim_height([50, 4, 35, 58, 46], 46) == 3


def test_make_height():
    assert make_height(14) == 3990
    assert make_height(56) == 60648
