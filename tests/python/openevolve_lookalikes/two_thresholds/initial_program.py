"""Smooth a noisy signal with a moving average (a look-alike of a signal-processing task)."""

import numpy as np


# EVOLVE-BLOCK-START
def smooth(signal, window=3):
    """The signal, averaged over a sliding window."""
    kernel = np.ones(window) / window
    return np.convolve(signal, kernel, mode="same")


# EVOLVE-BLOCK-END


def run(signal):
    return smooth(signal)
