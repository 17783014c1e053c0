from salary_speed import clip_salary, shift_speed


def test_clip_salary():
    assert clip_salary(56) == 79800
    assert clip_salary(31) == 24800


def test_shift_speed():
    assert shift_speed(50) == 6375
    assert shift_speed(34) == 2975
