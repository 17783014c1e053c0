from fee_margin import clip_fee, trim_margin


def test_clip_fee():
    assert clip_fee(56, 58) == 1178
    assert clip_fee(32, 14) == 654


def test_trim_margin():
    assert trim_margin(22, 44) == 682
    assert trim_margin(13, 26) == 403
