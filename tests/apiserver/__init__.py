"""A Kubernetes API server for tests (real HTTP, real wire format); see server.py."""
