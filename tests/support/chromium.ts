import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext } from 'playwright-core'

/** Debian's Chromium (scripts/lib.sh `ensure_chromium` installs it). */
const CHROMIUM = '/usr/bin/chromium'

/**
 * Debian's headless Chromium on a throwaway profile, with nothing of its own reaching the network
 * (no sync, updates, translation or QUIC). `args` add to the switches (say, host resolver rules);
 * `close` closes it and removes the profile.
 */
export async function launchChromium({ viewport, args = [] }: { viewport?: { width: number; height: number }; args?: string[] } = {}): Promise<{
  context: BrowserContext
  close: () => Promise<void>
}> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: scripts/test installs it (apt-get install chromium)`)
  const profile = mkdtempSync(join(tmpdir(), 'gpuhq-chromium-'))
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    timeout: 60_000,
    ...(viewport ? { viewport } : {}),
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...args,
    ],
  })
  return {
    context,
    close: async () => {
      await context.close().catch(() => {})
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
