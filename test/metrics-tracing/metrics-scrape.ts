/**
 * The metrics tests' reading of a scrape: the text format prom-client serves
 * (`await registry.metrics()`), parsed line by line into series and values,
 * so the tests check exactly what Prometheus would read.
 */
import type { Registry } from 'prom-client';

/** Every sample of the scrape, `name{labels}` → value, labels as written (prom-client sorts none, so in label order). */
export async function scrape(registry: Registry): Promise<Map<string, number>> {
  const samples = new Map<string, number>();
  for (const line of (await registry.metrics()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

/** The samples whose name is `name` exactly (not its _bucket / _sum / _count), by their label text. */
export function series(samples: Map<string, number>, name: string): Record<string, number> {
  const found: Record<string, number> = {};
  for (const [key, value] of samples) {
    const brace = key.indexOf('{');
    if ((brace === -1 ? key : key.slice(0, brace)) === name) found[brace === -1 ? '' : key.slice(brace)] = value;
  }
  return found;
}
