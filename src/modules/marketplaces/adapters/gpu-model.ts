/** Words that name a vendor or a brand line rather than the model. */
const VENDOR_WORDS = new Set(['nvidia', 'geforce', 'amd', 'radeon', 'intel', 'tesla'])

/**
 * The model key of a GPU name (`remote.gpu_model`, the market summary's key), the same rule for
 * both marketplaces: lowercase; split on whitespace and underscores; drop the vendor and brand
 * words (nvidia, geforce, amd, radeon, intel, tesla); join what is left with '_'; at most 128
 * characters; null when nothing is left. "RTX 4090" → "rtx_4090", "GeForce GTX 1080 Ti" →
 * "gtx_1080_ti", "Tesla V100" → "v100". (marketplace-a.mapping.ts holds the same rule.)
 */
export function normaliseGpuModel(name: string | null): string | null {
  if (name === null) return null
  const words = name
    .toLowerCase()
    .split(/[\s_]+/)
    .filter((w) => w !== '' && !VENDOR_WORDS.has(w))
  return words.length === 0 ? null : words.join('_').slice(0, 128)
}
