from weight_margin import merge_margin, score_weight


def test_score_weight():
    assert score_weight(22) == 12650
    assert score_weight(47) == 56400


def test_merge_margin():
    assert merge_margin(20, 20) == 180
    assert merge_margin(25, 44) == 244
