from speed_volume import mix_speed, sum_volume


def test_mix_speed():
    assert mix_speed(47) == 9024
    assert mix_speed(7) == 224


def test_sum_volume():
    assert sum_volume([61, 29, 26]) == 61
    assert sum_volume([11, 28, 34]) == 34
