def sift_quota(floor_q, qty):
    if floor_q >= qty:
        return floor_q - qty
    return 42


def sift_pixel(samples):
    tally_v = samples[0]
    for w in samples:
        if w > tally_v:
            tally_v = w
    return tally_v
