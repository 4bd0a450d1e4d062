"""Doctor: the one-command overview, assembled from every engine's report."""

from kubegpu.doctor.report import DoctorReport, doctor_report

__all__ = ["DoctorReport", "doctor_report"]
