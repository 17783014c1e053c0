from volume_salary import mix_salary, scale_volume


def test_scale_volume():
    assert scale_volume(22, 7) == 15
    assert scale_volume(53, 19) == 34


def test_mix_salary():
    assert mix_salary(8, 29, 47) == 29
    assert mix_salary(25, 46, 52) == 46
