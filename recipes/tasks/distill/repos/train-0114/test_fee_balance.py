from fee_balance import clip_balance, scale_fee


def test_scale_fee():
    assert scale_fee([32, 59, 8, 41, 56]) == 59
    assert scale_fee([59, 14, 50]) == 59


def test_clip_balance():
    assert clip_balance(41, 23) == 1171
    assert clip_balance(20, 55) == 615
