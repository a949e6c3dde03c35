/**
 * Imports a handler module in a pool thread, TypeScript included. A loader
 * given to the app's process (`node --import tsx app.ts`) is not always in
 * force in worker threads: tsx registers its hooks in the main thread only on
 * Node 20. So when a `.ts` module will not load for want of a loader, the
 * thread registers tsx itself — the copy the handler module's own package
 * resolves — and imports it again.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const TYPESCRIPT = /\.[cm]?ts$/;
let tsxRegistered = false;

export async function importHandlerModule(moduleUrl: string): Promise<Record<string, unknown>> {
  const typescript = TYPESCRIPT.test(new URL(moduleUrl).pathname);
  if (typescript && tsxRegistered) return (await import(underTsx(moduleUrl))) as Record<string, unknown>;
  try {
    return (await import(moduleUrl)) as Record<string, unknown>;
  } catch (error) {
    if (!typescript || (error as NodeJS.ErrnoException).code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw error;
    await registerTsx(moduleUrl);
    return (await import(underTsx(moduleUrl))) as Record<string, unknown>;
  }
}

/** Another URL for the same file: the thread's loader keeps the failed import of the first one. */
function underTsx(moduleUrl: string): string {
  const url = new URL(moduleUrl);
  url.searchParams.set('leasehold-tsx', '1');
  return url.href;
}

/** tsx's ESM API, as its package exports it to `import` (its `require` build cannot register ESM hooks from here). */
interface TsxPackage {
  exports: { './esm/api': { import: { default: string } } };
}

async function registerTsx(moduleUrl: string): Promise<void> {
  let manifest: string;
  try {
    manifest = createRequire(moduleUrl).resolve('tsx/package.json');
  } catch {
    throw new Error(`${moduleUrl} is TypeScript: install tsx beside it (\`npm install --save-dev tsx\`) and run the app under it (\`node --import tsx app.ts\`)`);
  }
  const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as TsxPackage;
  const api = new URL(exports['./esm/api'].import.default, pathToFileURL(manifest));
  const { register } = (await import(api.href)) as { register: () => unknown };
  register();
  tsxRegistered = true;
}
