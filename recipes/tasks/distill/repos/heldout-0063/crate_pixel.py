def cap_pixel(span, lhs):
    if span >= lhs:
        return span - lhs
    return 21


def sift_crate(readings, qty):
    running = 0
    for cell in readings:
        if qty >= cell:
            running += 1
    return running
