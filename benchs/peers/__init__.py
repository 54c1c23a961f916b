"""Helpers of benchs/compare_peers.py: the peer adapters (systems), timing, recall,
ground truth and floors (measure), and the markdown / plot output (report)."""
