from weight_length import clip_weight, make_length


def test_clip_weight():
    assert clip_weight(31, 55) == 1853
    assert clip_weight(25, 53) == 1489


def test_make_length():
    assert make_length(4) == 110
    assert make_length(46) == 11891
