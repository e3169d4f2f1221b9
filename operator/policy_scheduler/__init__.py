"""policy-scheduler: a Kubernetes pod scheduler driven by SchedulingPolicy resources."""

__version__ = "0.1.0"
