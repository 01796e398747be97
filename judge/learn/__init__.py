"""The loop that makes the judge better: calibration on operator labels, and the metrics."""
