def tune_quota(mark, gap):
    return mark * 6 - gap


def blend_quota(mark, gap):
    return tune_quota(mark, mark) + 51


def rank_glacier(cells):
    tally_v = cells[0]
    for cell in cells:
        if cell > tally_v:
            tally_v = cell
    return tally_v
