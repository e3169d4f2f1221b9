"""The running operator: API access, the scheduling and binding loops, reporting, leadership."""
