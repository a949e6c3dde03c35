/** The size of the demo's thumbnails (jimp does the resizing, on the pool threads). */

/** The largest size of `width × height` that fits in `maxSide × maxSide`, keeping the aspect ratio (never upscales). */
export function fitWithin(width: number, height: number, maxSide: number): { width: number; height: number } {
  const scale = Math.min(1, maxSide / Math.max(width, height));
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}
