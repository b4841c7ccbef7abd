"""Fit a power law to loss against compute (a look-alike of a scaling-law task)."""

import numpy as np


# EVOLVE-BLOCK-START
def law(compute, params):
    """Predicted loss."""
    a, b = params
    return a * compute ** (-b)


def fit(compute, loss):
    """Parameters of law() for the data."""
    slope, intercept = np.polyfit(np.log(compute), np.log(loss), 1)
    return [float(np.exp(intercept)), float(-slope)]


# EVOLVE-BLOCK-END
