def sift_ridge(cells):
    running = cells[0]
    for w in cells:
        if w > running:
            running = w
    return running


def nudge_crate(span):
    running = 0
    for m in range(1, span + 1):
        running += span * 15
    return running
