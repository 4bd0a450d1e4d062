"""GPU sharing advice: which pods could share GPUs, the NVIDIA device plugin configuration that
would do it, and the effect predicted by replaying the cluster's own pods with the placement model."""
