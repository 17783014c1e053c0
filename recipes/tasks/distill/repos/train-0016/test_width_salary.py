from width_salary import limit_width, scale_salary


def test_limit_width():
    assert limit_width(41, 4) == 1029
    assert limit_width(13, 37) == 362


def test_scale_salary():
    assert scale_salary(13) == 2821
    assert scale_salary(34) == 18445
