"""The doctor's money section in words (CLI table and HTML report alike), from its plain JSON form."""

from __future__ import annotations

from kubegpu.money.amount import Money, money_text


def _money(m: dict | None) -> str:
    return money_text(Money(**m) if m else None)


def money_lines(m: dict) -> list[str]:
    """The money section: what the stranded GPUs cost, the fix to do first, wait and risk costs, and
    where the price came from (each line starts with two spaces and a label column)."""
    p, s = m["prices"], m.get("stranded")
    out = []
    if s:
        if s["per_day"]:
            pools = ", ".join(f"{r['pool'] or '-'} {_money(r['per_day'])}" for r in m["pools"] if r["stranded_gpus"])
            out.append(f"  stranded GPUs cost   {_money(s['per_day'])} ({_money(s['per_hour'])}, {s['stranded_gpus']:g} "
                       f"GPUs idle and unusable) if nothing changes" + (f"; {pools}" if pools else ""))
        else:
            out.append(f"  stranded GPUs        {s['gpu_hours_per_day']:g} GPU-hours/day idle and unusable")
    for i, f in enumerate(m["fix_first"][:3]):
        saves = _money(f["saves_per_day"]) if f["saves_per_day"] else f"{f['saves_gpu_hours_per_day']:g} GPU-hours/day"
        once = _money(f["one_off"]) if f["one_off"] else f"{f['one_off_gpu_hours']:g} GPU-hours"
        label = "fix first" if i == 0 else "then"
        out.append(f"  {label:<20} {f['summary']}: saves {saves} for {once} once"
                   + (f" (pays back in {f['payback_hours']:g} h)" if f["payback_hours"] is not None else "")
                   + (f"; {f['command']}" if f.get("command") else ""))
    waits = [w for w in m["pending"] if w["waited_seconds"]]
    if waits:
        w = max(waits, key=lambda w: w["delay_gpu_hours"])
        total = sum(x["delay_gpu_hours"] for x in waits)
        out.append(f"  pending GPU pods     waited {round(total, 1):,g} GPU-hours in all; most: {w['pod']} "
                   f"{round(w['waited_seconds'] / 3600, 1):g} h "
                   f"({_money(w['delay_cost']) if w['delay_cost'] else 'unpriced'})")
    at_risk = [f for f in m["findings"] if f["id"] == "KG-403"]
    risk = sum(f["gpu_hours"] for f in at_risk)
    if risk:
        priced = [f["cost"] for f in at_risk if f["cost"]]
        money = (f" = {_money({**priced[0], 'amount': sum(c['amount'] for c in priced)})}"
                 if priced and len(priced) == len(at_risk) else "")
        out.append(f"  at risk              {round(risk, 1):,g} GPU-hours{money} of work that a preemption would throw "
                   f"away (training without checkpoints, pitfall 4)")
    out.append(f"  price                {p['note']}" + (f": {'; '.join(p['sources'])}" if p["sources"] else ""))
    return out
