/**
 * Marks, in the built declarations (dist/**\/*.d.ts), every reference to an
 * optional peer dependency with `// @ts-ignore`, so that an app compiled with
 * `skipLibCheck: false` that installed none of them (no better-sqlite3, no
 * ioredis, no prom-client...) still compiles: TypeScript resolves every
 * import of a declaration file it reads, used or not. Where the peer is
 * installed the mark does nothing and its types are the real ones; where it is
 * not, the types that name it are `any`, in code that cannot run without it.
 *
 * The peers are package.json's optional peerDependencies. A line inserted in
 * a .d.ts is inserted, empty, in its declaration map too, so that
 * go-to-definition still lands on the source.
 */
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const peers = Object.entries(pkg.peerDependenciesMeta ?? {}).filter(([, meta]) => meta.optional).map(([name]) => name);
const MARK = '// @ts-ignore -- an optional peer dependency: its types are `any` where it is not installed';

/** Whether `line` names `peer` (or a path inside it) as a module: `from 'peer'`, `import('peer/sub')`. */
const namesPeer = (line) => peers.some((peer) => line.includes(`'${peer}'`) || line.includes(`'${peer}/`));

function* declarations(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* declarations(path);
    else if (entry.name.endsWith('.d.ts')) yield path;
  }
}

for (const file of declarations(join(root, 'dist'))) {
  const lines = readFileSync(file, 'utf8').split('\n');
  const inserted = []; // the output line numbers of the marks
  const out = [];
  for (const line of lines) {
    if (namesPeer(line) && !/^\s*(\*|\/\/|\/\*)/.test(line) && out.at(-1) !== MARK) {
      inserted.push(out.length);
      out.push(MARK);
    }
    out.push(line);
  }
  if (inserted.length === 0) continue;
  writeFileSync(file, out.join('\n'));
  const mapFile = `${file}.map`;
  if (!existsSync(mapFile)) continue;
  const map = JSON.parse(readFileSync(mapFile, 'utf8'));
  // An empty group is a generated line with no segment; source positions are deltas across segments, so none move.
  const groups = map.mappings.split(';');
  for (const at of inserted) groups.splice(at, 0, '');
  map.mappings = groups.join(';');
  writeFileSync(mapFile, JSON.stringify(map));
}
