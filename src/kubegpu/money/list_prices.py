"""Built-in on-demand list prices of common 8-GPU instance types, each with its public source and date.

Used only when the user gives no prices (`--prices`), and always labelled as list prices: real
bills differ (discounts, commitments, regions). Figures from the project's cost anchors
(reference cost-facts §3.1); prices move, so re-quote before publishing a claim.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ListPrice:
    instance_type: str
    gpus: int
    per_hour: float
    currency: str
    source: str          # who published the figure, and when it was read


LIST_PRICES: tuple[ListPrice, ...] = (
    ListPrice("p4d.24xlarge", 8, 21.96, "USD", "AWS on-demand us-east-1, AWS price list via datareceipts, 2026-11-09"),
    ListPrice("p4de.24xlarge", 8, 27.45, "USD", "AWS on-demand us-east-1, AWS price list via datareceipts, 2026-11-09"),
    ListPrice("p5.48xlarge", 8, 55.04, "USD", "AWS on-demand us-east-1, AWS price list via datareceipts, 2026-11-09"),
    ListPrice("p5en.48xlarge", 8, 63.296, "USD", "AWS on-demand us-east-1, dstack offer output (dstack PR #4110), "
              "2026-08-06"),
    ListPrice("a2-highgpu-8g", 8, 29.387, "USD", "GCP on-demand us-central1, Cyclenerd google-cloud-pricing-cost-"
              "calculator pricing.yml commit 0166a59e"),
    ListPrice("a2-megagpu-16g", 16, 55.74, "USD", "GCP on-demand us-central1, Cyclenerd google-cloud-pricing-cost-"
              "calculator pricing.yml commit 0166a59e"),
    ListPrice("Standard_ND96asr_v4", 8, 27.1968, "USD", "Azure East US, 8 x $3.3996/GPU-h, datareceipts compare.json, "
              "2026-11-09"),
    ListPrice("Standard_ND96isr_H100_v5", 8, 98.32, "USD", "Azure, 8 x $12.29/GPU-h, datareceipts README, 2026-11-09"),
)


def list_price(instance_type: str) -> ListPrice | None:
    """The built-in list price of an instance type, if we carry one."""
    for p in LIST_PRICES:
        if p.instance_type == instance_type:
            return p
    return None
