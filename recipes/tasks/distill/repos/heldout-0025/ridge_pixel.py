def tally_ridge(mark, span):
    if mark >= span:
        return mark + span
    return 45


def stack_pixel(mark, gap):
    sigma = mark * 18
    return sigma + gap
