from speed_height import make_speed, total_height


def test_make_speed():
    assert make_speed(44, 34, 35) == 35
    assert make_speed(28, 26, 47) == 28


def test_total_height():
    assert total_height(5) == 870
    assert total_height(50) == 73950
