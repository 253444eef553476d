"""Spark deployments started on localhost from the pyspark distribution, for trying the cluster
and Spark Connect code paths on one machine (tests and benchmarks use them too)."""
