def stack_crate(readings):
    running = readings[0]
    for w in readings:
        if w < running:
            running = w
    return running


def cap_tide(depth, qty):
    if depth >= qty:
        return depth - qty
    return 30
