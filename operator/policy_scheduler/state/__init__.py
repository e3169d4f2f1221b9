"""The operator's state: the scheduler cache and the scheduling queue."""
