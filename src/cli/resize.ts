/**
 * Downsizing RGBA pixels for the demo's thumbnails: a box filter (area
 * average) written out by hand, so the pool threads have real CPU work.
 */

/** The largest size of `width × height` that fits in `maxSide × maxSide`, keeping the aspect ratio (never upscales). */
export function fitWithin(width: number, height: number, maxSide: number): { width: number; height: number } {
  const scale = Math.min(1, maxSide / Math.max(width, height));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/**
 * Resizes 8-bit RGBA pixels from `sw × sh` to `dw × dh`: each target pixel is
 * the mean of the source pixels whose centres fall in its box. For shrinking;
 * when enlarging, every box still holds at least one source pixel.
 */
export function resizeBox(src: Uint8Array, sw: number, sh: number, dw: number, dh: number): Uint8Array {
  if (src.length !== sw * sh * 4) {
    throw new RangeError(`Expected ${sw}×${sh}×4 = ${sw * sh * 4} bytes of RGBA, got ${src.length}`);
  }
  const dst = new Uint8Array(dw * dh * 4);
  const xs = boxEdges(sw, dw);
  const ys = boxEdges(sh, dh);
  for (let dy = 0; dy < dh; dy++) {
    const y0 = ys[dy]!;
    const y1 = ys[dy + 1]!;
    for (let dx = 0; dx < dw; dx++) {
      const x0 = xs[dx]!;
      const x1 = xs[dx + 1]!;
      let r = 0, g = 0, b = 0, a = 0;
      for (let y = y0; y < y1; y++) {
        let at = (y * sw + x0) * 4;
        for (let x = x0; x < x1; x++, at += 4) {
          r += src[at]!;
          g += src[at + 1]!;
          b += src[at + 2]!;
          a += src[at + 3]!;
        }
      }
      const n = (x1 - x0) * (y1 - y0);
      const out = (dy * dw + dx) * 4;
      dst[out] = Math.round(r / n);
      dst[out + 1] = Math.round(g / n);
      dst[out + 2] = Math.round(b / n);
      dst[out + 3] = Math.round(a / n);
    }
  }
  return dst;
}

/** Source index where each of `to` boxes begins, plus the end: `to + 1` increasing edges, no box empty. */
function boxEdges(from: number, to: number): Int32Array {
  const edges = new Int32Array(to + 1);
  for (let i = 0; i <= to; i++) edges[i] = Math.floor((i * from) / to);
  for (let i = 1; i <= to; i++) {
    if (edges[i]! <= edges[i - 1]!) edges[i] = Math.min(from, edges[i - 1]! + 1);
  }
  edges[to] = from;
  return edges;
}
