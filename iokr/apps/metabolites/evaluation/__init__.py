"""Evaluation on candidate lists: ranks of the true structures and top-k tables."""
