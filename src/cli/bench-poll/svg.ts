/**
 * A plain line chart as an SVG document: threads along x, jobs per second
 * along y (from 0), one line per series with its points marked, a legend,
 * and the conditions as a caption. No scripts, no external references.
 */

export interface ChartSeries {
  name: string;
  /** [threads, jobs per second] points, in threads order. */
  points: readonly (readonly [number, number])[];
}

const WIDTH = 840;
const HEIGHT = 420;
const MARGIN = { left: 80, right: 280, top: 40, bottom: 70 };
const COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf'];

export function lineChart(title: string, caption: string, series: readonly ChartSeries[]): string {
  const xs = series.flatMap((s) => s.points.map(([x]) => x));
  const ys = series.flatMap((s) => s.points.map(([, y]) => y));
  const xMin = Math.min(...xs, 1);
  const xMax = Math.max(...xs, xMin + 1);
  const yMax = niceCeiling(Math.max(...ys, 1));
  const plotW = WIDTH - MARGIN.left - MARGIN.right;
  const plotH = HEIGHT - MARGIN.top - MARGIN.bottom;
  const px = (x: number) => MARGIN.left + ((x - xMin) / (xMax - xMin)) * plotW;
  const py = (y: number) => MARGIN.top + plotH - (y / yMax) * plotH;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}" viewBox="0 0 ${WIDTH} ${HEIGHT}" font-family="sans-serif" font-size="12">`);
  parts.push(`<title>${escape(title)}</title>`);
  parts.push(`<rect width="${WIDTH}" height="${HEIGHT}" fill="white"/>`);
  parts.push(`<text x="${MARGIN.left}" y="24" font-size="15" font-weight="bold">${escape(title)}</text>`);
  // Axes and grid: five y ticks from 0 to the rounded maximum, one x tick per thread count.
  for (let i = 0; i <= 5; i++) {
    const y = (yMax * i) / 5;
    parts.push(`<line x1="${MARGIN.left}" y1="${f(py(y))}" x2="${MARGIN.left + plotW}" y2="${f(py(y))}" stroke="#ddd"/>`);
    parts.push(`<text x="${MARGIN.left - 8}" y="${f(py(y) + 4)}" text-anchor="end">${formatCount(y)}</text>`);
  }
  for (const x of [...new Set(xs)].sort((a, b) => a - b)) {
    parts.push(`<text x="${f(px(x))}" y="${MARGIN.top + plotH + 18}" text-anchor="middle">${x}</text>`);
  }
  parts.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top + plotH}" x2="${MARGIN.left + plotW}" y2="${MARGIN.top + plotH}" stroke="black"/>`);
  parts.push(`<line x1="${MARGIN.left}" y1="${MARGIN.top}" x2="${MARGIN.left}" y2="${MARGIN.top + plotH}" stroke="black"/>`);
  parts.push(`<text x="${MARGIN.left + plotW / 2}" y="${MARGIN.top + plotH + 38}" text-anchor="middle">threads</text>`);
  parts.push(`<text transform="translate(18 ${MARGIN.top + plotH / 2}) rotate(-90)" text-anchor="middle">jobs per second</text>`);
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const points = s.points.map(([x, y]) => `${f(px(x))},${f(py(y))}`).join(' ');
    parts.push(`<polyline fill="none" stroke="${colour}" stroke-width="2" points="${points}"><title>${escape(s.name)}</title></polyline>`);
    for (const [x, y] of s.points) parts.push(`<circle cx="${f(px(x))}" cy="${f(py(y))}" r="3" fill="${colour}"/>`);
    const ly = MARGIN.top + 10 + i * 20;
    parts.push(`<line x1="${WIDTH - MARGIN.right + 16}" y1="${ly}" x2="${WIDTH - MARGIN.right + 40}" y2="${ly}" stroke="${colour}" stroke-width="2"/>`);
    parts.push(`<text x="${WIDTH - MARGIN.right + 46}" y="${ly + 4}">${escape(s.name)}</text>`);
  });
  parts.push(`<text x="${MARGIN.left}" y="${HEIGHT - 12}" font-size="10" fill="#555">${escape(caption)}</text>`);
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** 1, 2 or 5 times a power of ten, at or above `v`: the y axis ends there. */
function niceCeiling(v: number): number {
  const power = 10 ** Math.floor(Math.log10(v));
  for (const step of [1, 2, 5, 10]) if (step * power >= v) return step * power;
  return 10 * power;
}

function formatCount(v: number): string {
  if (v >= 1e6) return `${Number((v / 1e6).toFixed(2))}M`;
  if (v >= 1e3) return `${Number((v / 1e3).toFixed(1))}k`;
  return String(Number(v.toFixed(1)));
}

const f = (n: number) => n.toFixed(1);

function escape(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');
}
