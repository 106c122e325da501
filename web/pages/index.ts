import type { JSX } from 'preact'
import { Fleet } from './fleet'

/** The signed-in pages by route (lib/router.ts `match`): the first pattern that fits wins. */
// biome-ignore lint/suspicious/noExplicitAny: each page takes its own route parameters
export const ROUTES: [string, (params: any) => JSX.Element][] = [['/', Fleet]]
