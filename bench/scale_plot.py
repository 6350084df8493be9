#!/usr/bin/env python3
"""Draws tessera_scale's results (bench/scale.sh) as an SVG: jobs created, pods started and jobs
completed per second; the server's CPU (% of one core) and RSS (MB); the scheduling cycle's mean
(ms). Usage: scale_plot.py RESULTS.json OUT.svg"""
import json
import sys

W, H, PAD = 900, 220, 50
PANELS = [
    ("per second", [("created", "#888"), ("started", "#1f77b4"), ("completed", "#2ca02c")]),
    ("server", [("server_cpu_pct", "#d62728"), ("server_rss_mb", "#9467bd")]),
    ("cycle ms (mean)", [("cycle_ms_mean", "#ff7f0e")]),
]


def panel(rows, title, series, top):
    t_max = max((r["t"] for r in rows), default=1) or 1
    y_max = max((r.get(k, 0) for r in rows for k, _ in series), default=1) or 1
    out = [f'<g transform="translate(0,{top})">',
           f'<rect x="{PAD}" y="10" width="{W - 2 * PAD}" height="{H - 40}" fill="none" stroke="#ccc"/>',
           f'<text x="{PAD}" y="8" font-size="12">{title} (max {y_max:.4g})</text>']
    for i, (key, color) in enumerate(series):
        pts = []
        for r in rows:
            if key not in r:
                continue
            x = PAD + (W - 2 * PAD) * r["t"] / t_max
            y = 10 + (H - 40) * (1 - r[key] / y_max)
            pts.append(f"{x:.1f},{y:.1f}")
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(pts)}"/>')
        out.append(f'<text x="{W - PAD - 150}" y="{28 + 14 * i}" font-size="11" fill="{color}">{key}</text>')
    out.append(f'<text x="{W - PAD}" y="{H - 15}" font-size="11" text-anchor="end">{t_max} s</text>')
    out.append("</g>")
    return out


def main():
    data = json.load(open(sys.argv[1]))
    rows = data["timeline"]
    s = data["summary"]
    lat = s["start_latency_ms"]
    head = (f'{data["options"]["nodes"]} nodes, {s["jobs_completed"]} jobs: '
            f'{s["jobs_completed_per_s"]:.0f} jobs/s completed, creation to start p50 {lat["p50"]} ms, '
            f'p99 {lat["p99"]} ms, max {lat["max"]} ms')
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H * len(PANELS) + 30}" '
           'font-family="sans-serif">', f'<text x="{PAD}" y="18" font-size="13">{head}</text>']
    for i, (title, series) in enumerate(PANELS):
        svg += panel(rows, title, series, 30 + i * H)
    svg.append("</svg>")
    open(sys.argv[2], "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
