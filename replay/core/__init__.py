"""The pure core: rules over data (grading, the gate, flips, drift, page diffs, costs, cache breakpoints),
with no file, network, clock or terminal."""
