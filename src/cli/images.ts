/**
 * The demo's source images (made on the main thread) and the check of the
 * thumbnails the pool threads wrote.
 */
import { readFileSync } from 'node:fs';
import { Jimp, PNGFilterType } from 'jimp';
import { prng } from './random.js';

/**
 * A `size × size` RGBA PNG, different for every seed: interfering waves over a
 * diagonal gradient, with a few discs. Smooth, so it compresses well on disk
 * while still being a full-size image to decode.
 */
export async function renderSource(size: number, seed: number): Promise<Buffer> {
  const random = prng(seed);
  const data = Buffer.alloc(size * size * 4);
  const waves = Array.from({ length: 3 }, () => ({
    fx: (random() - 0.5) * 0.1, fy: (random() - 0.5) * 0.1, phase: random() * Math.PI * 2,
  }));
  // sin(x·fx + y·fy + φ) = sin(x·fx)·cos(y·fy + φ) + cos(x·fx)·sin(y·fy + φ): one table per axis and channel.
  const sinX = waves.map((w) => Float64Array.from({ length: size }, (_, x) => 63 * Math.sin(x * w.fx)));
  const cosX = waves.map((w) => Float64Array.from({ length: size }, (_, x) => 63 * Math.cos(x * w.fx)));
  for (let y = 0; y < size; y++) {
    for (let c = 0; c < 3; c++) {
      const cosY = Math.cos(y * waves[c]!.fy + waves[c]!.phase);
      const sinY = Math.sin(y * waves[c]!.fy + waves[c]!.phase);
      const sx = sinX[c]!;
      const cx = cosX[c]!;
      for (let x = 0, at = y * size * 4 + c; x < size; x++, at += 4) {
        data[at] = (((x + y) / (2 * size)) * 127 + 64 + sx[x]! * cosY + cx[x]! * sinY) & 0xf8; // posterized: smaller files
      }
    }
    for (let x = 0, at = y * size * 4 + 3; x < size; x++, at += 4) data[at] = 255;
  }
  for (let n = 0; n < 4; n++) {
    const cx = random() * size;
    const cy = random() * size;
    const r = size * (0.05 + random() * 0.15);
    const rgb = [random() * 255, random() * 255, random() * 255];
    for (let y = Math.max(0, Math.ceil(cy - r)); y < Math.min(size, cy + r); y++) {
      for (let x = Math.max(0, Math.ceil(cx - r)); x < Math.min(size, cx + r); x++) {
        if ((x - cx) ** 2 + (y - cy) ** 2 >= r * r) continue;
        const at = (y * size + x) * 4;
        data[at] = rgb[0]!;
        data[at + 1] = rgb[1]!;
        data[at + 2] = rgb[2]!;
      }
    }
  }
  // One filter (Paeth, which jimp spells PATH) rather than trying all five per row: encoding is the main thread's cost.
  return Jimp.fromBitmap({ width: size, height: size, data }).getBuffer('image/png', { deflateLevel: 1, filterType: PNGFilterType.PATH });
}

/** A poison job's source: the PNG cut short inside its image data, so no decoder can read it. */
export function corrupt(png: Buffer): Buffer {
  return png.subarray(0, Math.max(64, Math.floor(png.length / 2)));
}

/** What is wrong with the PNG at `path` — missing, unreadable or of another size — or null if it is a valid `width × height` PNG. */
export async function inspectPng(path: string, width: number, height: number): Promise<string | null> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    return `its thumbnail ${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`;
  }
  try {
    const png = await Jimp.read(bytes);
    if (png.width !== width || png.height !== height) {
      return `its thumbnail ${path} is ${png.width}×${png.height}, not ${width}×${height}`;
    }
    return null;
  } catch (error) {
    return `its thumbnail ${path} is not a valid PNG (${(error as Error).message})`;
  }
}
