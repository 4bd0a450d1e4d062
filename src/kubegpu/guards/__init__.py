"""Guards for reading untrusted input: bounded reads (size, time, FIFOs) and the one safe YAML loader.

They sit below every edge (files, the API, HTTP bodies, scenario files), so engines use them without importing
an edge such as `sources`.
"""
