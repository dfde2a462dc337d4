import type { ImageContentType } from '@estate/contracts/media';
import type sharp from 'sharp';
import type { OutputInfo, Sharp } from 'sharp';
import { LARGE_MAX_SIDE, renditionPlan, THUMB_MAX_SIDE, type RenditionSpec } from '../image.rules';

/** Everything {@link makeRenditions} needs besides the upload, as plain data that can cross to a render thread. */
export interface RenditionRecipe {
  /** The files to make, the full-size copy first (the product's rendition set, {@link renditionPlan}). */
  files: RenditionSpec[];
  largeMaxSide: number;
  thumbMaxSide: number;
  maxPixels: number;
  timeoutSeconds: number;
}

export function renditionRecipe(
  contentType: ImageContentType,
  limits: { maxPixels: number; timeoutSeconds: number },
): RenditionRecipe {
  return {
    files: renditionPlan(contentType),
    largeMaxSide: LARGE_MAX_SIDE,
    thumbMaxSide: THUMB_MAX_SIDE,
    maxPixels: limits.maxPixels,
    timeoutSeconds: limits.timeoutSeconds,
  };
}

/** Receives one file as sharp encodes it; resolves once the file is encoded whole, and may reject to stop. */
export type EncodedFile = (spec: RenditionSpec, encoded: Sharp) => Promise<void>;

/**
 * Makes every file of `recipe` from one upload: EXIF orientation applied, in sRGB, aspect kept, never upscaled;
 * a JPEG's transparent pixels become white. Outputs carry no metadata (sharp writes none unless asked), so GPS and
 * camera data stay in the private source.
 *
 * The upload is decoded once into pixels and every file is encoded from those pixels (the smaller sizes from
 * `large`'s), one at a time: sharp's `clone()` would decode the upload again per file, which measured 20% more CPU
 * and more memory. Every libvips pipeline is bounded in time (`timeoutSeconds`).
 *
 * This function uses nothing but its parameters (sharp itself is one): a render thread runs its source text
 * (render-thread.ts), and the product's renditions made in this thread ({@link renderImage}) run the same code.
 */
export async function makeRenditions(
  sharpLib: typeof sharp,
  input: Buffer,
  recipe: RenditionRecipe,
  output: EncodedFile,
): Promise<{ width: number; height: number }> {
  const vips = (...args: Parameters<typeof sharp>) => sharpLib(...args).timeout({ seconds: recipe.timeoutSeconds });
  const pixels = (image: { data: Buffer; info: OutputInfo }) =>
    vips(image.data, { raw: { width: image.info.width, height: image.info.height, channels: image.info.channels } });
  const encode = (spec: RenditionSpec, image: Sharp): Sharp =>
    spec.format === 'png'
      ? image.png()
      : spec.format === 'jpeg'
        ? image.flatten({ background: '#ffffff' }).jpeg({ quality: spec.quality })
        : image.webp({ quality: spec.quality });
  const inside = { fit: 'inside', withoutEnlargement: true } as const;
  const [original, ...smaller] = recipe.files;
  const decoded = await vips(input, { limitInputPixels: recipe.maxPixels, failOn: 'error' })
    .rotate()
    .toColourspace('srgb')
    .raw({ depth: 'uchar' })
    .toBuffer({ resolveWithObject: true });
  await output(original, encode(original, pixels(decoded)));
  // Each smaller size is made from the one before: resizing the full size once, not twice.
  const large = await pixels(decoded)
    .resize(recipe.largeMaxSide, recipe.largeMaxSide, inside)
    .raw()
    .toBuffer({ resolveWithObject: true });
  const thumb = await pixels(large)
    .resize(recipe.thumbMaxSide, recipe.thumbMaxSide, inside)
    .raw()
    .toBuffer({ resolveWithObject: true });
  for (const spec of smaller) await output(spec, encode(spec, pixels(spec.rendition === 'large' ? large : thumb)));
  return { width: decoded.info.width, height: decoded.info.height };
}
