from margin_fee import mix_fee, scale_margin


def test_scale_margin():
    assert scale_margin(16, 55) == 43
    assert scale_margin(32, 50) == 43


def test_mix_fee():
    assert mix_fee(16, 28) == 188
    assert mix_fee(38, 37) == 417
