/**
 * Debian's chromium (scripts/browser-up.sh installs it) driven by playwright-core, which
 * downloads no browser of its own. A missing chromium is a failure that says how to get it, never
 * a skip. Each launch gets a fresh profile folder, removed on close; the browser reaches no
 * network beyond what the page asks (a report asks for nothing).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run ./scripts/browser-up.sh (make test does) to install Debian's chromium`);
  const profile = mkdtempSync(path.join(os.tmpdir(), 'berth-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      headless: true,
      viewport: { width: 1280, height: 900 },
    });
    return {
      context,
      close: async () => {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (err) {
    rmSync(profile, { recursive: true, force: true });
    throw err;
  }
}

/** The folder a test writes what a person may want to look at (screenshots): test-output/<name>/. */
export function testOutputDir(name: string): string {
  return path.join(__dirname, '..', '..', 'test-output', name);
}
