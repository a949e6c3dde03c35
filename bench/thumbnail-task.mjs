// The "pool-images" suite's work, for both pools: read a PNG, shrink it to THUMB_SIDE wide with jimp, encode it
// again; the thumbnail's byte count comes back. A WorkerPool handler (`thumbnail`) and piscina's task (default).
import { readFile } from 'node:fs/promises';
import { Jimp } from 'jimp';

const THUMB_SIDE = 160;

async function thumbnail(path) {
  const image = await Jimp.read(await readFile(path));
  image.resize({ w: THUMB_SIDE });
  return (await image.getBuffer('image/png')).length;
}

export { thumbnail };
export default thumbnail;
